"""Time to first frame and first screenful: x-tui with many runs in its store against a bare
Textual app.

The reference is a Textual app with the same widgets (two panes, an option list, a data table with
the same columns, an input, a footer) and no data, measured in the same run. Each sample is a
fresh process in a pseudo-terminal of 120x40 (Textual's real driver, as over SSH); the time is
from just before the process is started to the ``Ready`` event (the first frame is on the
screen). For x-tui it also notes when the runs table first shows a screenful of runs. Best of N,
after one warm-up sample of each (not counted) that writes the modules' bytecode, as a user's
interpreter keeps it (``PYTHONDONTWRITEBYTECODE`` is dropped for the samples); ``--compile``
measures starts that compile every module instead (no bytecode read or kept).

The process's own CPU seconds at each marker (all its threads, ``time.process_time``) are printed
too, best and pair by pair: on a machine shared with other work, wall times vary with the load, CPU
times much less.

With a store listed before (as any earlier start or ``x-tui status`` leaves it), the first
screenful comes from the store index's head and the newest runs' kept final states (a few
kilobytes), and the rest of the store is read once it is drawn; ``listed`` says when every run is.
``--unindexed`` removes the store's index and head before each x-tui sample: the first start
after substrax (or anything but x-tui) wrote the runs, when every handle file is read once.

    uv run python bench/startup.py [--runs 100000] [--samples 5] [--state DIR] [--compile]
        [--unindexed] [--in-project]

``--in-project`` starts x-tui in a project of four jobs (none of the store's runs is the
project's): it notes when the project's jobs are listed, which the project's own reading (once the
first frame is drawn) and the reading of the rest of the store share the interpreter for; the
first screenful of runs is not waited for there (the project's filter shows none of them).

``--state DIR`` keeps the store in ``DIR`` (made there on the first run, in about a minute for
100,000 runs) and reuses it after; the run count printed, and waited for as "listed", is the
store's own.

The ratio of the two best times moves with the bare app's best, which a busy machine moves by a
fifth from one run to the next; the median of the samples' own ratios (each pair run back to back)
is printed too, and is the steadier figure.

Aims: the first frame at most 1.5x the bare app and under 0.5 s; the first screenful of runs at
most 1.3x the bare app's first frame with 100,000 runs (the default), in wall and in CPU seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bare_app import bare_app
from pty_child import COLUMNS, LINES, in_pty

SCREENFUL = 30


# The child side ---------------------------------------------------------------------------------


def _child_bare(marker: Path) -> None:
    def ready(app: Any) -> None:
        _mark(marker, "frame")
        app.exit()

    bare_app(on_ready=ready).run()


def _child_xtui(marker: Path) -> None:
    from x_tui.app import hold_garbage_until_listed

    hold_garbage_until_listed()  # first, as ``x-tui`` itself starts (``run_app``)
    from x_tui.app.app import XTuiApp
    from x_tui.app.service import Service

    listed = int(os.environ.get("BENCH_RUNS", "0"))
    project = os.environ.get("BENCH_PROJECT")

    marked: set[str] = set()

    class Timed(XTuiApp):
        def on_ready(self) -> None:
            _mark(marker, "frame")
            if project:  # the jobs come from a worker's message to the screen: looked for often
                self.set_interval(0.005, self._check_jobs)
                return
            # Checked after each of the monitor's events (the main screen shows it first) and
            # every 50 ms, not every few milliseconds: the checking would cost more than it finds.
            self.monitor_events.subscribe(self, self._check_rows)
            self.set_interval(0.05, self._check_rows)
            self._check_rows()

        def _check_jobs(self) -> None:
            if "jobs" not in marked and self.main_screen.jobs.job_names:
                marked.add("jobs")
                _mark(marker, "jobs")
                self.exit()

        def _check_rows(self, _event: Any = None) -> None:
            table = self.main_screen.runs
            if "rows" not in marked and table.row_count >= SCREENFUL:
                marked.add("rows")
                _mark(marker, "rows")
            if "listed" not in marked and table.shown_count >= listed:
                marked.add("listed")
                # Every run listed: the rest of the turn builds what the table builds for them.
                self.call_after_refresh(self._listed)

        def _listed(self) -> None:
            _mark(marker, "listed")
            self.exit()

    Timed(Path(project) if project else None, service=Service()).run()


def _mark(marker: Path, what: str) -> None:
    with marker.open("a", encoding="utf-8") as out:
        out.write(f"{what} {time.time()!r}\n")
        # All threads' CPU, to the microsecond (``os.times`` counts in 10 ms ticks).
        out.write(f"{what}-cpu {time.process_time()!r}\n")
        out.write(f"{what}-main {time.thread_time()!r}\n")  # the event loop's thread alone


# The parent side --------------------------------------------------------------------------------


def make_store(state: Path, count: int) -> None:
    """Write ``count`` finished local runs into the store under ``state`` (and their states)."""
    from x_tui.compute.store import RunHandle
    from x_tui.compute.worker.records import dumps_pretty

    runs = state / "compute" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    final: dict[str, dict[str, object]] = {}
    for index in range(count):
        moment = start + dt.timedelta(minutes=index)
        run_id = f"job{index % 7}-{moment:%Y%m%dT%H%M%SZ}-{index % 0xFFFFFF:06x}"
        handle = RunHandle(
            run_id=run_id,
            backend="local",
            job=f"job{index % 7}",
            project="/home/user/project",
            submitted_at=moment,
            settings={"python": None, "state_dir": None},
            details={"pid": "999999999", "run_dir": f"/nonexistent/{run_id}", "start_time": "1"},
        )
        (runs / f"{run_id}.json").write_text(dumps_pretty(handle), encoding="utf-8")
        state_name = ("succeeded", "failed", "cancelled")[index % 3]
        final[run_id] = {"state": state_name, "ended_at": moment.timestamp() + 60}
    cache = state / "x-tui" / "final-states.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"version": 1, "runs": final}), encoding="utf-8")


PROJECT_JOBS = ("prepare", "train", "evaluate", "export")


def make_project(root: Path) -> Path:
    """A project under ``root`` whose pyproject.toml declares :data:`PROJECT_JOBS` (local)."""
    root.mkdir(parents=True, exist_ok=True)
    jobs = "".join(
        f"""
[tool.substrax.compute.jobs.{name}]
timeout_seconds = 3600
[tool.substrax.compute.jobs.{name}.commands]
first = ["python", "-c", "print('{name} 1')"]
second = ["python", "-c", "print('{name} 2')"]
"""
        for name in PROJECT_JOBS
    )
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "0.1.0"\n\n'
        '[tool.substrax.compute]\nbackend = "local"\n' + jobs,
        encoding="utf-8",
    )
    return root


def bench_store(kept: Path | None, scratch: Path, count: int) -> tuple[Path, int]:
    """The store to measure and its run count: ``kept`` (made there with ``count`` runs the first
    time, reused as it is after), or one of ``count`` runs made in ``scratch``."""
    state = kept if kept is not None else scratch / "state"
    if kept is None or not (state / "compute" / "runs").is_dir():
        make_store(state, count)
    return state, stored_runs(state)


def stored_runs(state: Path) -> int:
    """How many run handles the store under ``state`` holds (a reused store's own count)."""
    with os.scandir(state / "compute" / "runs") as entries:
        return sum(1 for entry in entries if entry.name.endswith(".json"))


def run_in_pty(argv: list[str], env: dict[str, str], *, until: Path, wanted: int) -> float:
    """Run ``argv`` in a 120x40 pseudo-terminal until ``until`` holds ``wanted`` lines.

    Returns:
        The time the process was started at (epoch seconds).
    """
    started = time.time()
    deadline = time.monotonic() + 60
    with in_pty(argv, env) as child:
        while time.monotonic() < deadline and child.read(0.05):
            if until.exists() and len(until.read_text().splitlines()) >= wanted:
                break
    return started


def sample(
    kind: str,
    state: Path,
    scratch: Path,
    runs: int,
    *,
    compile_each_time: bool = False,
    unindexed: bool = False,
    project: Path | None = None,
) -> dict[str, float]:
    """One fresh process of ``kind`` (``bare`` or ``x-tui``): seconds to each marker.

    With ``unindexed``, the store's index and its head are removed first (x-tui's sample). With
    ``project``, x-tui starts in it, and its markers are the first frame and the jobs listed.
    """
    if unindexed and kind == "x-tui":
        # (imported here: the children import this file, and the bare app must not load x-tui)
        from x_tui.compute.store_index import HEAD_NAME, INDEX_NAME

        for name in (INDEX_NAME, HEAD_NAME):
            (state / "x-tui" / name).unlink(missing_ok=True)
    marker = scratch / f"{kind}-{time.monotonic_ns()}.marks"
    env = dict(os.environ)
    if compile_each_time:  # no bytecode read or written: every module compiled at each start
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(scratch / "no-bytecode"))
    else:  # a user's interpreter keeps the bytecode it compiled (the warm-up sample writes it)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        SUBSTRAX_STATE_DIR=str(state),
        X_TUI_CONFIG=str(scratch / "no-settings.toml"),
        TERM="xterm-256color",
        COLUMNS=str(COLUMNS),
        LINES=str(LINES),
    )
    argv = [sys.executable, __file__, "--child", kind, "--marker", str(marker)]
    env["BENCH_RUNS"] = str(runs)
    wanted = 3  # three lines a marker: its time, the CPU's, the event loop's
    if kind == "x-tui":
        wanted = 6 if project is not None else 9
        if project is not None:
            env["BENCH_PROJECT"] = str(project)
    started = run_in_pty(argv, env, until=marker, wanted=wanted)
    marks: dict[str, float] = {}
    for line in marker.read_text().splitlines() if marker.exists() else []:
        name, moment = line.split()
        marks[name] = float(moment) - (0.0 if name.endswith(("-cpu", "-main")) else started)
    return marks


def measure(
    state: Path,
    scratch: Path,
    runs: int,
    *,
    samples: int,
    compile_each_time: bool,
    unindexed: bool = False,
    project: Path | None = None,
) -> tuple[dict[str, float], list[float], list[float]]:
    """A warm-up sample of each app, then ``samples`` pairs run back to back.

    Returns:
        The best seconds to each marker (``"bare frame"``, ``"x-tui rows"``...), and each pair's
        x-tui first screenful (in ``project``: its jobs listed) over its bare app's first frame,
        in wall and in CPU seconds.
    """
    screenful = "x-tui jobs" if project is not None else "x-tui rows"
    options: dict[str, Any] = {
        "compile_each_time": compile_each_time,
        "unindexed": unindexed,
        "project": project,
    }
    best: dict[str, float] = {}
    paired: list[float] = []
    paired_cpu: list[float] = []
    for kind in ("bare", "x-tui"):  # warm-up, not counted: compiles and caches the bytecode
        sample(kind, state, scratch, runs, **options)
    for _ in range(samples):
        taken: dict[str, float] = {}
        for kind in ("bare", "x-tui"):
            marks = sample(kind, state, scratch, runs, **options)
            for name, seconds in marks.items():
                key = f"{kind} {name}"
                taken[key] = seconds
                best[key] = min(best.get(key, seconds), seconds)
        if "bare frame" in taken and screenful in taken:
            paired.append(taken[screenful] / taken["bare frame"])
        if taken.get("bare frame-cpu") and f"{screenful}-cpu" in taken:
            paired_cpu.append(taken[f"{screenful}-cpu"] / taken["bare frame-cpu"])
    return best, paired, paired_cpu


def main() -> int:
    """Measure both apps and print the times and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--child", choices=("bare", "x-tui"))
    parser.add_argument("--marker", type=Path)
    parser.add_argument(
        "--state", type=Path, help="where the store is kept: made there once, then reused as it is"
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="compile every module at each start (no bytecode kept, as PYTHONDONTWRITEBYTECODE)",
    )
    parser.add_argument(
        "--unindexed",
        action="store_true",
        help="remove the store's index before each x-tui start (as after substrax wrote the runs)",
    )
    parser.add_argument(
        "--in-project",
        action="store_true",
        help="start x-tui in a project of four jobs and note when they are listed",
    )
    args = parser.parse_args()
    if args.child is not None:
        (_child_bare if args.child == "bare" else _child_xtui)(args.marker)
        return 0
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        state, runs = bench_store(args.state, scratch, args.runs)
        best, paired, paired_cpu = measure(
            state,
            scratch,
            runs,
            samples=args.samples,
            compile_each_time=args.compile,
            unindexed=args.unindexed,
            project=make_project(scratch / "project") if args.in_project else None,
        )
    return report(best, paired, paired_cpu, runs=runs, args=args)


def report(
    best: dict[str, float],
    paired: list[float],
    paired_cpu: list[float],
    *,
    runs: int,
    args: argparse.Namespace,
) -> int:
    """Print what :func:`measure` found, against the aims.

    Returns:
        The exit status: 1 when a sample did not reach its first frame.
    """
    bare = best.get("bare frame")
    frame = best.get("x-tui frame")
    rows = best.get("x-tui rows")
    if bare is None or frame is None:
        print(f"a sample did not reach its first frame: {best}", file=sys.stderr)
        return 1
    indexed = "no store index (every handle file read)" if args.unindexed else "store indexed"
    where = ", x-tui in a project" if args.in_project else ""
    print(
        f"startup to first frame, {runs:,} runs in the store, {indexed}{where},"
        f" best of {args.samples}"
    )
    print(f"  bare Textual app, same widgets, no data  {bare:6.3f} s")
    print(f"  x-tui                                    {frame:6.3f} s   {frame / bare:4.2f}x")
    if rows is not None:
        label = f"x-tui, first {SCREENFUL} runs on screen"
        print(f"  {label:<40} {rows:6.3f} s   {rows / bare:4.2f}x")
    jobs, jobs_cpu = best.get("x-tui jobs"), best.get("x-tui jobs-cpu")
    if jobs is not None:
        label = f"x-tui, the project's {len(PROJECT_JOBS)} jobs listed"
        print(f"  {label:<40} {jobs:6.3f} s   {jobs / bare:4.2f}x")
    bare_cpu, rows_cpu = best.get("bare frame-cpu"), best.get("x-tui rows-cpu")
    frame_cpu = best.get("x-tui frame-cpu")
    if bare_cpu and frame_cpu:
        print(
            f"  CPU seconds (user + system, the process's own): bare {bare_cpu:.3f}, x-tui to its"
            f" frame {frame_cpu:.3f} ({frame_cpu / bare_cpu:4.2f}x)"
            + (
                f", to {SCREENFUL} runs {rows_cpu:.3f} ({rows_cpu / bare_cpu:4.2f}x)"
                if rows_cpu
                else ""
            )
            + (f", to its jobs {jobs_cpu:.3f} ({jobs_cpu / bare_cpu:4.2f}x)" if jobs_cpu else "")
        )
    listed, listed_cpu = best.get("x-tui listed"), best.get("x-tui listed-cpu")
    listed_main = best.get("x-tui listed-main")
    if listed is not None and listed_cpu is not None and listed_main is not None:
        print(
            f"  x-tui, all {runs:,} runs listed (and what is built of them): {listed:.3f} s,"
            f" {listed_cpu:.3f} CPU seconds, {listed_main:.3f} of them the event loop's"
        )
    if paired:
        what = "the jobs listed" if jobs is not None else f"first {SCREENFUL} runs"
        print(
            f"  {what} over the bare frame, sample by sample (each pair run back to"
            f" back): median {statistics.median(paired):.2f}x, from {min(paired):.2f}x to"
            f" {max(paired):.2f}x"
        )
    if paired_cpu:
        print(
            f"  the same in CPU seconds: median {statistics.median(paired_cpu):.2f}x, from"
            f" {min(paired_cpu):.2f}x to {max(paired_cpu):.2f}x"
        )
    ok = frame / bare <= 1.5 and frame < 0.5
    print(f"  aim, first frame <= 1.5x and < 0.5 s: {'met' if ok else 'NOT met'}")
    if rows is not None and not args.unindexed:  # the aim is an indexed store's
        ratios = [rows / bare] + ([rows_cpu / bare_cpu] if rows_cpu and bare_cpu else [])
        met = "met" if max(ratios) <= 1.3 else "NOT met"
        print(f"  aim, first {SCREENFUL} runs <= 1.3x the bare frame (wall and CPU): {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
