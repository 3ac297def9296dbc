"""The store watcher's idle CPU and how soon a saved record is told: inotify against watchfiles.

Each watch (``x_tui.app.file_watch.watch`` on a fresh store, through inotify, then through
watchfiles as on a system without inotify) runs on its own thread. Its thread's CPU time over
``--seconds`` of quiet is measured, then ``--records`` handle files are saved one at a time (as
the store saves them: written beside, renamed over) and the time from each rename to the watch
telling it is taken. watchfiles is the reference, measured in the same run.

    uv run python bench/store_watch.py [--seconds 10] [--records 20]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from x_tui.app import file_watch
from x_tui.app.file_watch import Watched, watch
from x_tui.app.inotify import open_inotify


def measure(root: Path, *, seconds: float, records: int) -> tuple[float, float]:
    """The watch thread's CPU seconds while quiet, and the median latency of a save, in s."""
    for name in ("runs", "sweeps"):
        (root / name).mkdir(parents=True)
    told: queue.Queue[tuple[float, set[Path]]] = queue.Queue()

    def runs_changed(paths: Iterable[Path] | None) -> None:
        told.put((time.perf_counter(), set(paths or ())))

    watched = Watched(
        runs_dir=root / "runs",
        sweeps_dir=root / "sweeps",
        pyproject=None,
        runs_changed=runs_changed,
        sweeps_changed=lambda: None,
        project_changed=lambda: None,
    )
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=(watched, stop), daemon=True)
    thread.start()
    told.get(timeout=30)  # the first quiet read: the watch is on
    assert thread.ident is not None
    clock = time.pthread_getcpuclockid(thread.ident)
    before = time.clock_gettime(clock)
    time.sleep(seconds)
    idle_cpu = time.clock_gettime(clock) - before
    latencies = []
    for number in range(records):
        path = root / "runs" / f"run-20261201T120000Z-{number:06d}.json"
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text("{}", encoding="utf-8")
        saved = time.perf_counter()
        os.replace(temporary, path)
        while True:
            at, paths = told.get(timeout=30)
            if path in paths:
                latencies.append(at - saved)
                break
        time.sleep(0.1)
    stop.set()
    thread.join(5)
    return idle_cpu, statistics.median(latencies)


def main() -> int:
    """Measure both watches and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--records", type=int, default=20)
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        print("inotify is Linux's: nothing to compare here")
        return 0
    figures: dict[str, tuple[float, float]] = {}
    ways: dict[str, Callable[[], object]] = {"inotify": open_inotify, "watchfiles": lambda: None}
    for name, opener in ways.items():
        setattr(file_watch, "open_inotify", opener)  # noqa: B010 (as on a system without it)
        with tempfile.TemporaryDirectory() as scratch:
            figures[name] = measure(Path(scratch), seconds=args.seconds, records=args.records)
    setattr(file_watch, "open_inotify", open_inotify)  # noqa: B010
    (ino_cpu, ino_latency), (wf_cpu, wf_latency) = figures["inotify"], figures["watchfiles"]
    print(f"store watch, {args.seconds:g} s quiet, then {args.records} records saved one by one")
    print(f"  idle CPU   inotify {100 * ino_cpu / args.seconds:6.3f}% of one core")
    print(f"             watchfiles {100 * wf_cpu / args.seconds:6.3f}% (reference)")
    if wf_cpu > 0:
        print(f"             inotify / watchfiles {ino_cpu / wf_cpu:5.2f}x")
    print(f"  latency    inotify {1000 * ino_latency:6.1f} ms (median, save to told)")
    print(f"             watchfiles {1000 * wf_latency:6.1f} ms (reference)")
    print(f"             inotify / watchfiles {ino_latency / wf_latency:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
