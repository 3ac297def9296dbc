"""The run screen's header shows a run's budget, why the watcher or the provider ended it, and
the runs it is linked to by a resubmission, from x-tui's side files (sanitised)."""

from __future__ import annotations

from pathlib import Path

from tests.support import wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.manifest import TaskStatus
from x_tui.compute.run_endings import EndingBook, RunEnding
from x_tui.compute.run_guards import RunGuard

from .conftest import asynchronous, make_app, screen_text
from .screens_support import NOW, finished_run

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
