"""The reference of the benchmarks that open x-tui: a bare Textual app with the same widgets.

Two panes (a static, an option list and a static; an input, a data table with the runs table's
columns and a static) and a footer, no data unless asked for, nothing read. Textual is imported
when the app is made, in the process that measures it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def bare_app(*, rows: int = 0, on_ready: Callable[[Any], None] | None = None) -> Any:
    """The bare app, its table holding ``rows`` rows of text; ``on_ready(app)`` once its first
    frame is drawn."""
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.containers import Vertical
    from textual.widgets import DataTable, Footer, Input, OptionList, Static

    class Bare(App[None]):
        CSS = "Screen { layout: horizontal; } Vertical { border: round $border; }"

        def compose(self) -> ComposeResult:
            with Vertical():
                yield Static()
                yield OptionList()
                yield Static()
            with Vertical():
                yield Input()
                table: DataTable[Text] = DataTable(cursor_type="row")
                for name in ("Run", "Job", "Backend", "State", "Age", "Took"):
                    table.add_column(name)
                for row in range(rows):
                    table.add_row(*(Text(f"{column} {row}") for column in "abcdef"))
                yield table
                yield Static()
            yield Footer()

        def on_ready(self) -> None:
            if on_ready is not None:
                on_ready(self)

    return Bare()
