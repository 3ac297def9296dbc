"""What finding and ending a run's processes costs, against what it is measured by.

Two figures, each a ratio against a reference measured in the same run, on a process table
padded with ``--processes`` sleepers of this user (half of them carrying a run's marker):

- ``marked_processes``, the scan behind a killed worker's ``status`` and every round of
  ``cancel`` (each process's environment read through ``/proc``), against reading every
  process's ``/proc/<pid>/stat``, the least any ``ps`` does;
- ``end_strays``, what the worker (child subreaper) adds at the end of each task to end what the
  task left, against starting and waiting for the smallest task, ``python -c pass``.

    uv run python bench/run_processes.py [--processes 200] [--rounds 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from x_tui.compute.worker import run_processes


def _median_seconds(action: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _read_every_stat() -> int:
    count = 0
    for pid in run_processes.process_ids():
        if run_processes.proc_stat(pid) is not None:
            count += 1
    return count


def main() -> None:
    """Print both figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    if not run_processes.has_proc():
        print("no /proc here: nothing to measure")
        return
    marker = run_processes.new_marker("bench-20260101T000000Z-000000")
    sleepers = [
        subprocess.Popen(
            ["sleep", "600"],
            env={**os.environ, run_processes.MARKER_VARIABLE: marker} if index % 2 else None,
        )
        for index in range(args.processes)
    ]
    try:
        total = len(run_processes.process_ids())
        found = len(run_processes.marked_processes(marker))
        scan = _median_seconds(lambda: run_processes.marked_processes(marker), args.rounds)
        stat = _median_seconds(_read_every_stat, args.rounds)
        print(
            f"marked_processes over {total} processes ({found} marked): {scan * 1e3:.2f} ms; "
            f"reading every /proc/<pid>/stat: {stat * 1e3:.2f} ms; ratio {scan / stat:.2f}"
        )
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    run_processes.become_subreaper()
    strays = _median_seconds(lambda: run_processes.end_strays(keep=-1), args.rounds)
    task = _median_seconds(
        lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), max(5, args.rounds // 5)
    )
    print(
        f"end_strays per task: {strays * 1e3:.2f} ms; the smallest task (python -c pass): "
        f"{task * 1e3:.2f} ms; ratio {strays / task:.3f}"
    )


if __name__ == "__main__":
    main()
