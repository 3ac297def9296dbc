"""The long job's task: a line a second for N seconds (default 120), to follow and cancel."""

from __future__ import annotations

import sys
import time


def main(argv: list[str]) -> int:
    """Print ``tick i/N`` once a second."""
    seconds = int(argv[1]) if len(argv) > 1 else 120
    for tick in range(1, seconds + 1):
        print(f"tick {tick}/{seconds}", flush=True)
        time.sleep(1)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
