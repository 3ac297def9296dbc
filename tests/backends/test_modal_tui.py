"""The TUI with a project whose backend is modal, on the fake ``modal``: same as a local run."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, TabbedContent

from tests.app.screens_support import notices
from tests.support import QUICK_POLLS, wait_until
from x_tui.app.app import XTuiApp
from x_tui.app.run_screen import RunScreen
from x_tui.app.service import Service
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute.backend import RunState
from x_tui.compute.operations import open_project

from .fake_modal import fixtures as modal_fixtures
from .fake_modal.harness import PYPROJECT, FakeModal

fake = modal_fixtures.fake_modal


DEADLINE = 60.0

JOBS = """
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "tui-runs"

[tool.substrax.compute.jobs.twostep]
timeout_seconds = 900

[tool.substrax.compute.jobs.twostep.commands]
first = ["python", "-c", "print('first done', flush=True)"]
second = ["python", "-c", "import time; print('second sleeping', flush=True); time.sleep(600)"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A packaged project whose default backend is modal."""
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT + JOBS)
    return root


def _text(app: XTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def _submit(app: XTuiApp, pilot: Pilot[object], project: Path) -> SubmitScreen:
    screen = SubmitScreen("twostep", project=open_project(project))
    await app.push_screen(screen)
    await wait_until(pilot, lambda: screen.plan is not None or screen.error is not None, "a plan")
    assert screen.plan is not None, screen.error
    await pilot.press("enter")
    return screen


def test_without_a_token_the_submit_screen_says_how_to_configure_modal(
    fake: FakeModal, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-line message shows in the screen, nothing is submitted, the screen still works."""
    monkeypatch.delenv("MODAL_TOKEN_ID")
    monkeypatch.delenv("MODAL_TOKEN_SECRET")

    async def scenario() -> None:
        app = XTuiApp(project, service=Service(), poll_intervals=QUICK_POLLS)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await _submit(app, pilot, project)
            await wait_until(pilot, lambda: "Not submitted" in _text(app), "the refusal")
            assert "Modal has no credentials here" in _text(app)
            assert "modal token new" in _text(app)
            assert app.screen is screen
            assert not screen.query_one("#submit-go", Button).disabled
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is not screen, "the screen to close")

    asyncio.run(scenario())
    assert fake.rpcs() == []


def test_a_modal_run_shows_live_cancels_and_fetches_from_the_tui(
    fake: FakeModal, project: Path, tmp_path: Path
) -> None:
    """Logs from Modal's stream, the manifest peeked from the Volume, cancel, then fetch."""

    async def scenario() -> None:
        app = XTuiApp(project, service=Service(), poll_intervals=QUICK_POLLS)
        async with app.run_test(size=(120, 40)) as pilot:
            await _submit(app, pilot, project)
            await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
            screen = app.screen
            assert isinstance(screen, RunScreen)
            assert screen.handle.backend == "modal"
            await wait_until(pilot, lambda: "second sleeping" in _text(app), "the log line")
            # The log streams on its own; the state comes from the status poll, which may have
            # asked before the function call started.
            await wait_until(pilot, lambda: screen.state is RunState.RUNNING, "running")
            screen.query_one("#run-tabs", TabbedContent).active = "tab-manifest"
            await wait_until(
                pilot,
                lambda: any(
                    line.split()[:2] == ["first", "succeeded"] for line in _text(app).splitlines()
                ),
                "the first task's row, read from the Volume while the run goes on",
            )
            await pilot.press("c")
            await wait_until(pilot, lambda: "Cancel run" in _text(app), "the question")
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.state is RunState.CANCELLED, "the run to stop")
            await wait_until(
                pilot,
                lambda: f"Cancelled {screen.handle.run_id}" in notices(app),
                "the cancel to end",
            )
            await pilot.press("f")
            await wait_until(
                pilot, lambda: "into this directory" in _text(app), "the fetch question"
            )
            await pilot.press("enter")
            await wait_until(pilot, lambda: "Fetched " in _text(app), "the fetch to end")

    asyncio.run(scenario())
    fetched = list((tmp_path / "default-state" / "compute" / "fetched").glob("*/first/stdout.log"))
    assert len(fetched) == 1
    assert "first done" in fetched[0].read_text()


@pytest.mark.slow
def test_a_modal_runs_device_samples_reach_the_devices_tab(
    fake: FakeModal, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's telemetry.jsonl, peeked from the Volume while the run goes on."""
    fake_gpus = Path(__file__).resolve().parent.parent / "fake_gpus"
    monkeypatch.setenv("PATH", f"{fake_gpus}:{os.environ['PATH']}")

    async def scenario() -> None:
        app = XTuiApp(project, service=Service())
        async with app.run_test(size=(120, 40)) as pilot:
            await _submit(app, pilot, project)
            await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
            screen = app.screen
            assert isinstance(screen, RunScreen)
            screen.query_one("#run-tabs", TabbedContent).active = "tab-devices"
            await wait_until(
                pilot,
                lambda: (
                    screen.snapshot is not None
                    and screen.snapshot.telemetry is not None
                    and len(screen.snapshot.telemetry.samples) >= 1
                ),
                "a device sample, peeked from the Volume",
            )
            await wait_until(pilot, lambda: "processes: " in _text(app), "the processes' line")
            await pilot.press("c")
            await wait_until(pilot, lambda: "Cancel run" in _text(app), "the question")
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.state is RunState.CANCELLED, "the run to stop")
            await wait_until(
                pilot,
                lambda: f"Cancelled {screen.handle.run_id}" in notices(app),
                "the cancel to end",
            )

    asyncio.run(scenario())
