"""The submit screen sets a run's budget beside the cost; the run screen's header shows a run's
budget, why the watcher or the provider ended it, and the runs it is linked to by a
resubmission, from x-tui's side files (sanitised)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, Input

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.operations import open_project
from x_tui.compute.run_endings import EndingBook, RunEnding
from x_tui.compute.run_guards import RunGuard
from x_tui.compute.worker.manifest import TaskStatus

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run, write_project

NEXT = "train-20260919T130000Z-0d0e0f"
"""The run that replaced the preempted one."""


@asynchronous
async def test_the_header_shows_the_budget_the_reason_and_the_link(state_dir: Path) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 61.0, ())])
    GuardBook(state_dir).write(
        handle.run_id,
        RunGuard(max_cost_usd=5.0, max_duration_seconds=7200, resubmitted_as=NEXT),
    )
    EndingBook(state_dir).record(
        handle.run_id,
        RunEnding(
            state="preempted",
            reason="spot cluster taken away\x1b[31m by the provider",
            by="provider",
            at=0.0,
        ),
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await wait_until(pilot, lambda: "resubmitted as" in screen_text(app), "the guard line")
        line = next(row for row in screen_text(app).splitlines() if "budget" in row)
    assert (
        "budget $5.00, 2h · preempted: spot cluster taken away by the provider"
        f" · resubmitted as {NEXT}"
    ) in line
    assert "[31m" not in line


BUDGET_JOB = """
[tool.substrax.compute.jobs.slow]
timeout_seconds = 600
[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; time.sleep(60)"]

[tool.x-tui.jobs.slow]
max_cost = 4
"""


@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_the_submit_screen_shows_and_sets_the_budget_next_to_the_cost(
    state_dir: Path, tmp_path: Path
) -> None:
    """The job's budget shows beside the cost; the fields replace it (a bad value is refused in
    the screen, naming the field), and the submitted run's guard holds what the fields said."""
    project = write_project(tmp_path / "sample", BUDGET_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = SubmitScreen("slow", project=open_project(project))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: "Budget    $4.00: the watcher" in screen_text(app), "4$")
        lines = screen_text(app).splitlines()
        budget = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Budget"))
        assert lines[budget + 1].lstrip().startswith("Cost")
        screen.query_one("#submit-max-cost", Input).value = "lots"
        await wait_until(pilot, lambda: "Max cost: expected" in screen_text(app), "the refusal")
        screen.query_one("#submit-max-cost", Input).value = "2.5"
        screen.query_one("#submit-max-duration", Input).value = "90m"
        await wait_until(pilot, lambda: "Budget    $2.50, 1h30m" in screen_text(app), "new budget")
        assert "--max-cost 2.5 --max-duration 90m" in screen.command_line()
        screen.query_one("#submit-go", Button).press()
        await wait_until(pilot, lambda: screen.submitted is not None, "the submit")
    assert screen.submitted is not None
    guard = GuardBook(state_dir).load(screen.submitted.run_id)
    assert (guard.max_cost_usd, guard.max_duration_seconds) == (2.5, 5400.0)
