"""A submit is never given up while the backend may still create the run: Modal's first image
build outlasts the service's own submit deadline, the screen shows it building, and the handle is
saved when the build ends, even once the user has left the submit screen.

Modal is the real backend on the fake ``modal`` package (its network boundary), whose image build
takes as long as ``FAKE_MODAL_BUILD_SECONDS`` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from backends.fake_modal.harness import PYPROJECT, FakeModal, install_fake_modal

from tests.support import QUICK_POLLS, asynchronous, wait_until
from x_tui.app.app import XTuiApp
from x_tui.app.deadlines import Deadlines
from x_tui.app.main_screen import MainScreen
from x_tui.app.run_screen import RunScreen
from x_tui.app.service import Service
from x_tui.app.submit_screen import SubmitScreen
from x_tui.app.submits import SubmitStillGoing
from x_tui.compute.operations import open_project
from x_tui.compute.store import RunStore

from .app_support import screen_text

JOBS = """
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "tui-runs"

[tool.substrax.compute.jobs.hello]
timeout_seconds = 600
commands = { hello = ["python", "-c", "print('hello from modal', flush=True)"] }
"""

SERVICE_SUBMIT_SECONDS = 0.5
"""The service's own submit deadline here: far shorter than the fake's image build."""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModal]:
    """The fake ``modal`` whose image build takes three seconds; no user settings."""
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))
    for installed in install_fake_modal(tmp_path, monkeypatch):
        monkeypatch.setenv("FAKE_MODAL_BUILD_SECONDS", "3")  # after the harness clears it
        yield installed


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A packaged project whose default backend is modal."""
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT + JOBS)
    return root


def _app(project: Path) -> XTuiApp:
    return XTuiApp(
        project,
        service=Service(deadlines=Deadlines(submit=SERVICE_SUBMIT_SECONDS)),
        poll_intervals=QUICK_POLLS,
    )


def _building(app: XTuiApp) -> bool:
    text = screen_text(app)
    assert "Not submitted" not in text, text
    return "building image…" in text


@pytest.mark.slow
@asynchronous
async def test_a_first_image_build_past_the_services_deadline_is_waited_for(
    fake: FakeModal, project: Path
) -> None:
    app = _app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = SubmitScreen("hello", project=open_project(project))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _building(app), "the build's progress")
        assert "Submitting to modal: building image… (" in screen_text(app)
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        run = app.screen
        assert isinstance(run, RunScreen)
        assert [handle.run_id for handle in RunStore().read_all().handles] == [run.handle.run_id]
        await wait_until(pilot, lambda: "hello from modal" in screen_text(app), "its log")


@pytest.mark.slow
@asynchronous
async def test_leaving_the_submit_screen_while_the_image_builds_still_keeps_the_run(
    fake: FakeModal, project: Path
) -> None:
    app = _app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = SubmitScreen("hello", project=open_project(project))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _building(app), "the build's progress")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        assert RunStore().read_all().handles == ()
        table = app.main_screen.runs
        # The run is a row from the start (submitting, from its launch record), then its handle.
        await wait_until(pilot, lambda: table.row_count == 1, "the run in the runs table")
        await wait_until(pilot, lambda: len(RunStore().read_all().handles) == 1, "its handle")
        [handle] = RunStore().read_all().handles
        assert handle.run_id in table.rows
        assert table.row_count == 1
        assert handle.backend == "modal"
        assert app.service.submits.pending() == ()


@pytest.mark.slow
def test_a_submit_nobody_waits_for_any_more_still_saves_its_handle(
    fake: FakeModal, project: Path
) -> None:
    """What the app does when it closes mid-build: stop waiting, then wait for the save at exit."""
    service = Service(deadlines=Deadlines(submit=SERVICE_SUBMIT_SECONDS))
    plan = service.plan(open_project(project), "hello")
    with pytest.raises(SubmitStillGoing, match="it goes on, and its run appears"):
        service.submit(plan, keep_waiting=lambda: False)
    assert RunStore().read_all().handles == ()
    assert [submit.job for submit in service.submits.pending()] == ["hello"]
    assert service.submits.wait()
    [handle] = RunStore().read_all().handles
    assert (handle.job, handle.backend) == ("hello", "modal")
