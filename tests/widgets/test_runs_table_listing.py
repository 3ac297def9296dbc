"""A listing of many runs is taken into the runs table a slice per turn of the event loop: keys and
frames go on meanwhile, the table ends holding what a listing taken at once makes it hold, and a
state change, a newer listing or a new filter that comes meanwhile is not lost."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from textual import events
from textual.widgets import DataTable

from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.widgets.run_rows import RunRow
from x_tui.widgets.runs_table import RunsTable

from .table_support import START, TableApp, runs_newest_first

HEAD = 20
"""The newest runs, listed first (as the store's head is)."""


def _stored(handles: tuple[RunHandle, ...], **unreadable: str) -> StoredRuns:
    return StoredRuns(
        handles=handles,
        unreadable={Path(f"/store/{name}.json"): reason for name, reason in unreadable.items()},
    )


class _Table(TableApp):
    """The table alone; notes when a listing is in and when the cursor moves."""

    def __init__(self, table: RunsTable) -> None:
        super().__init__(table)
        self.happened: list[str] = []

    def on_runs_table_listed(self) -> None:
        self.happened.append("listed")

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        self.happened.append(f"row {message.cursor_row}")


def _made(table: RunsTable) -> dict[str, RunRow]:
    """The rows made so far of the listing being taken (none when none is)."""
    taking = table._listing
    return taking.rows if taking is not None else {}


async def _until_made(
    app: _Table, table: RunsTable, run_id: str, made: Callable[[RunRow], bool] = bool
) -> None:
    """Let the listing being taken go on until it has made ``run_id``'s row (and ``made`` holds
    of it), and check it is not in yet."""
    for _ in range(2000):
        row = _made(table).get(run_id)
        if row is not None and made(row):
            break
        await asyncio.sleep(0)
    else:
        raise AssertionError(f"the listing never made {run_id}'s row")
    assert "listed" not in app.happened


async def _until_listed(app: _Table, count: int = 1) -> None:
    for _ in range(2000):
        if app.happened.count("listed") >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never listed: {app.happened[-5:]}")


async def _every_row(table: RunsTable) -> list[tuple[str, str]]:
    """Every row's key and state cell, in the table's order (each one built)."""
    table.action_last_row()
    for _ in range(2000):
        if table.row_count == table.shown_count:
            break
        await asyncio.sleep(0.005)
    return [
        (str(row.key.value), table.get_cell(row.key, "state").plain) for row in table.ordered_rows
    ]


def test_a_listing_taken_in_slices_ends_as_one_taken_at_once() -> None:
    handles = runs_newest_first(300, "train", "eval")
    states = {handle.run_id: RunState.SUCCEEDED for handle in handles[::3]}
    stored = _stored(handles, bad="not JSON", worse="too large")

    async def shown(listing_slice: int) -> tuple[int, list[tuple[str, str]]]:
        table = RunsTable(listing_slice=listing_slice)
        app = _Table(table)
        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]), states=states.get)
            table.show_stored(stored, states=states.get)
            count_at_once = table.shown_count
            if listing_slice < len(handles):
                await _until_listed(app)
            await pilot.pause()
            return count_at_once, await _every_row(table)

    async def scenario() -> None:
        at_once_count, at_once = await shown(10_000)
        sliced_count, sliced = await shown(HEAD + 5)
        assert at_once_count == 302
        assert sliced_count == HEAD  # the table shows what it held until the listing is in
        assert sliced == at_once
        assert len(sliced) == 302
        assert sum(state == "✓ succeeded" for _, state in sliced) == 100

    asyncio.run(scenario())


def test_a_state_that_changes_while_a_listing_is_taken_is_shown() -> None:
    handles = runs_newest_first(200, "train")
    made_early, oldest = handles[HEAD + 3].run_id, handles[-1].run_id

    async def scenario() -> None:
        table = RunsTable(listing_slice=HEAD)  # the head taken at once
        app = _Table(table)
        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]))
            assert table.shown_count == HEAD
            table.set_filter("failed")  # the filter sees the state
            table.show_stored(_stored(handles))
            # A run whose row the listing has not made yet...
            table.set_state(oldest, RunState.FAILED, START.timestamp())
            # ...and one whose row it made in a slice already (not shown then: no state).
            await _until_made(app, table, made_early)
            table.set_state(made_early, RunState.FAILED, START.timestamp())
            await _until_listed(app)
            await pilot.pause()
            rows = await _every_row(table)
        assert [key for key, _ in rows] == [made_early, oldest]
        assert {state for _, state in rows} == {"✗ failed"}

    asyncio.run(scenario())


def test_a_run_placed_under_a_filter_that_leaves_it_while_the_listing_is_taken_is_not_shown() -> (
    None
):
    handles = runs_newest_first(200, "train")
    leaves, stays = handles[HEAD + 3].run_id, handles[-1].run_id

    async def scenario() -> None:
        table = RunsTable(listing_slice=HEAD)  # the head taken at once
        app = _Table(table)
        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]))
            table.set_filter("failed")
            failed = {leaves: RunState.FAILED, stays: RunState.FAILED}
            table.show_stored(_stored(handles), states=failed.get)
            # Its row is made, and placed as shown (failed), in a slice...
            await _until_made(app, table, leaves)
            # ...then it is run again elsewhere and succeeds before the listing is in.
            table.set_state(leaves, RunState.SUCCEEDED, START.timestamp())
            await _until_listed(app)
            await pilot.pause()
            rows = await _every_row(table)
        assert rows == [(stays, "✗ failed")]
        assert table.shown_count == 1

    asyncio.run(scenario())


def test_a_newer_listing_takes_the_place_of_one_still_being_taken() -> None:
    older = runs_newest_first(200, "alpha")
    newer = runs_newest_first(150, "beta")

    async def scenario() -> None:
        table = RunsTable(listing_slice=5)
        app = _Table(table)
        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(older))
            for _ in range(10):
                await asyncio.sleep(0)
            table.show_stored(_stored(newer))
            await _until_listed(app)
            await asyncio.sleep(0.2)
            await pilot.pause()
            rows = await _every_row(table)
            assert app.happened.count("listed") == 1
        assert [key for key, _ in rows] == [handle.run_id for handle in newer]

    asyncio.run(scenario())


def test_a_filter_set_while_a_listing_is_taken_holds_for_every_run() -> None:
    handles = runs_newest_first(200, "alpha", "beta")

    async def scenario() -> None:
        table = RunsTable(listing_slice=5)
        app = _Table(table)
        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]))
            table.show_stored(_stored(handles))
            for _ in range(10):
                await asyncio.sleep(0)
            table.set_filter("beta")
            await _until_listed(app)
            await pilot.pause()
            rows = await _every_row(table)
        assert [key for key, _ in rows] == [h.run_id for h in handles if h.job == "beta"]

    asyncio.run(scenario())


def test_a_key_pressed_while_a_listing_is_taken_moves_the_cursor_before_it_is_in() -> None:
    handles = runs_newest_first(400, "train")

    async def scenario() -> None:
        table = RunsTable(listing_slice=1)
        app = _Table(table)
        pressed: list[bool] = []
        early_states: dict[str, RunState] = {}

        def state(run_id: str) -> RunState | None:
            if not pressed and run_id == handles[HEAD + 2].run_id:  # in the listing's third slice
                pressed.append(True)
                app.post_message(events.Key("down", None))
            return early_states.get(run_id)

        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]))  # (taken in slices of one too)
            await _until_listed(app)
            table.focus()
            await pilot.pause()
            app.happened.clear()
            table.show_stored(_stored(handles), states=state)
            await _until_listed(app)
            await pilot.pause()
        assert pressed
        assert app.happened.index("row 1") < app.happened.index("listed")

    asyncio.run(scenario())


def test_a_state_that_changes_for_a_run_whose_handle_the_listing_replaces_is_shown() -> None:
    handles = runs_newest_first(200, "train")
    shown = handles[1]
    rewritten = replace(shown, details={**shown.details, "run_dir": "/nonexistent/elsewhere"})
    listing = (handles[0], rewritten, *handles[2:])

    async def scenario() -> None:
        table = RunsTable(listing_slice=HEAD)  # the head taken at once, then shown
        app = _Table(table)
        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]))
            await pilot.pause()
            assert table.highlighted_key() == handles[0].run_id
            table.show_stored(_stored(listing))
            # The listing has made the changed handle's row; the table still shows the old one.
            await _until_made(app, table, shown.run_id, lambda row: row.handle is rewritten)
            table.set_state(shown.run_id, RunState.FAILED, START.timestamp())
            await _until_listed(app)
            await pilot.pause()
            rows = dict(await _every_row(table))
        assert rows[shown.run_id] == "✗ failed"

    asyncio.run(scenario())


def test_a_key_pressed_while_a_listing_is_taken_moves_the_cursor_within_a_slice_or_two() -> None:
    """The key's way (the app, the screen, the table and the cursor's message back, a turn of the
    event loop each) is gone within a slice or two (a turn or two may wait on others), not a
    slice a step (seven slices late)."""
    handles = runs_newest_first(400, "train")

    async def scenario() -> tuple[int, int]:
        table = RunsTable(listing_slice=1)
        pressed_at: list[int] = []
        moved_at: list[int] = []

        class Noting(_Table):
            def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
                if pressed_at and not moved_at:  # (every run made, once the listing is in)
                    moved_at.append(len(_made(table)) if table.taking_listing else len(handles))

        app = Noting(table)

        def state(run_id: str) -> RunState | None:
            if not pressed_at and run_id == handles[HEAD + 2].run_id:
                pressed_at.append(len(_made(table)))
                app.post_message(events.Key("down", None))
            return None

        async with app.run_test(size=(120, 30)) as pilot:
            table.show_stored(_stored(handles[:HEAD]))
            await _until_listed(app)
            table.focus()
            await pilot.pause()
            table.show_stored(_stored(handles), states=state)
            await _until_listed(app, 2)
        return pressed_at[0], moved_at[0]

    pressed, moved = asyncio.run(scenario())
    assert moved - pressed <= 3, f"the key moved the cursor {moved - pressed} slices late"
