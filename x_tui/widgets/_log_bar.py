"""The log view's input bar: type a search or a filter, toggle regex and case, submit or close;
or type the file to save the lines shown to.

The bar's mode and options are reactives; the mode label and the option toggles are bound to
them with ``data_bind`` and redraw themselves when they change, so nothing updates them by hand.

It posts :class:`SearchBar.Submitted` with a :class:`SearchQuery` (or ``None`` for an empty
filter, which clears it), :class:`SearchBar.SaveSubmitted` with the path typed, and
:class:`SearchBar.Closed`; it never touches the view itself.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Static

from x_tui.compute.logindex_search import SearchQuery

Mode = Literal["search", "filter", "save"]
"""What the bar asks for."""

MODE_LABELS: dict[Mode, str] = {"search": "/", "filter": "&", "save": "save to"}
"""What the bar shows before the input, by mode."""

PLACEHOLDERS: dict[Mode, str] = {
    "search": "text to find",
    "filter": "show lines matching",
    "save": "file to write",
}
"""The input's placeholder, by mode."""


class ModeLabel(Static):
    """What the bar asks for (``/``, ``&``, ``save to``), bound to the bar's mode."""

    mode: reactive[Mode] = reactive[Mode]("search")

    def watch_mode(self, mode: Mode) -> None:
        """Show the mode's label."""
        self.update(Text(MODE_LABELS[mode]))


class BarOptions(Static):
    """The regex and case toggles (or, when saving, how to finish), bound to the bar's."""

    mode: reactive[Mode] = reactive[Mode]("search")
    regex: reactive[bool] = reactive(False)
    match_case: reactive[bool] = reactive(False)

    def watch_mode(self) -> None:
        """Show the toggles of the new mode."""
        self.update(self.options_text())

    def watch_regex(self) -> None:
        """Show the regex toggle's new state."""
        self.update(self.options_text())

    def watch_match_case(self) -> None:
        """Show the case toggle's new state."""
        self.update(self.options_text())

    def options_text(self) -> Text:
        """The toggles, each bright when on; when saving, how to finish."""
        if self.mode == "save":
            return Text("enter saves, escape gives up", style="dim")
        options = Text()
        options.append(" .* ", style="bold reverse" if self.regex else "dim")
        options.append(" ")
        options.append(" Aa ", style="bold reverse" if self.match_case else "dim")
        options.append("  ^r ^t", style="dim")
        return options


class SearchBar(Horizontal):
    """One input line for a search (``/``) or a filter (``&``).

    | Key | Action |
    | :- | :- |
    | `enter` | Apply the search or filter. |
    | `escape` | Close the bar; nothing changes. |
    | `ctrl+r` | Toggle regular expression. |
    | `ctrl+t` | Toggle match case. |
    """

    BINDINGS = [
        Binding("escape", "close", "Close", id="log.bar.close"),
        Binding("ctrl+r", "toggle_regex", "Regex", id="log.bar.regex"),
        Binding("ctrl+t", "toggle_case", "Match case", id="log.bar.case"),
    ]

    DEFAULT_CSS = """
    SearchBar {
        height: 1;
        display: none;
        background: $panel;
        &.-open { display: block; }
        & > .search-bar--mode { width: auto; padding: 0 1; text-style: bold; }
        & > Input { width: 1fr; height: 1; border: none; padding: 0; background: $panel; }
        & > .search-bar--options { width: auto; padding: 0 1; }
    }
    """

    mode: reactive[Mode] = reactive[Mode]("search")
    """What the bar asks for now."""

    regex: reactive[bool] = reactive(False)
    """Whether the text is a regular expression."""

    match_case: reactive[bool] = reactive(False)
    """Whether letter case must match."""

    class Submitted(Message):
        """The user asked for a search or filter (``query`` is ``None`` for an empty filter)."""

        def __init__(self, mode: Mode, query: SearchQuery | None) -> None:
            """Record what was asked.

            Args:
                mode: ``"search"`` or ``"filter"``.
                query: The query, or ``None`` when the input was empty.
            """
            super().__init__()
            self.mode: Mode = mode
            self.query = query

    class SaveSubmitted(Message):
        """The user typed the file to save the lines shown to."""

        def __init__(self, path: str) -> None:
            """Record the path typed.

            Args:
                path: The text of the input (not yet checked).
            """
            super().__init__()
            self.path = path

    class Closed(Message):
        """The bar closed without a query."""

    def __init__(self, *, id: str | None = None) -> None:
        """Create a closed bar.

        Args:
            id: The widget's id.
        """
        super().__init__(id=id)

    def compose(self) -> ComposeResult:
        """A mode label, the input, the option toggles (the labels bound to the bar's state)."""
        yield ModeLabel(classes="search-bar--mode").data_bind(SearchBar.mode)
        yield Input(compact=True, select_on_focus=False)
        yield BarOptions(classes="search-bar--options").data_bind(
            SearchBar.mode, SearchBar.regex, SearchBar.match_case
        )

    def open(self, mode: Mode, query: SearchQuery | None, *, text: str = "") -> None:
        """Show the bar for ``mode``, starting from the last query of that mode.

        Args:
            mode: ``"search"``, ``"filter"`` or ``"save"``.
            query: The query in force, if any (its text and options are shown).
            text: The input's text in ``"save"`` mode (the path offered).
        """
        self.mode = mode
        if query is not None:
            self.regex = query.regex
            self.match_case = not query.ignore_case
        field = self.query_one(Input)
        field.value = query.text if query is not None else text
        field.cursor_position = len(field.value)
        field.placeholder = PLACEHOLDERS[mode]
        self.add_class("-open")
        field.focus()

    def close(self) -> None:
        """Hide the bar."""
        self.remove_class("-open")

    def action_close(self) -> None:
        """Close without changing anything."""
        self.close()
        self.post_message(self.Closed())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Regex and case mean nothing while asking for a file."""
        if action in ("toggle_regex", "toggle_case"):
            return self.mode != "save"
        return True

    def action_toggle_regex(self) -> None:
        """Toggle whether the text is a regular expression."""
        self.regex = not self.regex

    def action_toggle_case(self) -> None:
        """Toggle whether case must match."""
        self.match_case = not self.match_case

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Post the query and close."""
        event.stop()
        text = event.value
        if self.mode == "save":
            self.close()
            self.post_message(self.SaveSubmitted(text))
            return
        query = (
            SearchQuery(text=text, regex=self.regex, ignore_case=not self.match_case)
            if text
            else None
        )
        self.close()
        self.post_message(self.Submitted(self.mode, query))
