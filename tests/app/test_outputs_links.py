"""The run screen reads a run's outputs by the one rule: no link out of them is ever followed."""

from __future__ import annotations

from pathlib import Path

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.compute.worker.manifest import TaskStatus

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run


@asynchronous
async def test_the_task_tab_never_shows_a_log_reached_through_a_link(
    state_dir: Path, tmp_path: Path
) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("flaky", TaskStatus.SUCCEEDED, 0, 3.0, ())],
        attempts=[
            {"task": "flaky", "attempt": 1, "status": "failed", "returncode": 7, "seconds": 1.5},
            {"task": "flaky", "attempt": 2, "status": "succeeded", "returncode": 0, "seconds": 3.0},
        ],
        attempt_logs={("flaky", 1): "first try broke\n"},
    )
    outputs = state_dir / "compute" / "local" / handle.run_id / "outputs"
    outside = tmp_path / "outside"
    (outside / "1").mkdir(parents=True)
    (outside / "1" / "stdout.log").write_text("SECRET earlier attempt\n")
    (outside / "stdout.log").write_text("SECRET latest\n")
    kept = outputs / "attempts" / "flaky"
    kept.rename(tmp_path / "moved")
    kept.symlink_to(outside, target_is_directory=True)
    (outputs / "flaky" / "stdout.log").unlink()
    (outputs / "flaky" / "stdout.log").symlink_to(outside / "stdout.log")
    (outputs / "flaky" / "stderr.log").write_text("the real stderr line\n")

    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: "flaky" in screen_text(app), "the task's row")
        assert "↳ attempt 1" not in screen_text(app), "a linked attempts directory was listed"
        await pilot.press("enter")
        await pilot.press("o")
        await wait_until(pilot, lambda: "the real stderr line" in screen_text(app), "stderr")
        await pilot.press("o")
        await pilot.press("p")
        await pilot.pause(0.3)
        assert "SECRET" not in screen_text(app)
