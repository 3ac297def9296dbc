"""A table row drawn before its columns were measured is drawn again at their measured widths."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from x_tui.widgets.measured_table import MeasuredTable


class _Tables(App[None]):
    def __init__(self, table: DataTable[Text]) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        self.table.add_columns("task", "status")
        yield self.table


async def _first_row_drawn_early(table: DataTable[Text]) -> str:
    """The row as the screen shows it, when a frame was drawn before the table was idle."""
    app = _Tables(table)
    async with app.run_test(size=(60, 6)) as pilot:
        await pilot.pause()
        table.add_row(Text("  ↳ attempt 2"), Text("failed"))
        table.render_line(1)  # a frame drawn before the table's idle measured the new row
        await pilot.pause(0.1)
        await pilot.pause()
        return app.screen._compositor.render_strips()[1].text


def test_a_row_drawn_before_it_was_measured_is_drawn_again_in_full() -> None:
    assert "  ↳ attempt 2  failed" in asyncio.run(_first_row_drawn_early(MeasuredTable()))


def test_textuals_own_table_keeps_such_a_row_cut() -> None:
    """Why :class:`MeasuredTable` exists: when this fails, ``DataTable`` needs it no more."""
    row = asyncio.run(_first_row_drawn_early(DataTable()))
    assert "  ↳ attempt 2" not in row
    assert "  ↳ " in row
