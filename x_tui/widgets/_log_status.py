"""The log view's status line: follow state and "+N new lines", search and filter counts, notes.

Every value the line shows is a reactive of :class:`LogStatus`, bound with ``data_bind`` to the
same-named reactive of the log view, so the line redraws itself when one changes and nothing
updates it by hand. :func:`search_count` and :func:`filter_count` give the view's values for the
search and the filter.

Built as ``rich.text.Text``; the user's query is shown through ``safe_text`` like any other text.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from x_tui.widgets._log_finder import Finder
from x_tui.widgets.safe_text import safe_text


@dataclass(frozen=True, slots=True)
class SearchCount:
    """What the status line says of the search (``/``).

    Attributes:
        text: The query typed (untrusted: shown through ``safe_text``).
        rank: Which match the current line is, from 1; 0 when it is none.
        total: Matches found so far.
        running: Whether the search is still going.
    """

    text: str
    rank: int
    total: int
    running: bool


@dataclass(frozen=True, slots=True)
class FilterCount:
    """What the status line says of the filter (``&``).

    Attributes:
        text: The query typed (untrusted: shown through ``safe_text``).
        lines: Matching lines found so far.
        context: Lines shown around each match.
        running: Whether the filter is still going.
    """

    text: str
    lines: int
    context: int
    running: bool


def search_count(finder: Finder, current: int | None) -> SearchCount | None:
    """What the status line says of the search, if there is one.

    Args:
        finder: The view's search, filter and error state.
        current: The view's current line, if any (its rank among the matches is shown).

    Returns:
        The count, or ``None`` without a search.
    """
    search = finder.search
    if search.query is None:
        return None
    rank = search.position(current) if current is not None else 0
    return SearchCount(search.query.text, rank, len(search.lines), search.running)


def filter_count(finder: Finder) -> FilterCount | None:
    """What the status line says of the filter, if there is one.

    Args:
        finder: The view's search, filter and error state.

    Returns:
        The count, or ``None`` without a filter.
    """
    found = finder.filter
    if found.query is None:
        return None
    return FilterCount(found.query.text, len(found.lines), finder.rows.context, found.running)


class LogStatus(Static):
    """One line under the log: each value a reactive, bound to the log view's with ``data_bind``."""

    shown: reactive[bool] = reactive(False)
    """Whether a log is shown."""
    following: reactive[bool] = reactive(True)
    """Whether the view sticks to the end."""
    new_lines: reactive[int] = reactive(0)
    """Lines added while paused."""
    flash: reactive[Text | None] = reactive[Text | None](None)
    """The answer to the last key, if any."""
    search: reactive[SearchCount | None] = reactive[SearchCount | None](None)
    """The search and its count, if any."""
    filter: reactive[FilterCount | None] = reactive[FilterCount | None](None)
    """The filter and its count, if any."""
    looking_for_errors: reactive[bool] = reactive(False)
    """Whether an error jump waits for the error search."""
    indexing: reactive[float | None] = reactive[float | None](None)
    """How far indexing has got, while it has not finished."""
    wrap: reactive[bool] = reactive(False)
    """Whether long lines are wrapped."""
    removed: reactive[int] = reactive(0)
    """Control sequences removed from the lines shown so far."""

    def render(self) -> Text:
        """What the status line says now (cut with an ellipsis when the view is narrow)."""
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if not self.shown:
            return text.append("no log", style="dim")
        if self.following:
            text.append("● following", style="bold green")
        else:
            text.append("‖ paused", style="bold yellow")
            if self.new_lines:
                text.append(f" +{self.new_lines:,} new lines", style="bold")
            text.append(" (end: follow)", style="dim")
        if self.flash is not None:  # the answer to the last key: first, so a narrow view shows it
            text.append(" │ ", style="dim")
            text.append_text(self.flash)
        search = self.search
        if search is not None:
            text.append(" │ / ", style="dim")
            text.append_text(safe_text(search.text))
            counter = (
                f" {search.rank}/{search.total:,}"
                if search.rank
                else (f" {search.total:,} matches")
            )
            text.append(counter + ("…" if search.running else ""), style="bold")
        found = self.filter
        if found is not None:
            text.append(" │ & ", style="dim")
            text.append_text(safe_text(found.text))
            running = "…" if found.running else ""
            text.append(f" {found.lines:,} lines ±{found.context}{running}", style="bold")
        if self.looking_for_errors:
            text.append(" │ looking for errors…", style="dim")
        if self.indexing is not None:
            text.append(f" │ indexing {self.indexing:.0%}", style="dim")
        if self.wrap:
            text.append(" │ wrap", style="dim")
        if self.removed:
            text.append(f" │ ⚠ {self.removed:,} control sequences removed", style="yellow")
        return text
