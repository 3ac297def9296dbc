"""The one log viewer of x-tui: a growing file of any size, followed, searched, filtered.

Every log (a local run's ``worker.log`` and task outputs, a remote run's spooled stream) is a file
on this machine; :class:`LogView` shows one through a :class:`~x_tui.compute.logindex.LogIndex`, so
it opens at the tail at once whatever the size, and reads only the lines on screen. Every line is
sanitised before it is drawn (SGR colours kept, every other escape sequence removed, ``\\r``
progress bars shown as their last state); log text is never markup and never a raw ``str``.

The file is polled on a timer (it is local; a poll is one ``stat`` and one small read) and appends
are shown in batches: every 50 ms (every 250 ms while more than 1,000 lines a second arrive), or
every 500 ms with ``low_bandwidth``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive, var
from textual.timer import Timer
from textual.widget import Widget

from x_tui.compute.logindex import IndexChange, LogIndex
from x_tui.compute.logindex_search import SearchQuery
from x_tui.compute.worker.errors import UserError
from x_tui.widgets._log_bar import SearchBar
from x_tui.widgets._log_export import (
    default_save_path,
    editor_command,
    export_lines,
    pager_command,
)
from x_tui.widgets._log_finder import Finder
from x_tui.widgets._log_lines import LogLines
from x_tui.widgets._log_status import (
    FilterCount,
    LogStatus,
    SearchCount,
    filter_count,
    search_count,
)
from x_tui.widgets._log_times import open_stamps
from x_tui.widgets.safe_text import safe_text


@dataclass(frozen=True, slots=True)
class LogPlace:
    """Where a reader is in a log: what :meth:`LogView.place` gives and ``restore_place`` takes.

    Attributes:
        top_line: The line at the top of the view; ``None`` while following the end.
        filter: The filter shown (``&``), if any.
        search: The search (``/``), if any.
    """

    top_line: int | None = None
    filter: SearchQuery | None = None
    search: SearchQuery | None = None


PLACE_SECONDS = 10.0
"""How long a restored place is tried for, from when the view can take it, before it is left
(its line may be hidden). A time, not a count of tries: while a long log is indexed, the index
is read again many times before the screen is, and each read tries the place once more."""

POLL_SECONDS = 0.05
"""How often the file is checked for appends (and appends shown), normally."""

LOW_BANDWIDTH_POLL_SECONDS = 0.5
"""How often the file is checked, and the screen redrawn for appends, with ``low_bandwidth``."""

BUSY_LINES = 50
"""Lines appended between two polls (1,000 lines a second at the normal pace) from which the log
counts as busy: it is then shown every :data:`BUSY_POLL_SECONDS`, not at every poll."""

BUSY_POLL_SECONDS = 0.25
"""How often a busy log is shown: a stream of thousands of lines a second is drawn a few times a
second (what an eye can follow anyway), so following it costs a small part of a core; a slow log
keeps the normal pace, and the log leaves the busy pace at the first poll that finds it calm."""


class LogView(Widget):
    """A log file, opened at its tail, followed as it grows; search, filter, errors, wrap.

    | Key | Action |
    | :- | :- |
    | `end`, `F` | Follow: jump to the end and stick to it (scrolling up pauses it). |
    | `w` | Wrap long lines, or not. |
    | `/` | Search (highlights matches, shows "3/17"); `ctrl+r` regex, `ctrl+t` case. |
    | `n`, `N` | Next, previous match. |
    | `&` | Filter: show only matching lines with context (empty input clears it). |
    | `+`, `-` | More, fewer context lines around filtered matches. |
    | `e`, `E` | Next, previous error or traceback. |
    | `t` | Show when each line was received, or not (logs with a times file). |
    | `escape` | Clear the search, else the filter (else the key goes to the screen). |
    | `s` | Save the lines shown (the filtered ones when filtering) as plain text. |
    | `v` | View the log in ``$PAGER`` (``less`` by default), at the current line. |
    | `V` | Open the log in ``$VISUAL``/``$EDITOR`` at the current line (``+N``). |

    (Both open a sanitised copy, removed afterwards. Not ``o``: a task's log tab binds ``o`` to
    switch between its stdout and stderr.)

    Arrows, `pageup`/`pagedown` and `home` scroll; scrolling up pauses following and the status
    line counts "+N new lines" until `end` (or scrolling back to the end) resumes it.
    """

    BINDINGS = [
        Binding("end,F", "follow", "Follow", id="log.follow"),
        Binding("w", "toggle_wrap", "Wrap", id="log.wrap"),
        Binding("slash", "search", "Search", id="log.search"),
        Binding("n", "next_match", "Next match", id="log.next_match", show=False),
        Binding("N", "previous_match", "Prev match", id="log.previous_match", show=False),
        Binding("ampersand", "filter", "Filter", id="log.filter"),
        Binding("plus", "context(1)", "More context", show=False, id="log.more_context"),
        Binding("minus", "context(-1)", "Less context", show=False, id="log.less_context"),
        Binding("e", "next_error", "Next error", id="log.next_error"),
        Binding("E", "previous_error", "Prev error", id="log.previous_error", show=False),
        Binding("t", "toggle_times", "Times", id="log.times", show=False),
        Binding("escape", "clear_search", "Clear", id="log.clear"),
        Binding("s", "save", "Save", id="log.save"),
        Binding("v", "open_pager", "Pager", id="log.pager"),
        Binding("V", "open_editor", "Editor", id="log.editor", show=False),
    ]

    DEFAULT_CSS = """
    LogView {
        height: 1fr;
        layout: vertical;
        & > .log-view--status {
            height: 1;
            background: $panel;
            color: $text-muted;
            padding: 0 1;
        }
    }
    """

    low_bandwidth: reactive[bool] = reactive(False)
    """Poll and redraw for appends every 500 ms instead of every 50 ms (slow SSH links)."""

    # What the status line shows: bound to its same-named reactives with ``data_bind``.
    shown: var[bool] = var(False)
    """Whether a log is shown."""
    following_end: var[bool] = var(True)
    """Whether the view sticks to the end (the status line's ``following``)."""
    new_lines: var[int] = var(0)
    """Lines added while paused."""
    flash: var[Text | None] = var[Text | None](None)
    """The answer to the last key, if any."""
    search: var[SearchCount | None] = var[SearchCount | None](None)
    """The search and its count, if any."""
    filter: var[FilterCount | None] = var[FilterCount | None](None)
    """The filter and its count, if any."""
    looking_for_errors: var[bool] = var(False)
    """Whether an error jump waits for the error search."""
    indexing: var[float | None] = var[float | None](None)
    """How far indexing has got, while it has not finished."""
    wrap: var[bool] = var(False)
    """Whether long lines are wrapped."""
    removed: var[int] = var(0)
    """Control sequences removed from the lines shown so far."""

    class FollowChanged(Message):
        """The view started or stopped following the end of the file."""

        def __init__(self, log_view: LogView, following: bool) -> None:
            """Record the new state.

            Args:
                log_view: The view.
                following: Whether it now sticks to the end.
            """
            super().__init__()
            self.log_view = log_view
            self.following = following

        @property
        def control(self) -> LogView:
            """The view that changed."""
            return self.log_view

    class WrapChanged(Message):
        """The user turned wrapping on or off (``w``): the app remembers it as a setting."""

        def __init__(self, log_view: LogView, wrap: bool) -> None:
            """Record the new state.

            Args:
                log_view: The view.
                wrap: Whether long lines are now wrapped.
            """
            super().__init__()
            self.log_view = log_view
            self.wrap = wrap

        @property
        def control(self) -> LogView:
            """The view that changed."""
            return self.log_view

    class Saved(Message):
        """The lines shown were saved to a file (``s``)."""

        def __init__(self, log_view: LogView, path: Path, lines: int) -> None:
            """Record where.

            Args:
                log_view: The view.
                path: The file written.
                lines: How many lines it holds.
            """
            super().__init__()
            self.log_view = log_view
            self.path = path
            self.lines = lines

    class Reset(Message):
        """The file was truncated, rewritten or replaced, and is shown again from scratch."""

        def __init__(self, log_view: LogView) -> None:
            """Record which view.

            Args:
                log_view: The view.
            """
            super().__init__()
            self.log_view = log_view

        @property
        def control(self) -> LogView:
            """The view that was reset."""
            return self.log_view

    def __init__(
        self,
        path: Path | None = None,
        *,
        follow: bool = True,
        low_bandwidth: bool = False,
        wrap: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """Create a view of ``path`` (or of nothing yet).

        Args:
            path: The log file; it need not exist yet (it is shown once it does).
            follow: Whether to stick to the end from the start.
            low_bandwidth: Batch appends every 500 ms instead of every 50 ms.
            wrap: Whether long lines start wrapped.
            name: The widget's name.
            id: The widget's id.
            classes: The widget's classes.
            disabled: Whether the widget is disabled.
        """
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self._path = path
        self._initial_follow = follow
        self._initial_wrap = wrap
        self.set_reactive(LogView.low_bandwidth, low_bandwidth)
        self._index: LogIndex | None = None
        self._timer: Timer | None = None
        self._busy_until = 0.0
        self._finder = Finder(self, lambda: self.lines_view, self._finder_changed)
        self._pending_place: LogPlace | None = None
        self._place_tries = 0
        self._place_armed = False
        self._place_deadline = 0.0

    def compose(self) -> ComposeResult:
        """The lines, the input bar (hidden), the status line."""
        lines = LogLines(following=self._initial_follow)
        lines.wrap = self._initial_wrap
        yield lines
        yield SearchBar()
        yield LogStatus(classes="log-view--status").data_bind(
            LogView.shown,
            LogView.new_lines,
            LogView.flash,
            LogView.search,
            LogView.filter,
            LogView.looking_for_errors,
            LogView.indexing,
            LogView.wrap,
            LogView.removed,
            following=LogView.following_end,
        )

    def on_mount(self) -> None:
        """Watch the lines' state for the status line, open the file given, start polling."""
        lines = self.lines_view
        for name in ("following", "new_lines", "wrap", "current"):
            self.watch(lines, name, self._lines_changed, init=False)
        self._lines_changed()
        self._start_timer()
        self.open(self._path)

    def on_unmount(self) -> None:
        """Stop searching and close the file."""
        self._finder.forget(None)
        self._hide_times()
        if self._index is not None:
            self._index.close()
            self._index = None

    # -- public API ---------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The file shown, or ``None``."""
        return self._path

    @property
    def index(self) -> LogIndex | None:
        """The index of the file shown."""
        return self._index

    @property
    def lines_view(self) -> LogLines:
        """The scrolling part (for tests and screens that need its rows)."""
        return self.query_one(LogLines)

    @property
    def following(self) -> bool:
        """Whether the view sticks to the end of the file."""
        return self.lines_view.following

    @property
    def focusable(self) -> bool:
        """Whether the view can take focus (its lines can)."""
        return bool(self.children) and self.lines_view.focusable

    def focus(self, scroll_visible: bool = True) -> LogView:
        """Focus the lines, so the view's keys work.

        Args:
            scroll_visible: Scroll the view into sight.

        Returns:
            The view.
        """
        if self.children:
            self.lines_view.focus(scroll_visible)
        return self

    def open(self, path: Path | None) -> None:
        """Show another file (or the same again, from scratch), opened at its tail.

        Args:
            path: The log file, or ``None`` to show nothing.
        """
        self._path = path
        if not self.children:
            return  # not composed yet: on_mount opens it
        if self._index is not None:
            self._index.close()
        self._hide_times()
        self._index = LogIndex(path) if path is not None else None
        if self._index is not None:
            self._index.open()
        self._finder.forget(self._index)
        lines = self.lines_view
        lines.pattern = None
        lines.reset(self._index)
        self.shown = self._index is not None
        self.indexing = _indexing(self._index)
        self.removed = lines.removed

    # -- where the reader is (kept across sessions) ------------------------------------------

    def place(self) -> LogPlace:
        """Where the reader is: the top line (``None`` while following), filter and search."""
        lines = self.lines_view if self.children else None
        following = lines is None or lines.following
        top = None if following or lines is None else lines.top_line
        if self._pending_place is not None:
            top = self._pending_place.top_line  # not applied yet: still where it was asked
        return LogPlace(
            top_line=top, filter=self._finder.filter.query, search=self._finder.search.query
        )

    def restore_place(self, place: LogPlace) -> None:
        """Filter and search as ``place`` says, then show its top line once the filter is done.

        A query that is no longer valid is dropped (its error shown in the status line).
        """
        try:
            if place.filter is not None:
                self._finder.start_filter(place.filter)
            if place.search is not None:
                self._finder.start_search(place.search)
        except UserError as error:
            self._finder.flash = safe_text(str(error), "bold red")
        self._pending_place = place if place.top_line is not None else None
        self._place_tries = 0
        self._place_armed = False
        if self.children:
            # After the scroll to the end that opening the file queued for its next refresh.
            self.lines_view.call_after_refresh(self._arm_place)

    def _arm_place(self) -> None:
        self._place_armed = True
        self._place_deadline = time.monotonic() + PLACE_SECONDS
        self._apply_pending_place()

    def _apply_pending_place(self) -> None:
        # Asked on every poll until the view shows the line, and once more to see it stayed:
        # opening a file scrolls to its end after the next refresh, a filter's rows come from
        # a worker, and a view in a hidden tab has no size to scroll in.
        place = self._pending_place
        index = self._index
        if place is None or place.top_line is None or index is None or not self.children:
            return
        if (
            not self._place_armed
            or self._finder.filter.running
            or place.top_line >= index.line_count
        ):
            return  # the rows (or the line) are not known yet
        lines = self.lines_view
        if not lines.size.height:
            return  # not shown (another tab is): applied once it is
        if self._place_tries and not lines.following and lines.top_line == place.top_line:
            self._pending_place = None  # still there a poll after it was put there
            return
        if self._place_tries and time.monotonic() > self._place_deadline:
            self._pending_place = None  # the line is not shown (filtered out): leave it
            return
        self._place_tries += 1
        lines.set_following(False, jump=False)
        lines.scroll_to(
            y=lines.row_of_line(place.top_line), animate=False, immediate=True, force=True
        )
        lines.refresh()

    # -- polling ------------------------------------------------------------------------------

    def watch_low_bandwidth(self) -> None:
        """Change how often the file is polled."""
        if self._timer is not None:
            self._start_timer()

    def _start_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        interval = LOW_BANDWIDTH_POLL_SECONDS if self.low_bandwidth else POLL_SECONDS
        self._timer = self.set_interval(interval, self._poll)

    def _poll(self) -> None:
        """The timer's poll: skipped while a busy log waits for its next showing."""
        if time.monotonic() < self._busy_until:
            return
        self._refresh_index()

    def _refresh_index(self) -> None:
        index = self._index
        if index is None:
            return
        try:
            change = index.refresh()
        except OSError as error:  # the file became unreadable: say so, keep what is shown
            self._finder.flash = safe_text(f"cannot read the log: {error}", "red")
            return
        if change.changed:
            self._apply(change)
        self._busy_until = (
            time.monotonic() + BUSY_POLL_SECONDS
            if change.appended >= BUSY_LINES and not self.low_bandwidth
            else 0.0
        )
        self.indexing = _indexing(index)
        if change.more:
            self.call_later(self._refresh_index)
        if self._pending_place is not None:
            self._apply_pending_place()

    def _apply(self, change: IndexChange) -> None:
        lines = self.lines_view
        if change.reset:
            lines.reset(self._index)
            self.removed = lines.removed
            self._finder.renumbered()
            self.post_message(self.Reset(self))
        elif change.prepended:
            lines.shift(change.prepended)
            self._finder.renumbered()
        if change.appended or change.last_changed:
            self._finder.grown()
            if not change.reset:
                lines.lines_added(change.appended)
            lines.refresh()

    # -- keys ---------------------------------------------------------------------------------

    def on_key(self) -> None:
        """Any key clears the last note in the status line."""
        if self._finder.flash is not None:
            self._finder.flash = None

    def action_follow(self) -> None:
        """Jump to the end and stick to it."""
        self.lines_view.set_following(True)

    def action_toggle_wrap(self) -> None:
        """Wrap long lines, or cut them at the edge (scroll sideways then)."""
        lines = self.lines_view
        lines.wrap = not lines.wrap
        lines.restyle()
        lines.update_size()
        if lines.following:
            lines.scroll_to_end()
        self.post_message(self.WrapChanged(self, lines.wrap))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``escape`` acts only while a search or a filter is on; otherwise it goes on (back)."""
        if action == "clear_search":
            return self._finder.search.active or self._finder.filter.active
        return True

    def action_clear_search(self) -> None:
        """Clear the search; if there is none, clear the filter."""
        if self._finder.search.active:
            self._finder.start_search(None)
        elif self._finder.filter.active:
            self._finder.start_filter(None)
        self.refresh_bindings()

    def action_save(self) -> None:
        """Ask for a file, then save the lines shown there (see ``_log_export``)."""
        default = default_save_path(self._path, Path.cwd(), filtered=self._finder.filter.active)
        self.query_one(SearchBar).open("save", None, text=str(default))

    def action_open_pager(self) -> None:
        """Open a sanitised copy of the log in ``$PAGER``, at the current line."""
        self._open_outside("pager")

    def action_open_editor(self) -> None:
        """Open a sanitised copy of the log in ``$VISUAL``/``$EDITOR`` at the current line."""
        self._open_outside("editor")

    def cursor_line(self) -> int:
        """The line "under the cursor", from 0: the current line, else the last line shown."""
        lines = self.lines_view
        if lines.current is not None:
            return lines.current
        height = lines.scrollable_content_region.height
        if lines.following or lines.top_line is None:
            return max(0, lines.row_count_lines() - 1)
        last_row = min(lines.row_count - 1, int(lines.scroll_y) + max(0, height - 1))
        return lines.line_of_row(max(0, last_row)) if not lines.wrap else lines.top_line

    def _open_outside(self, program: str) -> None:
        if self._index is None:
            self._finder.flash = safe_text("no log to open", "yellow")
            return
        self._export_for_opening(program, self.cursor_line() + 1)

    @work(thread=True, exclusive=True, group="log-open")
    def _export_for_opening(self, program: str, line: int) -> None:
        index = self._index
        if index is None:
            return
        fd, name = tempfile.mkstemp(prefix="x-tui-log-", suffix=".txt")
        os.close(fd)
        copy = Path(name)
        try:
            export_lines(index, None, copy)
        except OSError as error:
            copy.unlink(missing_ok=True)
            self.app.call_from_thread(self._note, f"cannot write a copy: {error}", "red")
            return
        self.app.call_from_thread(self._run_outside, program, copy, line)

    def _run_outside(self, program: str, copy: Path, line: int) -> None:
        environ = dict(os.environ)
        if program == "pager":
            argv = pager_command(environ, copy, line)
        else:
            argv = editor_command(environ, copy, line)
        try:
            with self.app.suspend():
                subprocess.run(argv, check=False)
        except (OSError, SuspendNotSupported) as error:
            self._note(f"cannot run {argv[0]}: {error}", "red")
        finally:
            copy.unlink(missing_ok=True)
        self.refresh()

    def _note(self, note: str, style: str) -> None:
        self._finder.flash = safe_text(note, style)

    def on_search_bar_save_submitted(self, message: SearchBar.SaveSubmitted) -> None:
        """Save the lines shown to the file typed, in a worker."""
        message.stop()
        self.lines_view.focus()
        text = message.path.strip()
        if not text or self._index is None:
            self._note("nothing saved", "yellow")
            return
        destination = Path(text).expanduser()
        if not destination.is_absolute():
            destination = Path.cwd() / destination
        rows = self.lines_view.rows
        self._save(destination, list(rows) if rows is not None else None)

    @work(thread=True, exclusive=True, group="log-save")
    def _save(self, destination: Path, rows: list[int] | None) -> None:
        index = self._index
        if index is None:
            return
        try:
            count = export_lines(index, rows, destination)
        except OSError as error:
            self.app.call_from_thread(self._note, f"not saved: {error}", "red")
            return
        self.app.call_from_thread(self._saved, destination, count)

    def _saved(self, destination: Path, count: int) -> None:
        self._note(f"saved {count:,} lines to {destination}", "green")
        self.post_message(self.Saved(self, destination, count))

    def action_toggle_times(self) -> None:
        """Show when each line was received, or stop; a log without times gets a toast."""
        lines = self.lines_view
        if lines.stamps is not None:
            self._hide_times()
        else:
            lines.stamps = open_stamps(self._path)
            if lines.stamps is None:
                self.notify("no timestamps for this log", severity="warning", timeout=3)
                return
        lines.restyle()
        lines.update_size()

    def _hide_times(self) -> None:
        found = self.query(LogLines)
        if not found:
            return
        lines = found.first()
        if lines.stamps is not None:
            lines.stamps.close()
            lines.stamps = None
            lines.restyle()

    def action_search(self) -> None:
        """Open the input bar for a search."""
        self.query_one(SearchBar).open("search", self._finder.search.query)

    def action_filter(self) -> None:
        """Open the input bar for a filter."""
        self.query_one(SearchBar).open("filter", self._finder.filter.query)

    def action_next_match(self) -> None:
        """Show the next match after the current line."""
        self._finder.step_match(1)

    def action_previous_match(self) -> None:
        """Show the match before the current line."""
        self._finder.step_match(-1)

    def action_context(self, step: int) -> None:
        """Show more or fewer lines around each filtered match."""
        self._finder.change_context(step)

    def action_next_error(self) -> None:
        """Show the next error or traceback after the current line."""
        self._finder.jump_error(1)

    def action_previous_error(self) -> None:
        """Show the error or traceback before the current line."""
        self._finder.jump_error(-1)

    # -- messages from the parts --------------------------------------------------------------

    def on_search_bar_submitted(self, message: SearchBar.Submitted) -> None:
        """Start the search or filter the user typed."""
        message.stop()
        self.lines_view.focus()
        try:
            if message.mode == "search":
                self._finder.start_search(message.query)
            else:
                self._finder.start_filter(message.query)
        except UserError as error:
            self._finder.flash = safe_text(str(error), "bold red")
        self.refresh_bindings()

    def on_search_bar_closed(self, message: SearchBar.Closed) -> None:
        """Give the keys back to the lines."""
        message.stop()
        self.lines_view.focus()

    def on_log_lines_follow_moved(self, message: LogLines.FollowMoved) -> None:
        """Tell the screen that following started or stopped."""
        message.stop()
        self.post_message(self.FollowChanged(self, message.following))

    def on_log_lines_sanitised(self, message: LogLines.Sanitised) -> None:
        """Show how many control sequences were removed so far."""
        message.stop()
        self.removed = self.lines_view.removed

    def _lines_changed(self) -> None:
        lines = self.lines_view
        self.following_end = lines.following
        self.new_lines = lines.new_lines
        self.wrap = lines.wrap
        self.search = search_count(self._finder, lines.current)

    def _finder_changed(self) -> None:
        if not self.children:
            return
        finder = self._finder
        self.flash = finder.flash
        self.search = search_count(finder, self.lines_view.current)
        self.filter = filter_count(finder)
        self.looking_for_errors = finder.looking_for_errors


def _indexing(index: LogIndex | None) -> float | None:
    """How far indexing has got, while it has not finished (for the status line)."""
    if index is None or index.complete:
        return None
    return index.progress
