"""The runs table draws its text cells itself (``x_tui.widgets.table_cells``), to exactly the
segments Textual's ``DataTable`` draws for them: every character, style, link and mouse target."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rich.console import Console
from rich.padding import Padding
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.renderables.styled import Styled
from textual.widgets import DataTable

from tests.support import local_handle
from x_tui.compute.backend import RunState
from x_tui.compute.store import StoredRuns
from x_tui.widgets.runs_table import RunsTable
from x_tui.widgets.table_cells import TextCells

START = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)

CELLS = [
    Text(""),
    Text("job3"),
    Text("✓ succeeded", style="green"),
    Text("⚡ preempted", style="bold yellow"),
    Text("a[b]c [/x]", style="dim"),
    Text("x" * 40),
    Text("train-20260919T120000Z-0a1b2c"),
    Text("two\nlines"),
    Text("tab\there"),
    Text("漢字テスト漢字テスト"),
    Text("right", justify="right"),
    Text("ell" * 10, overflow="ellipsis"),
    Text.assemble(("a", "red"), ("b", Style(link="https://example.com")), "c"),
    Text("end", end=""),
    Text("left", justify="left", style="on blue"),
    Text("centre", justify="center", style="italic"),
    Text.assemble(("styled", "bold"), " and spans", style="on #202020"),
    Text("", style="dim"),
    Text("x", style=Style(link="https://example.com/x")),
]
PRE_STYLES = [
    Style(),
    Style.parse("white on #101010") + Style.from_meta({"row": 3, "column": 2}),
    Style.parse("reverse"),
]
POST_STYLES = [Style.null(), Style.parse("bold"), Style(bgcolor="red")]


def test_each_text_cell_is_drawn_as_datatable_draws_it() -> None:
    console = Console(width=120, color_system="truecolor", force_terminal=True)
    cells = TextCells(console, console.options)
    drawn = 0
    for width in range(1, 48):
        for cell in CELLS:
            for pre in PRE_STYLES:
                for post in POST_STYLES:
                    for padding in (0, 1, 2):
                        lines = cells.render(cell, width, padding, pre, post)
                        if lines is None:
                            assert width <= 2 * padding  # no room for text: DataTable draws it
                            continue
                        options = console.options.update_dimensions(width, 1).update(no_wrap=True)
                        expected = console.render_lines(
                            Styled(Padding(cell, (0, padding)), pre_style=pre, post_style=post),
                            options,
                        )
                        assert lines == expected, (width, padding, cell.plain, pre, post)
                        drawn += 1
    assert drawn > 10_000


def test_a_text_that_asks_to_wrap_is_left_to_datatable() -> None:
    console = Console(width=80)
    assert (
        TextCells(console, console.options).render(
            Text("a b", no_wrap=False), 5, 1, Style(), Style()
        )
        is None
    )


class _Table(App[None]):
    def compose(self) -> ComposeResult:
        yield RunsTable(clock=lambda: START.timestamp() + 3600)


@contextlib.asynccontextmanager
async def _thirty_runs() -> AsyncIterator[tuple[Pilot[None], RunsTable]]:
    """A runs table of thirty runs in every state, drawn at 120x24 (every column shown)."""
    app = _Table()
    async with app.run_test(size=(120, 24)) as pilot:
        table = app.query_one(RunsTable)
        _show_thirty_runs(table)
        await pilot.pause()
        yield pilot, table


def _show_thirty_runs(table: RunsTable) -> None:
    jobs = ("train", "evaluate-a-model-with-a-long-name", "x")
    moments = [START + dt.timedelta(minutes=index) for index in range(30)]
    handles = tuple(
        local_handle(f"{jobs[index % 3]}-{moment:%Y%m%dT%H%M%SZ}-{index:06x}", moment)
        for index, moment in enumerate(moments)
    )
    states = {
        handle.run_id: list(RunState)[index % len(RunState)] for index, handle in enumerate(handles)
    }
    table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)


def test_every_cell_of_the_runs_table_is_drawn_as_datatable_draws_it() -> None:
    """Every visible cell, under the cursor, the hover and neither, focused and not."""

    async def scenario() -> None:
        async with _thirty_runs() as (pilot, table):
            app = table.app
            table.hover_coordinate = table.cursor_coordinate.down()
            compared = 0
            for focused in (True, False):
                if focused:
                    table.focus()
                else:
                    app.set_focus(None)
                await pilot.pause()
                base = table.rich_style
                for row in range(min(table.row_count, 20)):
                    for column, width in enumerate(
                        c.get_render_width(table) for c in table.ordered_columns
                    ):
                        for cursor, hover in ((False, False), (True, False), (False, True)):
                            table._cell_render_cache.clear()
                            ours = table._render_cell(row, column, base, width, cursor, hover)
                            table._cell_render_cache.clear()
                            textuals = DataTable._render_cell(
                                table, row, column, base, width, cursor, hover
                            )
                            assert ours == textuals, (row, column, cursor, hover, focused)
                            compared += 1
                # The header row is Textual's own.
                header = table._render_cell(-1, 0, base, 10)
                assert "Run" in "".join(segment.text for segment in header[0])
            assert compared >= 2 * 20 * 5 * 3

    asyncio.run(scenario())


def test_a_drawing_of_the_table_works_out_its_style_once_and_draws_what_datatable_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``DataTable`` asks for the table's style for each line it draws; each ask walks every
    ancestor's styles."""
    asked: list[int] = []
    real = DataTable.rich_style

    def counted(self: DataTable[Text]) -> Any:
        asked.append(1)
        return real.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(DataTable, "rich_style", property(counted))

    async def scenario() -> None:
        async with _thirty_runs() as (_pilot, table):
            region = table.region.reset_offset
            caches = (table._line_cache, table._row_render_cache, table._cell_render_cache)
            for cache in caches:  # every line drawn afresh, with nothing else between
                cache.clear()
            table._styles_cache.clear()
            asked.clear()
            ours = table.render_lines(region)
            assert len(asked) == 1, f"the style was worked out {len(asked)} times for one drawing"
            for cache in caches:
                cache.clear()
            table._styles_cache.clear()
            textuals = DataTable.render_lines(table, region)
            assert len(asked) > 20  # Textual's own drawing asks for each line
            assert len(ours) == region.height > 20
            assert [strip.text for strip in ours] == [strip.text for strip in textuals]
            assert ours == textuals

    asyncio.run(scenario())
