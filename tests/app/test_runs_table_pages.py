"""The runs table builds its rows a page at a time, yet shows, counts, filters and sorts them all.

A store of 1,200 runs, pages of 20 rows and listings taken in slices of 100 runs stand for
100,000 runs, pages of 200 and slices of 4,000.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.support import asynchronous, wait_until
from x_tui.compute.backend import RunState
from x_tui.widgets import runs_table
from x_tui.widgets.runs_table import RunsTable

from .app_support import keep_final_states, make_app, save_handle, screen_text
from .screens_support import NOW

SIZE = (80, 24)
RUNS = 1_200
PAGE = 20
FIRST = dt.datetime(2026, 9, 1, tzinfo=dt.UTC)
OLDEST = "oldest-20260901T000000Z-000000"
"""The first run submitted: the last row, and the first by run id."""


def _run_id(index: int) -> str:
    moment = FIRST + dt.timedelta(minutes=index)
    return OLDEST if index == 0 else f"zebra-{moment:%Y%m%dT%H%M%SZ}-{index:06x}"


NEWEST = _run_id(RUNS - 1)
MIDDLE = _run_id(RUNS // 2)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 20 rows, and listings of more than 100 runs taken in slices of 100."""
    monkeypatch.setattr(runs_table, "PAGE_ROWS", PAGE)
    monkeypatch.setattr(runs_table, "LISTING_SLICE", 100)


def _store(state_dir: Path) -> None:
    final = {}
    for index in range(RUNS):
        run_id = _run_id(index)
        submitted_at = FIRST + dt.timedelta(minutes=index)
        save_handle(state_dir, run_id=run_id, job=run_id.split("-")[0], submitted_at=submitted_at)
        final[run_id] = (RunState.SUCCEEDED, submitted_at.timestamp() + 30)
    keep_final_states(state_dir, final)


async def _all_listed(app: Any, pilot: Any) -> RunsTable:
    table: RunsTable = app.main_screen.runs
    await wait_until(pilot, lambda: table.shown_count == RUNS, f"{RUNS} runs listed")
    await pilot.pause()
    table.focus()
    await wait_until(pilot, lambda: table.has_focus, "the runs table focused")
    return table


def _title(app: Any) -> str:
    return str(app.main_screen.query_one("#runs-pane").border_title)


@asynchronous
async def test_a_page_is_built_yet_every_run_is_counted(state_dir: Path) -> None:
    _store(state_dir)
    app = make_app(None, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _all_listed(app, pilot)
        assert _title(app) == f"Runs · {RUNS}"
        assert NEWEST in screen_text(app)
        assert OLDEST not in screen_text(app)
        assert table.built_count < 4 * PAGE + 24, "more rows built than the view needs"

        # Paging down builds the next rows as they come into view.
        for _ in range(6):
            await pilot.press("pagedown")
        await pilot.pause()
        below = table.highlighted_key()
        assert below is not None
        assert below != NEWEST
        assert below in screen_text(app)
        assert 6 * 18 < table.built_count < RUNS
        assert _title(app) == f"Runs · {RUNS}"


@asynchronous
async def test_end_shows_the_oldest_run(state_dir: Path) -> None:
    _store(state_dir)
    app = make_app(None, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _all_listed(app, pilot)
        await pilot.press("end")
        await wait_until(pilot, lambda: table.highlighted_key() == OLDEST, "the oldest run")
        await pilot.pause()
        assert OLDEST in screen_text(app)
        assert NEWEST not in screen_text(app)
        assert table.row_count == RUNS
        assert table.cursor_row == RUNS - 1

        await pilot.press("home")
        await pilot.pause()
        assert table.highlighted_key() == NEWEST
        assert NEWEST in screen_text(app)


@asynchronous
async def test_the_filter_finds_a_run_far_below_the_first_page(state_dir: Path) -> None:
    _store(state_dir)
    app = make_app(None, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _all_listed(app, pilot)
        assert MIDDLE not in table.rows

        await pilot.press("slash")
        await pilot.press(*MIDDLE[-6:])
        await wait_until(pilot, lambda: table.shown_count == 1, "one run matching")
        await pilot.pause()
        assert MIDDLE in screen_text(app)
        assert _title(app) == f"Runs · 1 of {RUNS} matching {MIDDLE[-6:]}"

        await pilot.press("escape")
        await wait_until(pilot, lambda: table.shown_count == RUNS, "every run again")
        await pilot.pause()
        assert _title(app) == f"Runs · {RUNS}"
        assert table.highlighted_key() == MIDDLE, "the cursor stays on the run it was on"
        assert MIDDLE in screen_text(app)
        assert table.built_count < RUNS


@asynchronous
async def test_sorting_sees_the_runs_not_built(state_dir: Path) -> None:
    _store(state_dir)
    app = make_app(None, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _all_listed(app, pilot)
        await pilot.press("o")  # by run id, A to Z: the oldest run's id comes first
        await wait_until(pilot, lambda: table.sort_column == "run", "sorted by run id")
        await pilot.pause()
        assert str(table.ordered_rows[0].key.value) == OLDEST
        assert OLDEST in screen_text(app)
        assert table.built_count < RUNS

        await pilot.press("O")  # Z to A: the newest run's id comes first
        await pilot.pause()
        assert str(table.ordered_rows[0].key.value) == NEWEST
        assert OLDEST not in screen_text(app)


@asynchronous
async def test_a_new_run_comes_in_at_the_top_and_the_count_follows(state_dir: Path) -> None:
    _store(state_dir)
    app = make_app(None, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _all_listed(app, pilot)
        late = "late-20261001T000000Z-abcdef"
        save_handle(
            state_dir,
            run_id=late,
            job="late",
            submitted_at=FIRST + dt.timedelta(days=30),
        )
        await wait_until(pilot, lambda: table.shown_count == RUNS + 1, "the late run listed")
        await pilot.pause()
        assert table.highlighted_key() == late
        assert late in screen_text(app)
        assert _title(app) == f"Runs · {RUNS + 1}"
        assert table.built_count < RUNS


@asynchronous
async def test_a_new_run_sorted_among_built_rows_is_built_at_its_place(state_dir: Path) -> None:
    _store(state_dir)
    app = make_app(None, poll=False, clock=NOW.timestamp)
    async with app.run_test(size=SIZE) as pilot:
        table = await _all_listed(app, pilot)
        await pilot.press("end")  # every row built
        await wait_until(pilot, lambda: table.built_count == RUNS, "every row built")
        await pilot.press("o")  # by run id, A to Z
        await pilot.press("home")
        await pilot.pause()
        assert str(table.ordered_rows[0].key.value) == OLDEST

        first = "alpha-20261001T000000Z-abcdef"
        save_handle(state_dir, run_id=first, job="alpha", submitted_at=FIRST)
        await wait_until(pilot, lambda: first in table.rows, "the new run built")
        await pilot.pause()
        assert str(table.ordered_rows[0].key.value) == first
        assert first in screen_text(app)
        assert _title(app) == f"Runs · {RUNS + 1}"
