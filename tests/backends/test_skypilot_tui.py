"""The TUI with a project whose backend is skypilot, on the fake SkyPilot: as with any backend.

The run screen shows the run's cluster, request id and transport; its log comes from SkyPilot's
log stream, its manifest is peeked from the bucket while it runs; cancel and fetch work from it.
Without SkyPilot the submit screen says how to install it and stays usable.
"""

from __future__ import annotations

import asyncio
import json
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

from .fake_sky.harness import FakeSky, S3Server, make_locked_project

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test: real processes, sshd or S3


DEADLINE = 120.0
"""Seconds each wait here may take: a fake cluster, its bucket and S3 are slow on a busy machine."""

JOBS = """\
[tool.substrax.compute.jobs.twostep]
timeout_seconds = 900

[tool.substrax.compute.jobs.twostep.commands]
first = ["python", "-c", "print('first done', flush=True)"]
second = ["python", "-c", "import time; print('second sleeping', flush=True); time.sleep(600)"]
"""


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private state directory and no user settings."""
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))


def make_project(tmp_path: Path, sky: Path, bucket: str) -> Path:
    root = make_locked_project(tmp_path / "sample", {})
    table = (
        '[tool.substrax.compute]\nbackend = "skypilot"\n\n'
        f"[tool.substrax.compute.backends.skypilot]\nsky = {json.dumps(str(sky))}\n\n"
        "[tool.substrax.compute.backends.skypilot.bucket]\n"
        f"outputs_bucket = {json.dumps(bucket)}\n\n"
    )
    with (root / "pyproject.toml").open("a") as stream:
        stream.write("\n" + table + JOBS)
    return root


def _text(app: XTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def _submit(app: XTuiApp, pilot: Pilot[object], project: Path) -> SubmitScreen:
    screen = SubmitScreen("twostep", project=open_project(project))
    await app.push_screen(screen)
    await wait_until(
        pilot,
        lambda: screen.plan is not None or screen.error is not None,
        "a plan",
        deadline=DEADLINE,
    )
    assert screen.plan is not None, screen.error
    await pilot.press("enter")
    return screen


def test_without_skypilot_the_submit_screen_says_how_to_install_it(tmp_path: Path) -> None:
    project = make_project(tmp_path, tmp_path / "nowhere" / "sky", "s3://runs")

    async def scenario() -> None:
        app = XTuiApp(project, service=Service(), poll_intervals=QUICK_POLLS)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await _submit(app, pilot, project)
            await wait_until(
                pilot, lambda: "Not submitted" in _text(app), "the refusal", deadline=DEADLINE
            )
            assert "SkyPilot is not installed here" in _text(app)
            assert "uv tool install" in _text(app)
            assert app.screen is screen
            assert not screen.query_one("#submit-go", Button).disabled
            await pilot.press("escape")
            await wait_until(
                pilot, lambda: app.screen is not screen, "the screen to close", deadline=DEADLINE
            )

    asyncio.run(scenario())


def test_a_skypilot_run_shows_live_cancels_and_fetches_from_the_tui(
    fake_sky: FakeSky,
    s3: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    bucket = s3.make_bucket(f"tui-{tmp_path.name.lower().replace('_', '-')[-40:]}")
    project = make_project(tmp_path, fake_sky.tool.link, bucket)

    async def scenario() -> None:
        app = XTuiApp(project, service=Service(), poll_intervals=QUICK_POLLS)
        async with app.run_test(size=(140, 40)) as pilot:
            await _submit(app, pilot, project)
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, RunScreen),
                "the run screen",
                deadline=DEADLINE,
            )
            screen = app.screen
            assert isinstance(screen, RunScreen)
            assert screen.handle.backend == "skypilot"
            details = screen.handle.details
            shown = _text(app)
            assert f"cluster {details['cluster']}" in shown
            assert f"request_id {details['request_id']}" in shown
            assert "transport bucket" in shown
            await wait_until(
                pilot, lambda: "second sleeping" in _text(app), "the log line", deadline=DEADLINE
            )
            # The log streams on its own; the state comes from the status poll, a `sky` call of
            # its own that may have asked before the job started.
            await wait_until(
                pilot, lambda: screen.state is RunState.RUNNING, "running", deadline=DEADLINE
            )
            screen.query_one("#run-tabs", TabbedContent).active = "tab-manifest"
            await wait_until(
                pilot,
                lambda: any(
                    line.split()[:2] == ["first", "succeeded"] for line in _text(app).splitlines()
                ),
                "the first task's row, read from the bucket while the run goes on",
                deadline=DEADLINE,
            )
            await pilot.press("c")
            await wait_until(
                pilot, lambda: "Cancel run" in _text(app), "the question", deadline=DEADLINE
            )
            await pilot.press("y")
            await wait_until(
                pilot,
                lambda: screen.state is RunState.CANCELLED,
                "the run to stop",
                deadline=DEADLINE,
            )
            # The job reads cancelled before the cancel has taken its cluster down.
            await wait_until(
                pilot,
                lambda: f"Cancelled {screen.handle.run_id}" in notices(app),
                "the cancel to end",
                deadline=DEADLINE,
            )
            await pilot.press("f")
            await wait_until(
                pilot,
                lambda: "into this directory" in _text(app),
                "the fetch question",
                deadline=DEADLINE,
            )
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: "Fetched " in _text(app), "the fetch to end", deadline=DEADLINE
            )

    asyncio.run(scenario())
    assert fake_sky.clusters() == []
    fetched = list((tmp_path / "state" / "compute" / "fetched").glob("*/first/stdout.log"))
    assert len(fetched) == 1
    assert "first done" in fetched[0].read_text()


def test_a_skypilot_runs_device_samples_reach_the_devices_tab(
    fake_sky: FakeSky,
    s3: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's telemetry.jsonl, peeked from the bucket while the run goes on."""
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    bucket = s3.make_bucket(f"tel-{tmp_path.name.lower().replace('_', '-')[-40:]}")
    project = make_project(tmp_path, fake_sky.tool.link, bucket)

    async def scenario() -> None:
        app = XTuiApp(project, service=Service())
        async with app.run_test(size=(140, 40)) as pilot:
            await _submit(app, pilot, project)
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, RunScreen),
                "the run screen",
                deadline=DEADLINE,
            )
            screen = app.screen
            assert isinstance(screen, RunScreen)
            await wait_until(
                pilot, lambda: "second sleeping" in _text(app), "the log line", deadline=DEADLINE
            )
            screen.query_one("#run-tabs", TabbedContent).active = "tab-devices"
            await wait_until(
                pilot,
                lambda: (
                    screen.snapshot is not None
                    and screen.snapshot.telemetry is not None
                    and len(screen.snapshot.telemetry.samples) >= 1
                ),
                "a device sample, peeked from the bucket",
                deadline=DEADLINE,
            )
            await wait_until(
                pilot, lambda: "processes: " in _text(app), "the processes' line", deadline=DEADLINE
            )
            await pilot.press("c")
            await wait_until(
                pilot, lambda: "Cancel run" in _text(app), "the question", deadline=DEADLINE
            )
            await pilot.press("y")
            await wait_until(
                pilot,
                lambda: screen.state is RunState.CANCELLED,
                "the run to stop",
                deadline=DEADLINE,
            )
            # The job reads cancelled before the cancel has taken its cluster down.
            await wait_until(
                pilot,
                lambda: f"Cancelled {screen.handle.run_id}" in notices(app),
                "the cancel to end",
                deadline=DEADLINE,
            )

    asyncio.run(scenario())
    assert fake_sky.clusters() == []
