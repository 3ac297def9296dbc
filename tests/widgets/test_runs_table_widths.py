"""The runs table keeps to its width: a watched run's Progress, GPU and Cost columns show only
where they fit beside the run's own (the Backend, Project, Job and Took columns give way to the
progress; a table too narrow hides them, the cost first), a table too narrow for the run's own
columns hides them from the right rather than cut them off, and a record's long words are cut
short in their cells."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from rich.text import Text
from textual.pilot import Pilot

from tests.support import asynchronous, wait_until
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.widgets import runs_table
from x_tui.widgets.run_rows import REASON_WIDTH, WORD_WIDTH
from x_tui.widgets.runs_table import REFIT_ROWS, RunsTable

from .table_support import TableApp, runs_newest_first


class _Watched:
    """What a table showed for a running run while it was watched, and after."""

    def __init__(self) -> None:
        self.columns: list[str] = []
        self.used = self.room = self.wanted = 0
        self.after: list[str] = []
        self.backend_cell = ""


async def _watch_columns(width: int) -> _Watched:
    """A table ``width`` wide of three runs, every project's, one of them watched."""
    handles = runs_newest_first(3, "train")
    states = {handle.run_id: RunState.RUNNING for handle in handles}
    table = RunsTable()
    seen = _Watched()
    async with TableApp(table).run_test(size=(width, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)
        await pilot.pause()
        table.show_watch({handles[0].run_id: (Text("25% ETA 3m"), Text("91%"), Text("$0.12"))})
        await pilot.pause()
        seen.columns = [str(column.key.value) for column in table.ordered_columns]
        if "progress" in table.columns:
            assert table.get_cell(handles[0].run_id, "progress").plain == "25% ETA 3m"
            assert table.get_cell(handles[1].run_id, "progress").plain == ""
        seen.used = table.virtual_size.width
        seen.room = table.scrollable_content_region.width
        seen.wanted = table.wanted_width
        table.show_watch({})  # the run ended
        await pilot.pause()
        seen.after = [str(column.key.value) for column in table.ordered_columns]
        if "backend" in table.columns:
            seen.backend_cell = table.get_cell(handles[0].run_id, "backend").plain
    return seen


BASE = ["run", "state", "age", "duration", "job", "project", "backend"]


@asynchronous
async def test_the_watch_columns_show_where_they_fit_and_hide_where_they_would_be_cut() -> None:
    wide = await _watch_columns(200)
    assert wide.columns == [*BASE, "progress", "gpu", "cost"]
    assert wide.used == wide.wanted <= wide.room
    everything = wide.wanted

    less = await _watch_columns(everything - 1)  # (three rows: no scrollbar)
    assert less.columns == [*BASE, "progress", "gpu"]  # the cost gives way first
    assert less.used <= less.room
    base = everything - (18 + 6 + 10)  # the run's own columns

    # Short of room for the progress, the Backend column gives way to it, then the Project,
    # then the Job (a run's id begins with its job's name)...
    tighter = await _watch_columns(base + 9)  # (Backend: 7 columns and its padding)
    assert tighter.columns == [*BASE[:-1], "progress"]
    assert tighter.used <= tighter.room
    tighter_still = await _watch_columns(base)
    assert tighter_still.columns == [*BASE[:-2], "progress"]
    assert tighter_still.used <= tighter_still.room
    tightest = await _watch_columns(base - 7)  # (Job: 5 columns and its padding)
    assert tightest.columns == [*BASE[:-3], "progress"]
    assert tightest.used <= tightest.room
    # ...and last the time taken (a running run's is about its age), as at 80x24.
    took_too = await _watch_columns(base - 15)  # (Took: 6 columns and its padding)
    assert took_too.columns == ["run", "state", "age", "progress"]
    assert took_too.used <= took_too.room
    # ...and they come back, in their places, once no run is watched (as many as fit).
    for seen in (tighter, tighter_still):
        assert seen.after == BASE
        assert seen.backend_cell == "local"
    assert tightest.after == BASE[:-1]
    assert took_too.after == BASE[:-2]

    # Too narrow for the progress even so: the run's own columns give way from the right,
    # rather than be cut off, and nothing else shows.
    narrow = await _watch_columns(base - 30)
    assert narrow.columns == narrow.after == ["run", "state", "age"]
    assert narrow.used <= narrow.room


@asynchronous
async def test_a_records_long_words_are_cut_short_in_their_cells_and_whole_under_the_table() -> (
    None
):
    job = "evaluate-every-checkpoint-on-the-held-out-set"
    project = "p" * 5000  # a hostile record's: one name would widen the whole table
    [plain] = runs_newest_first(1, "train")
    handle = RunHandle(
        run_id=f"{job}-20260919T120000Z-abcdef",
        backend="b" * 300,
        job=job,
        project=f"/home/user/{project}",
        submitted_at=plain.submitted_at,
        settings=plain.settings,
        details=plain.details,
    )
    table = RunsTable()
    async with TableApp(table).run_test(size=(200, 20)) as pilot:
        table.set_project(None)  # every project's runs: the Project column shows
        table.show_stored(StoredRuns(handles=(handle,), unreadable={}))
        await pilot.pause()
        cells = {
            key: table.get_cell(handle.run_id, key).plain for key in ("job", "project", "backend")
        }
        assert cells == {
            "job": job[: WORD_WIDTH - 1] + "…",
            "project": "p" * (WORD_WIDTH - 1) + "…",
            "backend": "b" * (WORD_WIDTH - 1) + "…",
        }
        assert table.virtual_size.width < 200
        described = table.describe(handle.run_id).plain
        assert job in described
        assert project in described


@asynccontextmanager
async def _every_row_built_then_narrowed_and_widened(
    *, cursor_at_top: bool
) -> AsyncIterator[tuple[RunsTable, tuple[RunHandle, ...], Pilot[None]]]:
    """A table 120 wide with every one of ``REFIT_ROWS + 100`` rows built (the cursor moved back
    to the top or left on the last row), narrowed until Backend gives way, then widened again."""
    handles = runs_newest_first(REFIT_ROWS + 100, "train")
    table = RunsTable()
    async with TableApp(table).run_test(size=(120, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}))
        table.action_last_row()
        await wait_until(pilot, lambda: table.row_count == len(handles), "every row built")
        assert "backend" in table.columns
        if cursor_at_top:
            table.action_first_row()
        await pilot.resize_terminal(70, 20)
        await wait_until(pilot, lambda: "backend" not in table.columns, "Backend giving way")
        await pilot.resize_terminal(120, 20)
        yield table, handles, pilot


@asynchronous
async def test_with_every_row_built_a_column_gives_way_but_comes_back_only_with_a_refill() -> None:
    """Putting a column back writes a cell in every row built (some 3 s for 100,000 rows)."""
    widened = _every_row_built_then_narrowed_and_widened(cursor_at_top=False)
    async with widened as (table, handles, pilot):
        await pilot.pause()
        assert "backend" not in table.columns  # not put back in 600 rows
        table.set_filter("train")  # a refill: a page of rows built again, every column
        await wait_until(pilot, lambda: "backend" in table.columns, "Backend back")
        assert table.get_cell(handles[0].run_id, "backend").plain == "local"


@asynchronous
async def test_with_many_rows_built_and_the_cursor_near_the_top_a_column_comes_back_at_once() -> (
    None
):
    """A refill builds down to the cursor's row and a page past it: near the top, a few hundred
    rows, so a widened table refills at once rather than keep the column hidden."""
    widened = _every_row_built_then_narrowed_and_widened(cursor_at_top=True)
    async with widened as (table, handles, pilot):
        await wait_until(pilot, lambda: "backend" in table.columns, "Backend back")
        assert table.get_cell(handles[0].run_id, "backend").plain == "local"
        assert table.highlighted_key() == handles[0].run_id
        assert table.row_count < len(handles)  # a page built again, not every row


@asynchronous
async def test_with_more_rows_built_than_a_refill_should_clear_a_column_waits_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Clearing 100,000 built rows for a refill took 0.34 s: past ``REFILL_ROWS`` built, a
    widened table does not refill, even with the cursor at the top."""
    monkeypatch.setattr(runs_table, "REFILL_ROWS", REFIT_ROWS + 50)  # fewer than are built
    widened = _every_row_built_then_narrowed_and_widened(cursor_at_top=True)
    async with widened as (table, handles, pilot):
        await pilot.pause()
        assert "backend" not in table.columns
        assert table.row_count == len(handles)  # nothing cleared


@asynchronous
async def test_a_watch_poll_writes_the_watched_runs_cells_only() -> None:
    handles = runs_newest_first(300, "train")
    table = RunsTable()
    async with TableApp(table).run_test(size=(200, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}))
        table.action_last_row()
        await wait_until(pilot, lambda: table.row_count == len(handles), "every row built")
        first, second = handles[0].run_id, handles[1].run_id
        table.show_watch({first: (Text("10%"), Text("1%"), Text("$0"))})
        written: list[str] = []
        update_cell = table.update_cell

        def noted(row_key: object, column_key: object, value: object, **options: bool) -> None:
            written.append(str(row_key))
            update_cell(row_key, column_key, value, **options)  # type: ignore[arg-type]

        table.update_cell = noted  # type: ignore[method-assign]
        table.show_watch({second: (Text("20%"), Text("2%"), Text("$0"))})
        await pilot.pause()
        assert sorted(set(written)) == sorted({first, second})  # not the 300 rows
        assert table.get_cell(first, "progress").plain == ""
        assert table.get_cell(second, "progress").plain == "20%"
        assert table.get_cell(handles[2].run_id, "progress").plain == ""


@asynchronous
async def test_an_unreadable_records_reason_is_one_line_cut_short_and_escapes_dropped() -> None:
    path = Path("/store/compute/runs/bad-20260919T120000Z-abcdef.json")
    table = RunsTable()
    async with TableApp(table).run_test(size=(200, 20)) as pilot:
        reason = "not\nJSON \x1b[31mat all\x1b[0m, line 1"
        table.show_stored(StoredRuns(handles=(), unreadable={path: reason}))
        await pilot.pause()
        [key] = [str(row.key.value) for row in table.ordered_rows]
        cell = table.get_cell(key, "job").plain
        assert cell == "not JSON at…"
        assert len(cell) == REASON_WIDTH
