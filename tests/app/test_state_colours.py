"""Run states take their colours from the theme: the runs table's cells and the run header's badge
follow a change of theme, and both come from one set of component classes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from textual.color import Color

from tests.support import asynchronous, wait_until
from x_tui.app.run_header import RunHeader
from x_tui.app.run_screen import RunScreen
from x_tui.compute.backend import RunState

from .app_support import keep_final_states, make_app, save_handle

SUBMITTED = dt.datetime(2026, 9, 19, 11, tzinfo=dt.UTC)


def _theme_colour(app: object, variable: str) -> Color:
    return Color.parse(app.theme_variables[variable])  # type: ignore[attr-defined]


def _cell_colour(app: object, run_id: str) -> Color:
    cell = app.main_screen.runs.get_cell(run_id, "state")  # type: ignore[attr-defined]
    assert cell.style.color is not None, cell
    return Color.from_rich_color(cell.style.color)


@asynchronous
async def test_state_cells_and_the_header_badge_follow_the_theme(state_dir: Path) -> None:
    done, failed = "quick-20260919T110000Z-a1a1a1", "quick-20260919T110500Z-b2b2b2"
    for run_id in (done, failed):
        save_handle(state_dir, run_id=run_id, job="quick", submitted_at=SUBMITTED)
    keep_final_states(
        state_dir,
        {
            done: (RunState.SUCCEEDED, SUBMITTED.timestamp() + 60),
            failed: (RunState.FAILED, SUBMITTED.timestamp() + 60),
        },
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 2, "the runs")
        await wait_until(
            pilot, lambda: "succeeded" in table.get_cell(done, "state").plain, "the state"
        )
        seen = set()
        for theme in ("textual-dark", "nord", "gruvbox"):
            app.theme = theme
            await pilot.pause()
            success, error = _theme_colour(app, "success"), _theme_colour(app, "error")
            seen.add(success)
            await wait_until(
                pilot, lambda green=success: _cell_colour(app, done) == green, f"{theme}'s green"
            )
            assert _cell_colour(app, failed) == error
        assert len(seen) == 3  # three themes, three greens: the cells followed each
        await app.push_screen(RunScreen(next(h for h in app.monitor.stored.handles)))
        header = app.screen.query_one(RunHeader)
        badge = header.badge_style(RunState.FAILED)
        assert badge.reverse
        assert badge.color is not None
        assert Color.from_rich_color(badge.color) == _theme_colour(app, "error")
