"""The flaky job's tasks: ``prepare`` and ``report`` pass, ``broken`` fails with a traceback."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def output_dir(name: str) -> Path:
    """The directory ``name`` under this task's outputs (``./outputs`` when run by hand)."""
    directory = Path(os.environ.get("AVITAI_OUTPUT_DIR", "outputs")) / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def prepare() -> int:
    """Write a small input file."""
    print("preparing inputs", flush=True)
    time.sleep(0.3)
    (output_dir("inputs") / "numbers.txt").write_text("1\n2\nthree\n", encoding="utf-8")
    print("inputs ready", flush=True)
    return 0


def broken() -> int:
    """Read numbers and trip over one that is not (a ValueError, exit 1)."""
    print("reading numbers", flush=True)
    values = ["1", "2", "three"]
    total = 0
    for value in values:
        print(f"parsing {value!r}", flush=True)
        total += int(value)
    return 0


def report() -> int:
    """Runs even though the task before it failed."""
    print("the task before this one failed; this one runs anyway", flush=True)
    return 0


def main(argv: list[str]) -> int:
    """Run the task named by the first argument."""
    tasks = {"prepare": prepare, "broken": broken, "report": report}
    return tasks[argv[1]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
