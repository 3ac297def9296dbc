"""The run screen from the first second, at 80x24: a single long task's devices and files while it
runs, and a run that was cancelled or ended without a manifest told in the past tense."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.compute import operations
from x_tui.compute.backend import RunState
from x_tui.compute.worker.manifest import TaskStatus

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run, submitted, write_project

LONG = """\
import os, pathlib, time

out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / "ckpt"
out.mkdir()
(out / "step1.pt").write_text("1")
print("wrote step 1", flush=True)
while not pathlib.Path("gate").exists():
    time.sleep(0.05)
(out / "step2.pt").write_text("2")
print("wrote step 2", flush=True)
time.sleep(600)
"""

LONG_JOB = """
[tool.substrax.compute.jobs.long]
timeout_seconds = 900
[tool.substrax.compute.jobs.long.commands]
train = ["python", "train.py"]
"""

PRESENT_TENSE = ("yet", "waiting", "running", "in progress")


def _tab(app: object, pane: str) -> None:
    screen = getattr(app, "screen", None)
    assert isinstance(screen, RunScreen)
    screen.query_one("#run-tabs", TabbedContent).active = pane


def _pane_text(app: object) -> str:
    """What the screen shows below its header (three lines) and tabs, above the footer."""
    lines = screen_text(app).split("\n")  # type: ignore[arg-type]
    return "\n".join(lines[5:-1])


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_a_single_long_task_shows_its_devices_and_its_files_while_it_runs_then_past_tense(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", LONG_JOB)
    (project / "train.py").write_text(LONG, encoding="utf-8")
    handle = await submitted(project, "long")
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(RunScreen(handle))
        screen = app.screen
        assert isinstance(screen, RunScreen)

        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        _tab(app, "tab-devices")
        await wait_until(pilot, lambda: "seen by the probe" in screen_text(app), "devices")
        await wait_until(
            pilot,
            lambda: re.search(r"platform\s+any\s+\w+", screen_text(app)) is not None,
            "the platform the probe saw",
        )
        assert "No manifest yet" not in screen_text(app)
        assert screen.state is RunState.RUNNING

        _tab(app, "tab-manifest")
        await wait_until(pilot, lambda: "ckpt/step1.pt" in screen_text(app), "the first file")
        text = screen_text(app)
        assert "in progress · 0 of 1 tasks ran" in text
        assert re.search(r"train\s+running\s+-\s+\d+ s\s+1\b", text), text
        assert "train wrote 1 file(s) so far:" in text

        (project / "gate").touch()
        await wait_until(pilot, lambda: "ckpt/step2.pt" in screen_text(app), "the second file")
        assert "train wrote 2 file(s) so far:" in screen_text(app)

        backend = operations.backend_for(handle)
        await asyncio.to_thread(backend.cancel, handle)
        await wait_until(pilot, lambda: screen.state is RunState.CANCELLED, "the cancel")
        await wait_until(pilot, lambda: "cancelled · 0 of 1" in screen_text(app), "past tense")
        # The status column is as wide as "cancelled" from the start: the whole word shows.
        await wait_until(
            pilot,
            lambda: re.search(r"train\s+cancelled", _pane_text(app)) is not None,
            "the task's row in the past tense",
        )
        manifest_text = _pane_text(app)
        assert "train wrote 2 file(s):" in manifest_text
        for word in PRESENT_TENSE:
            assert word not in manifest_text, f"{word!r} in a cancelled run's manifest"
        _tab(app, "tab-devices")
        await pilot.pause()
        devices_text = _pane_text(app)
        assert "seen by the probe" in devices_text
        for word in PRESENT_TENSE:
            assert word not in devices_text, f"{word!r} in a cancelled run's devices"


@asynchronous
async def test_a_run_cancelled_before_its_probe_answered_says_so_in_the_past_tense(
    state_dir: Path,
) -> None:
    handle = finished_run(state_dir, tasks=[("fit", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    run_dir = Path(handle.details["run_dir"])
    (run_dir / "outputs" / "manifest.json").unlink()
    (run_dir / "cancelled").touch()
    app = make_app(None, clock=NOW.timestamp)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.state is RunState.CANCELLED, "the state")
        _tab(app, "tab-manifest")
        await wait_until(
            pilot,
            lambda: "cancelled before its worker wrote a manifest" in screen_text(app),
            "the manifest tab",
        )
        text = _pane_text(app)
        assert re.search(r"fit\s+cancelled", text), text
        for word in PRESENT_TENSE:
            assert word not in text
        _tab(app, "tab-devices")
        await wait_until(
            pilot,
            lambda: "cancelled before its device probe answered" in screen_text(app),
            "the devices tab",
        )
        for word in PRESENT_TENSE:
            assert word not in _pane_text(app)


@asynchronous
async def test_a_run_that_ended_without_a_manifest_says_why_from_its_log(
    state_dir: Path,
) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("fit", TaskStatus.SUCCEEDED, 0, 1.0, ())],
        worker_log="x-tui worker: --project /gone: not a directory\n",
    )
    (Path(handle.details["run_dir"]) / "outputs" / "manifest.json").unlink()
    app = make_app(None, clock=NOW.timestamp)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.state is RunState.FAILED, "the state")
        _tab(app, "tab-manifest")
        await wait_until(
            pilot, lambda: "The run ended without a manifest" in screen_text(app), "the reason"
        )
        assert "/gone: not a directory" in screen_text(app)
        assert re.search(r"fit\s+cut short", _pane_text(app))
