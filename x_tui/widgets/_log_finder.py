"""What the log view's ``/``, ``n``, ``N``, ``&``, ``+``, ``-``, ``e`` and ``E`` keys act on.

A :class:`Finder` owns three background searches over the view's index (the user's search, the
filter, and the errors) and the filtered rows, and moves the view's lines to matches. It is the
state behind those keys; the view owns the keys, the file and the status line, and is told
(``changed``) after every change of what that line shows from here.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from x_tui.compute.logindex import LogIndex
from x_tui.compute.logindex_search import ERROR_QUERY, SearchQuery
from x_tui.widgets._log_lines import LogLines
from x_tui.widgets._log_search import FilterRows, LineSearch

DEFAULT_CONTEXT = 2
"""Lines shown before and after each match when filtering."""

MAX_CONTEXT = 20
"""The most context lines ``+`` gives."""


class Finder:
    """Search, filter and error jumps over one log view's lines."""

    def __init__(
        self, owner: Widget, lines: Callable[[], LogLines], changed: Callable[[], None]
    ) -> None:
        """Start with nothing searched.

        Args:
            owner: The widget whose thread workers search.
            lines: Gives the view's lines (they exist once the view is composed).
            changed: Called when what the status line shows may have changed.
        """
        self._lines = lines
        self._changed = changed
        self.search = LineSearch(owner, "search", self._search_updated)
        """The user's search (``/``)."""
        self.filter = LineSearch(owner, "filter", self._filter_updated)
        """The filter (``&``)."""
        self.errors = LineSearch(owner, "errors", self._errors_updated)
        """Errors and tracebacks (``e``, ``E``), searched on first use."""
        self.rows = FilterRows(DEFAULT_CONTEXT)
        """Rows shown while filtering."""
        self._flash: Text | None = None
        self.looking_for_errors = False
        """Whether an error jump waits for the search to get there."""
        self._index: LogIndex | None = None
        self._filter_seen = 0
        self._search_jump = False
        self._error_step = 0

    @property
    def flash(self) -> Text | None:
        """A short note for the status line (cleared by the next key)."""
        return self._flash

    @flash.setter
    def flash(self, note: Text | None) -> None:
        self._flash = note
        self._changed()

    # -- the file -----------------------------------------------------------------------------

    def forget(self, index: LogIndex | None) -> None:
        """Another file is shown: stop every search and forget its results."""
        for search in (self.search, self.filter, self.errors):
            search.clear()
        self._index = index
        self.rows.rebuild((), 0)
        self._filter_seen = 0
        self._search_jump = False
        self._error_step = 0
        self.looking_for_errors = False
        self._flash = None
        self._changed()

    def renumbered(self) -> None:
        """Line numbers changed (a reset, or the lines before the tail became known)."""
        index = self._index
        assert index is not None
        for search in (self.search, self.filter, self.errors):
            if search.active:
                search.restart(index)
        if self.filter.active:
            self._show_rows(keep_matches=False)

    def grown(self) -> None:
        """Lines were appended: search them, and show the context due after the last match."""
        index = self._index
        assert index is not None
        if self.filter.active:
            self.rows.grow(index.line_count)
            self._lines().rows = self.rows.rows
        for search in (self.search, self.filter, self.errors):
            search.tick()

    # -- search -------------------------------------------------------------------------------

    def start_search(self, query: SearchQuery | None) -> None:
        """Search for ``query`` (``None`` clears the search) and show the nearest match.

        Raises:
            InvalidSearchError: If the query is not a valid pattern.
        """
        lines = self._lines()
        if query is None or self._index is None:
            self.search.clear()
            lines.pattern = None
        else:
            self.search.start(self._index, query)
            lines.pattern = self.search.pattern
            self._search_jump = True
        lines.restyle()
        self._changed()

    def step_match(self, step: int) -> None:
        """Show the next (``1``) or previous (``-1``) match, wrapping around."""
        if not self.search.active:
            self.flash = Text("no search: press / first", style="yellow")
            return
        anchor = self._anchor()
        target = self.search.after(anchor) if step > 0 else self.search.before(anchor)
        if target is None and self.search.lines:
            target = self.search.lines[0] if step > 0 else self.search.lines[-1]
            self.flash = Text("search wrapped", style="yellow")
        if target is not None:
            self._show(target)
        self._changed()

    def _search_updated(self, search: LineSearch) -> None:
        if self._search_jump:
            # The first match at or below the top line, else the nearest above it; while
            # following, the latest match (known once the search is done).
            lines = self._lines()
            following = lines.following
            anchor = lines.row_count_lines() if following else self._anchor()
            target = None if following else search.at_or_after(anchor)
            if target is None and not search.running:
                target = search.before(anchor)
                if target is None:
                    self.flash = Text("no match", style="yellow")
                self._search_jump = False
            if target is not None:
                self._search_jump = False
                self._show(target)
        self._lines().refresh()
        self._changed()

    # -- filter -------------------------------------------------------------------------------

    def start_filter(self, query: SearchQuery | None) -> None:
        """Show only lines matching ``query`` with context (``None`` shows every line again).

        Raises:
            InvalidSearchError: If the query is not a valid pattern.
        """
        lines = self._lines()
        if query is None or self._index is None:
            self.filter.clear()
            lines.rows = None
            lines.marked = None
        else:
            self.filter.start(self._index, query)
            self._show_rows(keep_matches=False)
        lines.restyle()
        lines.update_size()
        lines.set_following(True)
        self._changed()

    def change_context(self, step: int) -> None:
        """Show ``step`` more (or fewer) lines around each filtered match."""
        context = max(0, min(MAX_CONTEXT, self.rows.context + step))
        if context == self.rows.context:
            return
        self.rows.context = context
        if self.filter.active:
            lines = self._lines()
            self._show_rows(keep_matches=True)
            lines.update_size()
            if lines.current is not None and not lines.following:
                lines.show_line(lines.current)
        self._changed()

    def _show_rows(self, *, keep_matches: bool) -> None:
        """Rebuild the filtered rows from the matches found so far (or from none)."""
        assert self._index is not None
        matches = self.filter.lines if keep_matches else ()
        self.rows.rebuild(matches, self._index.line_count)
        self._filter_seen = len(matches)
        lines = self._lines()
        lines.rows = self.rows.rows
        lines.marked = self.filter.lines

    def _filter_updated(self, search: LineSearch) -> None:
        index = self._index
        if index is None:
            return
        lines = self._lines()
        known = len(self.rows.rows)
        self.rows.add(search.lines[self._filter_seen :], index.line_count)
        self._filter_seen = len(search.lines)
        lines.rows = self.rows.rows
        lines.marked = search.lines
        if len(self.rows.rows) != known:
            lines.restyle()
            lines.update_size()
            if lines.following:
                lines.scroll_to_end()
        self._changed()

    # -- errors -------------------------------------------------------------------------------

    def jump_error(self, step: int) -> None:
        """Show the next (``1``) or previous (``-1``) error or traceback."""
        if self._index is None:
            return
        if not self.errors.active:
            self.errors.start(self._index, ERROR_QUERY)
        self._error_step = step
        self._resolve_error_jump()
        self._changed()

    def _resolve_error_jump(self) -> None:
        step = self._error_step
        self.looking_for_errors = bool(step)
        if not step:
            return
        anchor = self._anchor()
        errors = self.errors
        if step > 0:
            target = errors.after(anchor)
        else:
            # Matches arrive in file order: the one before the anchor is known once the
            # search has passed the anchor (or ended).
            if errors.running and not (errors.lines and errors.lines[-1] >= anchor):
                return
            target = errors.before(anchor)
        if target is not None:
            self._show(target)
        elif errors.running:
            return
        else:
            self.flash = Text(f"no error {'below' if step > 0 else 'above'}", style="yellow")
        self._error_step = 0
        self.looking_for_errors = False

    def _errors_updated(self, search: LineSearch) -> None:
        self._resolve_error_jump()
        self._changed()

    # -- moving -------------------------------------------------------------------------------

    def _show(self, line: int) -> None:
        lines = self._lines()
        lines.current = line
        lines.restyle()
        lines.show_line(line)

    def _anchor(self) -> int:
        """The line a jump starts from: the current line, else the top line shown."""
        lines = self._lines()
        if lines.current is not None:
            return lines.current
        top = lines.top_line
        return top if top is not None else 0
