"""``x-tui status`` on a hostile store against a clean store of the same good runs.

The hostile store is :func:`x_tui.testing.hostile_store.build_hostile_store`'s corpus (FIFOs, a
socket, links to devices, a 100 MB sparse file, JSON nested 100,000 deep, invalid encodings,
misfiled and copied handles, hostile sweep records, manifests and caches); the reference is the
same good runs with nothing else. Each store is read ``--repeat`` times by a fresh ``x-tui status``
process; the figures are the median wall time and the largest peak memory (``ru_maxrss``), and
their ratios to the reference's.

    uv run python bench/hostile_store.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from x_tui.testing.hostile_store import build_hostile_store

MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seconds = time.perf_counter() - start
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, seconds)
"""
"""Runs ``x-tui status`` from a fresh, small interpreter: a child forked from this process,
which built the corpus, would count this process's memory in its peak."""


def measure(state: Path, repeat: int) -> tuple[float, int, int]:
    """Median seconds, largest peak memory (kB) and the exit code of ``x-tui status``."""
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(state)}
    seconds: list[float] = []
    peak = 0
    code = 0
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, sys.executable, "-m", "x_tui", "status"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        exit_code, max_rss_kb, took = done.stdout.split()
        code = int(exit_code)
        peak = max(peak, int(max_rss_kb))
        seconds.append(float(took))
    return statistics.median(seconds), peak, code


def main() -> None:
    """Build both stores, read each, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="x-tui-bench-") as root:
        clean = build_hostile_store(Path(root) / "clean", hostile=False)
        hostile = build_hostile_store(Path(root) / "hostile")
        clean_s, clean_kb, clean_code = measure(clean.state, args.repeat)
        hostile_s, hostile_kb, hostile_code = measure(hostile.state, args.repeat)
    print(f"good runs: {len(clean.good)}; hostile entries beside them: {len(hostile.bad)}")
    print(f"clean store:   {clean_s:.3f} s, peak {clean_kb} kB, exit {clean_code} (reference)")
    print(f"hostile store: {hostile_s:.3f} s, peak {hostile_kb} kB, exit {hostile_code}")
    print(f"ratio: time x{hostile_s / clean_s:.2f}, peak memory x{hostile_kb / clean_kb:.2f}")


if __name__ == "__main__":
    main()
