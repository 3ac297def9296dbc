"""Sweeps in the runs table: a sweep's runs grouped under a row of their own with each run's
values, the filter matching sweep ids, and cancelling a whole sweep or one run of it.

The CLI's sweep runs in another process (``python -m x_tui run JOB --sweep ... --detach``); the
cancel tests submit through the engine's own sweep operation on the real local backend.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.support import DEADLINE, asynchronous, wait_until
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.app.main_screen import MainScreen
from x_tui.compute import operations, sweep_runs
from x_tui.compute.backend import RunState
from x_tui.compute.sweeps import Sweep, SweepAxis, SweepRun, SweepStore, parse_sweep
from x_tui.widgets.runs_table import RunsTable

from .app_support import jobs_shown, make_app, save_handle, screen_text
from .screens_support import write_project

EARLIER = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


def _rows(table: RunsTable) -> list[str]:
    """The row keys, top to bottom."""
    return [row.key.value or "" for row in table.ordered_rows]


def _sweep_with_cli(project: Path, job: str, sweep: str) -> Sweep:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "x_tui",
            "run",
            job,
            "--project",
            str(project),
            "--sweep",
            sweep,
            "--detach",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    [recorded] = sweep_runs.list_sweeps().sweeps
    assert recorded.sweep_id in done.stdout
    return recorded


@pytest.mark.slow
@asynchronous
async def test_a_sweep_the_cli_submits_from_another_process_shows_grouped(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await jobs_shown(pilot)
        sweep = _sweep_with_cli(project, "quick", "LR=1e-4,3e-4")
        first, second = sweep.run_ids
        group = f"sweep:{sweep.sweep_id}"
        await wait_until(
            pilot, lambda: _rows(table) == [group, first, second], "the sweep, grouped"
        )
        lines = screen_text(app).splitlines()
        short = sweep.sweep_id.rsplit("-", 1)[-1]
        [group_line] = [line for line in lines if f"▾ sweep-…-{short}" in line]
        assert "quick" in group_line
        assert "2 runs" in group_line
        # Each run under the group row (which names the job) shows its values as its job.
        assert "  LR=1e-4  " in next(line for line in lines if first in line)
        assert "  LR=3e-4  " in next(line for line in lines if second in line)
        await wait_until(
            pilot,
            lambda: all(app.monitor.state_of(run) is RunState.SUCCEEDED for run in sweep.run_ids),
            "both runs to succeed",
        )
        await wait_until(pilot, lambda: "✓ 2 runs" in screen_text(app), "the group's state")


def _recorded_sweep(state: Path) -> Sweep:
    """A sweep of two finished runs, written as the CLI leaves it, beside an unrelated run."""
    runs = []
    for index, value in enumerate(("1e-4", "3e-4")):
        run_id = f"train-20260919T1{index}0000Z-aaa00{index}"
        save_handle(
            state, run_id=run_id, job="train", submitted_at=EARLIER + dt.timedelta(hours=index)
        )
        runs.append(SweepRun(run_id=run_id, parameters={"LR": value}))
    save_handle(
        state,
        run_id="evaluate-20260919T150000Z-bbb000",
        job="evaluate",
        submitted_at=EARLIER + dt.timedelta(hours=3),
    )
    sweep = Sweep(
        sweep_id="sweep-train-20260919T120000Z-0a1b2c3d",
        job="train",
        backend="local",
        project="/home/user/sample",
        created_at=EARLIER,
        axes=(SweepAxis(name="LR", values=("1e-4", "3e-4")),),
        runs=tuple(runs),
    )
    SweepStore(state / "x-tui" / "sweeps").save(sweep)
    return sweep


@asynchronous
async def test_slash_matches_sweep_ids_and_shows_the_sweep_with_its_runs(state_dir: Path) -> None:
    sweep = _recorded_sweep(state_dir)
    app = make_app(None, poll=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.main_screen.runs
        group = f"sweep:{sweep.sweep_id}"
        everything = ["evaluate-20260919T150000Z-bbb000", group, *sweep.run_ids]
        await wait_until(pilot, lambda: _rows(table) == everything, "the runs, grouped")
        await pilot.press("slash", *"0a1b2c3d")
        await wait_until(pilot, lambda: _rows(table) == [group, *sweep.run_ids], "the sweep only")
        assert "2 of 3 matching 0a1b2c3d" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: _rows(table) == everything, "every run again")
        await pilot.press("slash", *"lr=3e-4")
        await wait_until(
            pilot, lambda: _rows(table) == [group, sweep.run_ids[1]], "the run with that value"
        )


async def _running_sweep(project: Path, size: int) -> Sweep:
    axis = parse_sweep("SEED=" + ",".join(str(seed) for seed in range(size)))
    plan = sweep_runs.plan_sweep(operations.open_project(project), "slow", (axis,))
    return sweep_runs.submit_sweep(plan)


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_c_on_a_run_of_a_sweep_cancels_it_alone_and_on_the_sweeps_row_every_run(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample")
    sweep = await _running_sweep(project, 3)
    alone, *rest = sweep.run_ids
    group = f"sweep:{sweep.sweep_id}"
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.main_screen.runs
        await wait_until(
            pilot,
            lambda: all(app.monitor.state_of(run) is RunState.RUNNING for run in sweep.run_ids),
            "the sweep's runs running",
        )
        await wait_until(pilot, lambda: _rows(table) == [group, *sweep.run_ids], "the sweep")
        table.focus()
        table.move_cursor(row=table.get_row_index(alone))
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        assert f"Cancel run {alone}" in screen_text(app)
        await pilot.press("y")
        await wait_until(
            pilot, lambda: app.monitor.state_of(alone) is RunState.CANCELLED, "that run to stop"
        )
        assert all(app.monitor.state_of(run) is RunState.RUNNING for run in rest)

        table.move_cursor(row=table.get_row_index(group))
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        question = str(app.screen.query_one("#confirm-question", Static).render())
        assert f"Cancel 2 runs of sweep {sweep.sweep_id} (slow on local)?" in question
        assert f"{rest[0]}  SEED=1" in question
        assert alone not in question
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: all(app.monitor.state_of(run) is RunState.CANCELLED for run in rest),
            "the rest of the sweep to stop",
        )
        assert isinstance(app.screen, MainScreen)
        await wait_until(pilot, lambda: "■ 3 runs" in screen_text(app), "the group's state")
