"""A run's state changes while the table is filtered or sorted by what the state decides: the
row comes, goes or moves at once, as it would on the next listing, not only when one comes."""

from __future__ import annotations

from pathlib import Path

from tests.support import asynchronous, wait_until
from x_tui.compute.backend import RunState
from x_tui.compute.store import StoredRuns
from x_tui.compute.sweeps import StoredSweeps, Sweep, SweepAxis, SweepRun
from x_tui.widgets.runs_table import RunsTable

from .table_support import START, TableApp, runs_newest_first


def _keys(table: RunsTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


@asynchronous
async def test_a_filter_on_a_state_shows_a_run_that_comes_to_it_and_hides_one_that_leaves() -> None:
    handles = runs_newest_first(6, "train")
    states = {handle.run_id: RunState.RUNNING for handle in handles}
    starting = handles[1].run_id
    states[starting] = RunState.PENDING
    table = RunsTable()
    async with TableApp(table).run_test(size=(100, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)
        table.set_filter("running")
        await pilot.pause()
        assert starting not in _keys(table)
        assert table.shown_count == 5
        ending = handles[3].run_id
        table.set_state(starting, RunState.RUNNING)
        table.set_state(ending, RunState.SUCCEEDED, START.timestamp())
        await pilot.pause()
        shown = _keys(table)
        assert starting in shown  # where the newest-first order puts it
        assert shown == [h.run_id for h in handles if h.run_id != ending]
        assert table.shown_count == 5
        table.set_filter("")
        await pilot.pause()
        assert len(_keys(table)) == 6


@asynchronous
async def test_a_sort_by_state_moves_a_run_whose_state_changes() -> None:
    handles = runs_newest_first(5, "train")
    states = {handle.run_id: RunState.RUNNING for handle in handles}
    table = RunsTable()
    async with TableApp(table).run_test(size=(100, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)
        while table.sort_column != "state":
            table.action_next_sort()
        await pilot.pause()
        newest = handles[0].run_id
        assert _keys(table)[0] == newest  # one state: newest first
        table.set_state(newest, RunState.SUCCEEDED, START.timestamp())
        # Pending, running, failed, cancelled, succeeded: the finished run goes below the others.
        await wait_until(pilot, lambda: _keys(table)[-1] == newest, "the finished run last")
        assert _keys(table)[:-1] == [h.run_id for h in handles[1:]]


@asynchronous
async def test_a_sweep_shows_under_a_state_filter_once_one_of_its_runs_comes_to_that_state() -> (
    None
):
    handles = runs_newest_first(3, "grid")
    alone = runs_newest_first(1, "solo")[0]
    sweep = Sweep(
        sweep_id="sweep-grid-20260919T120000Z-0123abcd",
        job="grid",
        backend="local",
        project="/home/user/sample",
        created_at=START,
        axes=(SweepAxis(name="LR", values=("1", "2", "3")),),
        runs=tuple(
            SweepRun(run_id=handle.run_id, parameters={"LR": str(n)})
            for n, handle in enumerate(handles, 1)
        ),
    )
    states = {handle.run_id: RunState.RUNNING for handle in (*handles, alone)}
    table = RunsTable()
    async with TableApp(table).run_test(size=(100, 20)) as pilot:
        table.show_sweeps(StoredSweeps(sweeps=(sweep,), unreadable={}))
        table.show_stored(
            StoredRuns(handles=(alone, *handles), unreadable={Path("/x.json"): "bad"}),
            states=states.get,
        )
        table.set_filter("failed")
        await pilot.pause()
        assert _keys(table) == []
        table.set_state(handles[1].run_id, RunState.FAILED, START.timestamp())
        await pilot.pause()
        assert _keys(table) == [f"sweep:{sweep.sweep_id}", handles[1].run_id]


@asynchronous
async def test_a_run_not_built_yet_moves_to_its_place_and_the_cursor_stays_on_its_run() -> None:
    handles = runs_newest_first(500, "train")
    states = {handle.run_id: RunState.RUNNING for handle in handles}
    table = RunsTable(page_rows=20)
    async with TableApp(table).run_test(size=(100, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)
        while table.sort_column != "state":
            table.action_next_sort()
        await pilot.press("down", "down", "down")
        chosen = table.highlighted_key()
        assert chosen == handles[3].run_id
        oldest = handles[-1].run_id
        assert oldest not in table.rows  # far below the built page
        table.set_state(oldest, RunState.PENDING)  # requeued: pending sorts first
        await pilot.pause()
        assert _keys(table)[0] == oldest
        assert table.highlighted_key() == chosen
        assert table.row_count < 100  # moved alone: the rest are not built for it
        table.set_state(chosen, RunState.FAILED, START.timestamp())  # the cursor's own run
        await pilot.pause()
        assert table.highlighted_key() == chosen  # followed to the bottom, built down to it
        assert table.cursor_row == 499
        rest = [h.run_id for h in handles[:-1] if h.run_id != chosen]
        assert _keys(table) == [oldest, *rest, chosen]


@asynchronous
async def test_a_run_that_leaves_a_filter_and_comes_back_is_built_at_its_new_place_only() -> None:
    handles = runs_newest_first(500, "train")
    states = {handle.run_id: RunState.PENDING for handle in handles}
    middle = handles[100].run_id  # past the rows built
    table = RunsTable(page_rows=20)
    async with TableApp(table).run_test(size=(100, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)
        while table.sort_column != "state":
            table.action_next_sort()
        table.set_filter("ing")  # pending and running
        await pilot.pause()
        assert middle not in table.rows
        table.set_state(middle, RunState.CANCELLED, START.timestamp())  # leaves the filter
        table.set_state(middle, RunState.RUNNING)  # requeued, running: after every pending run
        await pilot.pause()
        assert table.shown_count == 500
        table.action_last_row()
        await wait_until(pilot, lambda: table.row_count == 500, "every row built")
        assert _keys(table)[-1] == middle
        assert _keys(table)[:-1] == [h.run_id for h in handles if h.run_id != middle]
