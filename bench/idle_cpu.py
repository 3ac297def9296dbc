"""CPU x-tui uses while 20 runs are running and printing nothing, against a bare Textual app.

Twenty real runs of the local backend (each task sleeps for an hour, printing nothing) are started
in a private state directory; x-tui is opened on their project in a 120x40 pseudo-terminal (its
real driver, as over SSH), left alone to reach its steady state (the monitor's polls back off to
one per run per 10 s), then its CPU time (user + system, its own and its waited-for children's,
from ``/proc/<pid>/stat``) is measured over a window. The reference is a bare Textual app with the
same widgets, idle in the same terminal, measured the same way in the same run. The runs are
cancelled at the end.

    uv run python bench/idle_cpu.py [--runs 20] [--warmup 20] [--seconds 30]

Aim: under 0.5% of one core (``--profile FILE`` says where the rest goes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bare_app import bare_app
from pty_child import in_pty

TICKS = os.sysconf("SC_CLK_TCK")
AIM = 0.5
"""Percent of one core the idle app should stay under."""


def _child_bare() -> None:
    bare_app().run()


def _child_xtui(project: Path, profile: Path | None, warmup: float, seconds: float) -> None:
    from x_tui.app import hold_garbage_until_listed

    hold_garbage_until_listed()  # first, as ``x-tui`` itself starts (``run_app``)
    from x_tui.app.app import XTuiApp
    from x_tui.app.service import Service

    app = XTuiApp(project, service=Service())
    if profile is not None:
        threading.Thread(
            target=_profile_or_say, args=(app, profile, warmup, seconds), daemon=True
        ).start()
    app.run()


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process, by thread name."""
    spent: dict[str, float] = {}
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        with contextlib.suppress(OSError, ProcessLookupError):
            clock = time.pthread_getcpuclockid(thread.ident)
            spent[thread.name] = spent.get(thread.name, 0.0) + time.clock_gettime(clock)
    return spent


def _profile_or_say(app: object, report: Path, warmup: float, seconds: float) -> None:
    """:func:`_profile`, or the traceback that stopped it written to ``report``."""
    try:
        _profile(app, report, warmup, seconds)
    except BaseException:
        import traceback

        report.write_text(traceback.format_exc(), encoding="utf-8")


def _profile(app: object, report: Path, warmup: float, seconds: float) -> None:
    """After ``warmup``, profile the event loop's thread and time every thread for ``seconds``."""
    import cProfile
    import io
    import pstats

    time.sleep(warmup)
    profiler = cProfile.Profile()
    call = app.call_from_thread  # type: ignore[attr-defined]
    before, process_before = _thread_cpu(), time.process_time()
    # Wrapped: Textual reads its callbacks' signatures, which built-in methods lack.
    call(lambda: profiler.enable())  # noqa: PLW0108
    time.sleep(seconds)
    call(lambda: profiler.disable())  # noqa: PLW0108
    after, process_after = _thread_cpu(), time.process_time()
    out = io.StringIO()
    out.write(f"CPU seconds per thread over {seconds:g} s\n")
    counted = 0.0
    for name, spent in sorted(after.items(), key=lambda item: before.get(item[0], 0) - item[1]):
        counted += spent - before.get(name, 0.0)
        out.write(f"  {spent - before.get(name, 0.0):8.3f}  {name}\n")
    whole = process_after - process_before
    out.write(f"  {whole - counted:8.3f}  (threads that ended meanwhile)\n")
    out.write(f"  {whole:8.3f}  the whole process\n")
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(60)
    report.write_text(out.getvalue(), encoding="utf-8")


def cpu_seconds(pid: int) -> float:
    """User and system time of ``pid`` and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command: state is field 3, so utime (14) .. cstime (17) are items 11..14 here.
    return sum(int(value) for value in fields[11:15]) / TICKS


def measure(argv: list[str], env: dict[str, str], *, warmup: float, seconds: float) -> float:
    """Run ``argv`` in a pseudo-terminal; its CPU use over ``seconds`` after ``warmup``, in %."""
    with in_pty(argv, env) as child:
        child.drain(time.monotonic() + warmup)
        before, start = cpu_seconds(child.pid), time.monotonic()
        child.drain(start + seconds)
        after, end = cpu_seconds(child.pid), time.monotonic()
    return 100.0 * (after - before) / (end - start)


def write_project(root: Path) -> Path:
    """A project whose job ``idle`` sleeps for an hour, printing nothing."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f"""\
[project]
name = "idle"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = {json.dumps(sys.executable)}

[tool.substrax.compute.jobs.idle]
timeout_seconds = 7200
commands = {{ sleep = ["python", "-c", "import time; time.sleep(3600)"] }}
""",
        encoding="utf-8",
    )
    return root


def main() -> int:
    """Start the runs, measure both apps, cancel the runs, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--child", choices=("bare", "x-tui"))
    parser.add_argument("--project", type=Path)
    parser.add_argument(
        "--profile",
        type=Path,
        help="measure x-tui only, and write where its threads spend CPU (cProfile of the "
        "event loop, CPU time per thread) to this file",
    )
    args = parser.parse_args()
    if args.child == "bare":
        _child_bare()
        return 0
    if args.child == "x-tui":
        _child_xtui(args.project, args.profile, args.warmup, args.seconds)
        return 0

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        env = dict(os.environ)
        env.update(
            SUBSTRAX_STATE_DIR=str(scratch / "state"),
            X_TUI_CONFIG=str(scratch / "no-settings.toml"),
            TERM="xterm-256color",
        )
        os.environ["SUBSTRAX_STATE_DIR"] = env["SUBSTRAX_STATE_DIR"]
        from x_tui.app.service import Service

        service = Service()
        project = service.open_project(write_project(scratch / "idle"))
        handles = [service.submit(service.plan(project, "idle")) for _ in range(args.runs)]
        try:
            me = [sys.executable, __file__, "--warmup", str(args.warmup)]
            me += ["--seconds", str(args.seconds)]
            if args.profile is not None:
                me += ["--profile", str(args.profile.resolve())]
                bare = float("nan")
            else:
                bare = measure(
                    [*me, "--child", "bare"], env, warmup=args.warmup, seconds=args.seconds
                )
            xtui = measure(
                [*me, "--child", "x-tui", "--project", str(project.root)],
                env,
                warmup=args.warmup,
                # A profiled app writes its report after its own window: leave it the time.
                seconds=args.seconds + (5.0 if args.profile is not None else 0.0),
            )
            running = sum(service.status(handle).value == "running" for handle in handles)
        finally:
            with ThreadPoolExecutor(max_workers=len(handles) or 1) as pool:
                list(pool.map(service.cancel, handles))
    print(
        f"idle CPU, {running} of {args.runs} runs running and printing nothing, "
        f"{args.seconds:g} s after {args.warmup:g} s warm-up, 120x40 pseudo-terminal"
    )
    print(f"  bare Textual app, same widgets, idle   {bare:5.2f}% of one core")
    print(f"  x-tui                                  {xtui:5.2f}% of one core")
    print(f"  x-tui / bare                           {xtui / bare:5.1f}x" if bare > 0 else "")
    print(f"  aim: < {AIM:g}% of one core: {'met' if xtui < AIM else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
