"""The TUI and launch records: a run being submitted is a row, a store that refuses a record is a
message in the submit screen, and nothing starts."""

from __future__ import annotations

import datetime as dt
import errno
import os
import sys
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute import launches
from x_tui.compute.launches import LaunchBook, LaunchRecord, process_start
from x_tui.compute.store import RunStore

from .app_support import make_app, screen_text
from .screens_support import QUICK_JOB, write_project


def _record(run_id: str, *, pid: int, start: str, project: Path) -> LaunchRecord:
    return LaunchRecord(
        run_id=run_id,
        backend="local",
        job=run_id.split("-", maxsplit=1)[0],
        project=str(project),
        submitted_at=dt.datetime.now(dt.UTC),
        settings={"python": sys.executable},
        submitter_pid=pid,
        submitter_start=start,
    )


@asynchronous
async def test_a_run_being_submitted_reads_submitting_and_one_whose_submitter_died_failed(
    state_dir: Path, tmp_path: Path
) -> None:
    book = LaunchBook(RunStore())
    project = write_project(tmp_path / "sample", QUICK_JOB)
    alive = "alive-20261201T120000Z-aaaaaa"
    start = process_start(os.getpid()) or ""
    book.write(_record(alive, pid=os.getpid(), start=start, project=project))
    dead = "dead-20261201T110000Z-bbbbbb"
    # The same pid with another start time: that submitter is gone.
    book.write(_record(dead, pid=os.getpid(), start="1", project=project))
    app = make_app(project)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_until(pilot, lambda: alive in screen_text(app), "the run being submitted")
        await wait_until(pilot, lambda: dead in screen_text(app), "the run never started")
        lines = screen_text(app).splitlines()
        [alive_line] = [line for line in lines if alive in line and " local " in line]
        [dead_line] = [line for line in lines if dead in line and " local " in line]
        assert "submitting" in alive_line
        assert "failed" in dead_line
    failed = book.load(dead)
    assert failed is not None
    assert failed.reason == "the submitting process died before the worker started (nothing ran)"


@asynchronous
async def test_a_store_that_refuses_the_launch_record_is_said_in_the_submit_screen(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(path: Path, text: str, **_: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(launches, "write_atomic", read_only)
    project = write_project(tmp_path / "sample", QUICK_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.main_screen.jobs.highlighted_job == "quick", "a job")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit screen")
        screen = app.screen
        assert isinstance(screen, SubmitScreen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Not submitted" in screen_text(app), "the refusal")
        text = " ".join(screen_text(app).split())
        assert "Read-only file system" in text
        assert "nothing was started" in text
        assert isinstance(app.screen, SubmitScreen)  # the app keeps running, the form kept
    assert RunStore().read_all().handles == ()
    assert not (state_dir / "compute" / "local").exists()
