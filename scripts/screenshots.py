"""Render the README's screenshots from the real app on the demo project.

    uv run python scripts/screenshots.py [--out screenshots]

The demo project is copied to a scratch directory with its own state directory (nothing of the
user's is read or written), its jobs are run on the local backend (``hello`` to the end,
``flaky`` to its failure, a sweep of ``hello`` over two values, ``long`` left running while the
shots are taken, then cancelled, and ``progress`` last, shot while it runs), and the app is
driven headless at 120x40 to write one SVG per screen:

- ``main.svg``: the job browser beside the runs table (the sweep's runs grouped, the running
  ``progress`` run's progress and ETA read from its bar);
- ``run.svg``: a run's combined log; ``run-manifest.svg``: a failed run's manifest;
- ``submit.svg``: the submit screen's plan preview;
- ``help.svg``: the ``?`` help over the run screen;
- ``run-devices.svg`` and ``run-metrics.svg``: the live Devices and Metrics tabs of a ``train``
  job added to the scratch copy (it logs ``step=N loss=X acc=Y`` and a tqdm bar), run with the
  test suite's stand-in ``nvidia-smi`` (``tests/fake_gpus``: 8 GPUs whose figures change) on its
  ``PATH`` and a sample a second, shot while it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

SCRATCH = Path("/tmp/x-tui-screenshots")
"""Where the demo is copied and run (fixed, so the paths in the shots do not change)."""

SIZE = (120, 40)
DEADLINE = 120.0
FAKE_GPUS = Path(__file__).resolve().parent.parent / "tests" / "fake_gpus"

TRAIN = """\
import math, random, sys, time
random.seed(7)
for step in range(1, 601):
    loss = 2.5 * math.exp(-step / 40) + 0.15 + random.uniform(-0.04, 0.04)
    acc = 1 - 0.9 * math.exp(-step / 50) + random.uniform(-0.01, 0.01)
    print(f"step={step} loss={loss:.4f} acc={acc:.3f} lr=3e-4", flush=True)
    eta = (600 - step) // 5
    sys.stderr.write(f"\\r{step}/600 [00:{step // 5:02d}<{eta // 60:02d}:{eta % 60:02d}, 5.00it/s]")
    sys.stderr.flush()
    time.sleep(0.2)
"""
"""A training script as people write them: metrics on plain lines, a tqdm bar on stderr."""

TRAIN_JOB = """
# Added by scripts/screenshots.py: logs metrics and a progress bar, sampled every second.
[tool.substrax.compute.jobs.train]
timeout_seconds = 600
[tool.substrax.compute.jobs.train.commands]
train = ["python", "scripts/train.py"]

[tool.x-tui.jobs.train]
telemetry_seconds = 1
"""


def _prepare() -> Path:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.environ["SUBSTRAX_STATE_DIR"] = str(SCRATCH / "state")
    os.environ["X_TUI_DEMO_DIR"] = str(SCRATCH / "demo")
    os.environ["X_TUI_CONFIG"] = str(SCRATCH / "no-settings.toml")
    from x_tui.demo import prepare_demo_project

    return prepare_demo_project()


def _run_jobs(project: Path) -> dict[str, object]:
    from x_tui.compute import operations
    from x_tui.compute.store import RunStore
    from x_tui.compute.sweep_runs import plan_sweep, submit_sweep
    from x_tui.compute.sweeps import parse_sweep

    opened = operations.open_project(project)
    handles = {}
    for job in ("flaky", "hello"):
        handles[job] = operations.submit_run(operations.plan_run(opened, job))
        time.sleep(1.1)  # distinct submission times, so the runs table has an order to show
    sweep = plan_sweep(opened, "hello", (parse_sweep("GREETING=hi,hello"),))
    swept = submit_sweep(sweep).run_ids
    time.sleep(1.1)
    handles["long"] = operations.submit_run(operations.plan_run(opened, "long"))
    stored = {handle.run_id: handle for handle in RunStore().read_all().handles}
    give_up = time.monotonic() + DEADLINE
    for handle in [handles[job] for job in ("flaky", "hello")] + [
        stored[run_id] for run_id in swept
    ]:
        backend = operations.backend_for(handle)
        while not backend.status(handle).is_final:
            if time.monotonic() > give_up:
                raise SystemExit(f"the demo run {handle.run_id} did not end in {DEADLINE:g} s")
            time.sleep(0.2)
    time.sleep(1.1)
    handles["progress"] = operations.submit_run(operations.plan_run(opened, "progress"))
    return handles


async def _until(pilot: object, condition: Callable[[], bool], what: str) -> None:
    give_up = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > give_up:
            raise SystemExit(f"gave up waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


async def _shoot(project: Path, handles: dict[str, object], out: Path) -> None:
    from x_tui.app.app import XTuiApp
    from x_tui.app.help_screen import HelpScreen
    from x_tui.app.run_screen import RunScreen
    from x_tui.app.service import Service
    from x_tui.app.submit_screen import SubmitScreen
    from x_tui.compute.backend import RunState

    app = XTuiApp(project, service=Service())
    async with app.run_test(size=SIZE) as pilot:
        main = app.main_screen
        await _until(pilot, lambda: main.jobs.highlighted_job is not None, "the jobs")
        await _until(
            pilot,
            lambda: app.monitor.state_of(handles["long"].run_id) is RunState.RUNNING,  # type: ignore[attr-defined]
            "the running run",
        )
        await _until(
            pilot,
            lambda: all(app.monitor.state_of(h.run_id) for h in app.monitor.stored.handles),
            "every run's state",
        )
        progress = handles["progress"].run_id  # type: ignore[attr-defined]
        await _until(
            pilot,
            lambda: (
                "progress" in main.runs.columns
                and "ETA" in main.runs.get_cell(progress, "progress").plain
            ),
            "the progress run's progress",
        )
        await pilot.pause(1.0)
        app.save_screenshot("main.svg", str(out))

        hello = RunScreen(handles["hello"])  # type: ignore[arg-type]
        await app.push_screen(hello)
        await _until(pilot, lambda: hello.loaded, "the hello run")
        await pilot.pause(1.0)
        app.save_screenshot("run.svg", str(out))
        await pilot.press("question_mark")
        await _until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        await pilot.pause(0.5)
        app.save_screenshot("help.svg", str(out))
        await pilot.press("escape")
        await pilot.press("escape")

        flaky = RunScreen(handles["flaky"])  # type: ignore[arg-type]
        await app.push_screen(flaky)
        await _until(pilot, lambda: flaky.loaded, "the flaky run")
        await pilot.press("right_square_bracket")
        await pilot.pause(1.0)
        app.save_screenshot("run-manifest.svg", str(out))
        await pilot.press("escape")

        submit = SubmitScreen("hello")
        await app.push_screen(submit)
        await _until(pilot, lambda: submit.plan is not None, "the plan")
        await pilot.pause(0.5)
        app.save_screenshot("submit.svg", str(out))


def _start_training(project: Path) -> object:
    """Add the ``train`` job to the scratch copy and start it with 8 stand-in GPUs."""
    from x_tui.compute import operations

    (project / "scripts" / "train.py").write_text(TRAIN, encoding="utf-8")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as stream:
        stream.write(TRAIN_JOB)
    os.environ["PATH"] = f"{FAKE_GPUS}{os.pathsep}{os.environ['PATH']}"  # the worker inherits it
    opened = operations.open_project(project)
    return operations.submit_run(operations.plan_run(opened, "train"))


async def _shoot_live(project: Path, train: object, out: Path) -> None:
    from textual.widgets import TabbedContent

    from x_tui.app.app import XTuiApp
    from x_tui.app.run_screen import RunScreen
    from x_tui.app.service import Service

    app = XTuiApp(project, service=Service())
    async with app.run_test(size=SIZE) as pilot:
        screen = RunScreen(train, tab="tab-devices")  # type: ignore[arg-type]
        await app.push_screen(screen)

        def samples() -> int:
            snapshot = screen.snapshot
            telemetry = snapshot.telemetry if snapshot is not None else None
            return len(telemetry.samples) if telemetry is not None else 0

        await _until(pilot, lambda: screen.loaded and samples() >= 30, "30 device samples")
        await pilot.pause(1.0)
        app.save_screenshot("run-devices.svg", str(out))
        screen.query_one("#run-tabs", TabbedContent).active = "tab-metrics"
        await pilot.pause(1.0)
        app.save_screenshot("run-metrics.svg", str(out))


def main(argv: list[str] | None = None) -> int:
    """Write the screenshots; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent.parent / "screenshots"
    )
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    project = _prepare()
    handles = _run_jobs(project)
    try:
        asyncio.run(_shoot(project, handles, out))
    finally:
        from x_tui.compute import operations

        long = handles["long"]
        operations.backend_for(long).cancel(long)  # type: ignore[arg-type]
    train = _start_training(project)
    try:
        asyncio.run(_shoot_live(project, train, out))
    finally:
        operations.backend_for(train).cancel(train)  # type: ignore[arg-type]
    for name in sorted(out.glob("*.svg")):
        print(name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
