"""The runs table's keys at 80x24: the project filter, sorting, deleting a run, moving."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.compute.backend import RunState
from x_tui.compute.worker.manifest import TaskStatus
from x_tui.widgets.runs_table import RunsTable

from .app_support import keep_final_states, make_app, save_handle, screen_text
from .screens_support import NOW, finished_run, notices, submitted, write_project

SIZE = (80, 24)
EARLIER = NOW - dt.timedelta(hours=5)

MINE = (
    "quick-20260919T090000Z-aaaaaa",
    "second-20260919T100000Z-bbbbbb",
    "alpha-20260919T110000Z-cccccc",
)
THEIRS = "other-20260919T113000Z-dddddd"


def _store(state_dir: Path, project: Path) -> None:
    outcomes = {
        MINE[0]: (RunState.SUCCEEDED, 600.0),
        MINE[1]: (RunState.FAILED, 30.0),
        MINE[2]: (RunState.CANCELLED, 5.0),
        THEIRS: (RunState.SUCCEEDED, 60.0),
    }
    final = {}
    for hours, run_id in enumerate((*MINE, THEIRS)):
        submitted_at = EARLIER + dt.timedelta(hours=hours)
        elsewhere = run_id == THEIRS
        save_handle(
            state_dir,
            run_id=run_id,
            job=run_id.split("-")[0],
            submitted_at=submitted_at,
            project="/home/user/elsewhere" if elsewhere else str(project),
        )
        state, seconds = outcomes[run_id]
        final[run_id] = (state, submitted_at.timestamp() + seconds)
    keep_final_states(state_dir, final)


def _keys(table: RunsTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


async def _runs_pane(app: Any, pilot: Any, count: int) -> RunsTable:
    table: RunsTable = app.main_screen.runs
    await wait_until(pilot, lambda: table.row_count == count, f"{count} runs")
    await pilot.press("tab")
    await wait_until(pilot, lambda: table.has_focus, "the runs pane")
    return table


@asynchronous
async def test_only_this_projects_runs_show_until_p(state_dir: Path, project: Path) -> None:
    _store(state_dir, project)
    app = make_app(project, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=(100, 24)) as pilot:  # wide enough for the Project column
        table = await _runs_pane(app, pilot, 3)
        assert THEIRS not in _keys(table)
        pane = app.main_screen.query_one("#runs-pane")
        assert str(pane.border_title) == "Runs · 3 of 4 · sample"
        # One project's runs: its name is in the title, not in a column of its own (as k9s
        # shows a namespace column only across namespaces).
        assert "project" not in table.columns
        assert "Project" not in screen_text(app).splitlines()[1]  # the table's headings

        await pilot.press("p")
        await wait_until(pilot, lambda: table.row_count == 4, "every project's runs")
        assert _keys(table)[0] == THEIRS
        assert str(pane.border_title) == "Runs · 4 · all projects"
        assert [str(column.label) for column in table.ordered_columns][4:6] == ["Job", "Project"]
        assert table.get_cell(THEIRS, "project").plain == "elsewhere"
        for _ in range(5):  # run, state, duration, job, project
            await pilot.press("o")
        await wait_until(pilot, lambda: table.sort_column == "project", "sorted by project")
        await pilot.press("O")  # sample, then elsewhere
        await pilot.pause()
        assert _keys(table) == [MINE[2], MINE[1], MINE[0], THEIRS]

        await pilot.press("p")
        await wait_until(pilot, lambda: table.row_count == 3, "this project's runs again")
        assert "project" not in table.columns
        assert table.sort_column is None  # sorted by a column no longer shown: newest first
        assert _keys(table) == [MINE[2], MINE[1], MINE[0]]
        assert str(table.ordered_columns[2].label) == "Age▼"
        await pilot.press("o", "o", "o", "o", "o")  # run, state, duration, job, backend
        await pilot.pause()
        assert table.sort_column == "backend"


@asynchronous
async def test_o_sorts_by_the_next_column_and_shift_o_reverses(
    state_dir: Path, project: Path
) -> None:
    _store(state_dir, project)
    app = make_app(project, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _runs_pane(app, pilot, 3)
        newest_first = [MINE[2], MINE[1], MINE[0]]
        assert _keys(table) == newest_first
        assert str(table.columns[table.ordered_columns[2].key].label) == "Age▼"

        await pilot.press("o")  # the run id, a to z
        await wait_until(pilot, lambda: table.sort_column == "run", "sorted by run")
        assert _keys(table) == sorted(MINE)
        assert str(table.ordered_columns[0].label) == "Run▲"
        assert str(table.ordered_columns[2].label) == "Age"

        await pilot.press("O")
        await pilot.pause()
        assert _keys(table) == sorted(MINE, reverse=True)
        assert str(table.ordered_columns[0].label) == "Run▼"

        await pilot.press("o")  # the state: failed, cancelled, succeeded from the top
        await pilot.pause()
        assert table.sort_column == "state"
        assert _keys(table) == [MINE[1], MINE[2], MINE[0]]
        await pilot.press("o")  # how long each took, the longest first
        await pilot.pause()
        assert table.sort_column == "duration"
        assert _keys(table) == [MINE[0], MINE[1], MINE[2]]


@asynchronous
async def test_j_k_g_shift_g_home_and_end_move_the_cursor(state_dir: Path, project: Path) -> None:
    _store(state_dir, project)
    app = make_app(project, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _runs_pane(app, pilot, 3)
        assert table.cursor_row == 0
        for key, row in (("j", 1), ("j", 2), ("k", 1), ("g", 0), ("G", 2), ("home", 0)):
            await pilot.press(key)
            await pilot.pause()
            assert table.cursor_row == row, f"after {key}"
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == 2
        assert table.highlighted_key() == MINE[0]


@asynchronous
async def test_d_then_y_deletes_a_finished_run_and_its_files(
    state_dir: Path, project: Path
) -> None:
    handle = finished_run(
        state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())], project=str(project)
    )
    run_dir = Path(handle.details["run_dir"])
    keep_final_states(state_dir, {handle.run_id: (RunState.SUCCEEDED, NOW.timestamp())})
    app = make_app(project, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _runs_pane(app, pilot, 1)
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is app.main_screen, "no")
        assert run_dir.is_dir()

        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_until(pilot, lambda: table.row_count == 0, "the row to go")
        assert not run_dir.exists()
        assert not (state_dir / "compute" / "runs" / f"{handle.run_id}.json").exists()
        assert f"Deleted {handle.run_id}" in notices(app)


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_d_on_a_running_run_is_refused_without_asking(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample")
    handle = await submitted(project, "slow")
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        table = await _runs_pane(app, pilot, 1)
        await wait_until(
            pilot, lambda: app.monitor.state_of(handle.run_id) is RunState.RUNNING, "running"
        )
        await pilot.press("d")
        await wait_until(pilot, lambda: bool(notices(app)), "the refusal")
        assert app.screen is app.main_screen
        assert "is running: only a run that has ended is deleted" in notices(app)[-1]
        assert table.row_count == 1
        assert Path(handle.details["run_dir"]).is_dir()
