"""Render the README's screenshots from the real app on the demo project.

    uv run python scripts/screenshots.py [--out screenshots]

The demo project is copied to a scratch directory with its own state directory (nothing of the
user's is read or written), its jobs are run on the local backend (``hello`` and ``progress``
to the end, ``flaky`` to its failure, a sweep of ``hello`` over two values, ``long`` left
running while the shots are taken, then cancelled), and the app is driven headless at 120x40 to
write one SVG per screen:

- ``main.svg``: the job browser beside the runs table (the sweep's runs grouped);
- ``run.svg``: a run's combined log; ``run-manifest.svg``: a failed run's manifest;
- ``submit.svg``: the submit screen's plan preview;
- ``help.svg``: the ``?`` help over the run screen.
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
    from x_tui.compute.sweeps import parse_sweep

    opened = operations.open_project(project)
    handles = {}
    for job in ("flaky", "hello", "progress"):
        handles[job] = operations.submit_run(operations.plan_run(opened, job))
        time.sleep(1.1)  # distinct submission times, so the runs table has an order to show
    sweep = operations.plan_sweep(opened, "hello", (parse_sweep("GREETING=hi,hello"),))
    swept = operations.submit_sweep(sweep).run_ids
    time.sleep(1.1)
    handles["long"] = operations.submit_run(operations.plan_run(opened, "long"))
    stored = {handle.run_id: handle for handle in RunStore().read_all().handles}
    give_up = time.monotonic() + DEADLINE
    for handle in [handles[job] for job in ("flaky", "hello", "progress")] + [
        stored[run_id] for run_id in swept
    ]:
        backend = operations.backend_for(handle)
        while not backend.status(handle).is_final:
            if time.monotonic() > give_up:
                raise SystemExit(f"the demo run {handle.run_id} did not end in {DEADLINE:g} s")
            time.sleep(0.2)
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
    for name in sorted(out.glob("*.svg")):
        print(name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
