"""The progress job's task: a tqdm-style progress bar in colour, redrawn in place, then coloured
lines.

The bar is drawn as tqdm draws it (``42%|####      | 21/50 [00:02<00:03, 10.00it/s]``), so the
worker reads the run's progress from it: the runs table shows it, with the time left, while the
run goes on.
"""

from __future__ import annotations

import sys
import time

GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
RED = "\x1b[31m"
BOLD = "\x1b[1m"
RESET = "\x1b[0m"
WIDTH = 30
STEPS = 120
STEP_SECONDS = 0.1


def clock(seconds: float) -> str:
    """``mm:ss``, as tqdm writes a time."""
    whole = int(seconds)
    return f"{whole // 60:02d}:{whole % 60:02d}"


def bar(step: int, elapsed: float) -> str:
    """The bar after ``step`` of :data:`STEPS`, ``elapsed`` seconds in."""
    filled = WIDTH * step // STEPS
    rate = step / elapsed if elapsed > 0 else 0.0
    left = (STEPS - step) / rate if rate > 0 else 0.0
    drawn = f"{GREEN}{'#' * filled}{RESET}{' ' * (WIDTH - filled)}"
    return (
        f"demo.bin: {100 * step // STEPS:3d}%|{drawn}| {step}/{STEPS}"
        f" [{clock(elapsed)}<{clock(left)}, {rate:.2f}it/s]"
    )


def main() -> int:
    """Draw a bar that fills in place over about twelve seconds, then report in colour."""
    print(f"{BOLD}downloading demo.bin{RESET}", flush=True)
    started = time.monotonic()
    for step in range(STEPS + 1):
        sys.stderr.write("\r" + bar(step, time.monotonic() - started))
        sys.stderr.flush()
        if step < STEPS:
            time.sleep(STEP_SECONDS)
    sys.stderr.write("\n")
    print(f"{GREEN}ok{RESET} demo.bin: 50 MiB", flush=True)
    print(f"{YELLOW}warning{RESET} checksum file missing, skipped verification", flush=True)
    print(f"{RED}error{RESET} (not really) colours come through; other escapes do not", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
