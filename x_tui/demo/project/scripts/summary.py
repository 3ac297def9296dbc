"""The hello job's second task: sum some numbers and save the result."""

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


def main() -> int:
    """Print a running total and write ``summary/total.txt``."""
    total = 0
    for number in range(1, 6):
        total += number
        print(f"added {number}, total {total}", flush=True)
        time.sleep(0.1)
    (output_dir("summary") / "total.txt").write_text(f"{total}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
