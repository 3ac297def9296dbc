"""The progress job's task: a carriage-return progress bar in colour, then coloured lines."""

from __future__ import annotations

import sys
import time

GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
RED = "\x1b[31m"
BOLD = "\x1b[1m"
RESET = "\x1b[0m"
WIDTH = 30


def main() -> int:
    """Draw a bar that fills in place over about five seconds, then report in colour."""
    print(f"{BOLD}downloading demo.bin{RESET}", flush=True)
    steps = 50
    for step in range(steps + 1):
        filled = WIDTH * step // steps
        bar = f"{GREEN}{'#' * filled}{RESET}{'.' * (WIDTH - filled)}"
        sys.stdout.write(f"\r[{bar}] {100 * step // steps:3d}%")
        sys.stdout.flush()
        time.sleep(0.1)
    sys.stdout.write("\n")
    print(f"{GREEN}ok{RESET} demo.bin: 50 MiB", flush=True)
    print(f"{YELLOW}warning{RESET} checksum file missing, skipped verification", flush=True)
    print(f"{RED}error{RESET} (not really) colours come through; other escapes do not", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
