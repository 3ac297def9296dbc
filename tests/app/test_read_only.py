"""The web view's read-only mode: every action that changes a run is refused with a toast."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.app.run_screen import RunScreen
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute.operations import open_project
from x_tui.compute.store import RunStore

from .app_support import make_app, save_handle


@asynchronous
async def test_cancel_fetch_rerun_and_submit_are_refused_when_read_only(
    state_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X_TUI_READ_ONLY", "1")
    handle = save_handle(
        state_dir,
        run_id="quick-20261201T000000Z-0a1b2c",
        job="quick",
        submitted_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )
    app = make_app(project, poll=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(RunScreen(handle))
        for key in ("c", "f", "r"):
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen), key
        await wait_until(
            pilot, lambda: any("read-only" in n.message for n in app._notifications), "the toast"
        )
        submit = SubmitScreen("quick", project=open_project(project))
        await app.push_screen(submit)
        await wait_until(pilot, lambda: submit.plan is not None, "the plan")
        await pilot.press("enter")
        await pilot.pause()
        assert submit.submitting is False
    assert [h.run_id for h in RunStore().read_all().handles] == [handle.run_id]
