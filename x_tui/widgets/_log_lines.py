"""The scrolling part of the log view: renders only the visible lines of a :class:`LogIndex`.

A line-API widget (``ScrollView`` + ``render_line``, as Textual's ``Log``): a row is a line of the
file, or of the filtered rows; a line is read from the index only when it is on screen, sanitised
once (``ansi_text``: SGR colours kept, every other sequence gone; ``_log_texts``) and kept in LRU
caches keyed by its byte span, so line numbers may shift (the lines before the tail became known)
without losing them.
In wrap mode a row is a line's wrapped rows: the view is laid out from the top row, or, at the end,
from the bottom so the last line is always on screen (``_log_layout``).

Following: the view sticks to the end while ``following``; any scroll up pauses it by itself and
new lines are counted instead; scrolling back down to the end resumes it.

``following``, ``new_lines``, ``wrap`` and ``current`` are reactives (``var``, no redraw of their
own): the log view watches them for its status line.
"""

from __future__ import annotations

import bisect
import re
from array import array

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.actions import SkipAction
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from x_tui.compute.logindex import LogIndex
from x_tui.widgets._log_layout import wrap_layout
from x_tui.widgets._log_texts import SanitisedTexts
from x_tui.widgets._log_times import LineStamps

STRIP_CACHE = 2048
"""Rendered lines kept."""


class LogLines(ScrollView, can_focus=True):
    """Visible lines of a log index, with search highlights, a current line and a gutter."""

    COMPONENT_CLASSES = {
        "log-lines--match",
        "log-lines--current",
        "log-lines--gutter",
        "log-lines--gutter-match",
        "log-lines--cut",
    }

    DEFAULT_CSS = """
    LogLines {
        background: $surface;
        color: $foreground;
        height: 1fr;
        & > .log-lines--match { background: $warning 60%; color: $text; }
        & > .log-lines--current { background: $accent 30%; }
        & > .log-lines--gutter { color: $text-muted; }
        & > .log-lines--gutter-match { color: $warning; text-style: bold; }
        & > .log-lines--cut { color: $text-muted; text-style: italic; }
    }
    """

    current: var[int | None] = var[int | None](None)
    """Line number shown as the current line (the last match or error jumped to)."""
    wrap: var[bool] = var(False)
    """Whether long lines are wrapped."""
    following: var[bool] = var(True)
    """Whether the view sticks to the end as lines are added."""
    new_lines: var[int] = var(0)
    """Lines added while not following."""

    class FollowMoved(Message):
        """Following started or stopped (by a scroll, a jump or :meth:`set_following`)."""

        def __init__(self, following: bool) -> None:
            """Record the new state.

            Args:
                following: Whether the view now sticks to the end.
            """
            super().__init__()
            self.following = following

    class Sanitised(Message):
        """More control sequences were removed from lines on screen (see ``removed``)."""

    def __init__(self, *, following: bool = True, id: str | None = None) -> None:
        """Create an empty view.

        Args:
            following: Whether to stick to the end from the start.
            id: The widget's id.
        """
        super().__init__(id=id)
        self.index: LogIndex | None = None
        """The index shown, or ``None``."""
        self.rows: array[int] | None = None
        """Line numbers shown when filtered (``None`` shows every line)."""
        self.marked: array[int] | None = None
        """Matching line numbers, marked in the gutter of a filtered view."""
        self.pattern: re.Pattern[str] | None = None
        """Search pattern highlighted in lines."""
        self.set_reactive(LogLines.following, following)
        self.stamps: LineStamps | None = None
        """Receive times shown before each line (``t``), or ``None`` when hidden."""
        self._removed_reported = True
        self._texts = SanitisedTexts()
        self._strips: LRUCache[tuple[object, ...], Strip] = LRUCache(STRIP_CACHE)
        self._wrapped: LRUCache[tuple[object, ...], list[Strip]] = LRUCache(STRIP_CACHE)
        self._widest = 0
        self._render_style: Style | None = None
        self._moving = False
        self._look = 0
        self._layout_key: tuple[object, ...] | None = None
        self._layout: list[tuple[int, int]] = []

    # -- state --------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        """Rows the view has: lines, or filtered rows."""
        if self.rows is not None:
            return len(self.rows)
        return self.index.line_count if self.index is not None else 0

    @property
    def removed(self) -> int:
        """Control sequences removed from the lines shown so far."""
        return self._texts.removed

    def line_of_row(self, row: int) -> int:
        """The line number shown on a row."""
        return self.rows[row] if self.rows is not None else row

    def row_of_line(self, line: int) -> int:
        """The row showing a line, or the first row after it."""
        if self.rows is None:
            return line
        return bisect.bisect_left(self.rows, line)

    @property
    def top_line(self) -> int | None:
        """The line number at the top of the view, or ``None`` when empty."""
        row = int(self.scroll_y)
        if self.wrap:
            layout = self._layout_rows()
            row = layout[0][0] if layout else row
        return self.line_of_row(row) if 0 <= row < self.row_count else None

    def reset(self, index: LogIndex | None) -> None:
        """Show another index (or the same after a reset), forgetting every cache."""
        self.index = index
        self.rows = None
        self.marked = None
        self.current = None
        self.new_lines = 0
        self._texts.reset()
        self.restyle()
        self._widest = 0
        self.update_size()
        # Open at the tail, following or not (not following only means it stays put then).
        self.call_after_refresh(self.scroll_to_end)

    def restyle(self) -> None:
        """Forget rendered lines (after a highlight, wrap, gutter or theme change)."""
        self._look += 1
        self._strips.clear()
        self._wrapped.clear()
        self._layout_key = None
        self.refresh()

    def notify_style_update(self) -> None:
        """Styles changed (theme): render again."""
        super().notify_style_update()
        self._texts.clear()
        self.restyle()

    def update_size(self) -> None:
        """Set the virtual size from the row count (and widest line seen, when not wrapping)."""
        width = self.scrollable_content_region.width if self.wrap else self._widest
        self.virtual_size = Size(width, self.row_count)
        self._layout_key = None
        self.refresh()
        if self.following:
            # A wider line may bring the horizontal scrollbar, which takes the last row: scroll
            # again once the scrollbars are laid out, so the last line stays in view.
            self.call_after_refresh(self._stay_at_end)

    def _stay_at_end(self) -> None:
        if self.following and self.scroll_y < self.max_scroll_y:
            self.scroll_to_end()

    def watch_show_horizontal_scrollbar(self, shown: bool) -> None:
        """The horizontal scrollbar came or went: while following, keep the last line in view."""
        if self.following:
            self.call_after_refresh(self._stay_at_end)

    # -- following ----------------------------------------------------------------------------

    def set_following(self, following: bool, *, jump: bool = True) -> None:
        """Start or stop sticking to the end; starting clears the new-line count.

        Args:
            following: The new state.
            jump: Scroll to the end when following starts.
        """
        if following:
            self.new_lines = 0
            if jump:
                self.scroll_to_end()
        if following != self.following:
            self.following = following
            self.post_message(self.FollowMoved(following))

    def scroll_to_end(self) -> None:
        """Scroll to the last row without animation (following is not changed)."""
        self._move(self.max_scroll_y)

    def lines_added(self, count: int) -> None:
        """Rows or lines were added at the end: follow them or count them.

        Args:
            count: Lines added to the file.
        """
        self.update_size()
        if self.following:
            self.scroll_to_end()
        else:
            self.new_lines += count

    def shift(self, lines: int) -> None:
        """Lines became known before line 0: keep showing the same lines."""
        if self.current is not None:
            self.current += lines
        self.update_size()
        if self.following:
            self.scroll_to_end()
        elif self.rows is None:
            self._move(self.scroll_y + lines)

    def show_line(self, line: int) -> None:
        """Stop following and bring a line into view, a third of the way down.

        Args:
            line: The line number.
        """
        self.set_following(False)
        row = self.row_of_line(line)
        self._move(max(0, row - self.scrollable_content_region.height // 3))
        self.refresh()

    def _move(self, y: float) -> None:
        self._moving = True
        try:
            self.scroll_to(y=y, animate=False, immediate=True, force=True)
        finally:
            self._moving = False

    @property
    def allow_vertical_scroll(self) -> bool:
        """Whether there is anything to scroll, from the rows known now.

        Textual's own answer reads the scrollbar the last layout drew: between new rows (a
        filter's results) and the next frame, a key such as ``home`` was skipped, and at a low
        frame rate (the low-bandwidth profile) that window is long.
        """
        if self.disabled or self.loading:
            return False
        return self.max_scroll_y > 0 or self.scroll_y > 0

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Pause following when the user scrolls up; resume when they scroll to the end."""
        super().watch_scroll_y(old_value, new_value)
        self._layout_key = None
        if self._moving:
            return
        if self.following and new_value < old_value <= self.max_scroll_y:
            self.set_following(False)
        elif not self.following and old_value < new_value >= self.max_scroll_y:
            self.set_following(True, jump=False)

    # Scrolling keys, without animation (over SSH an animation is only more bytes to send).

    def action_scroll_up(self) -> None:
        """Scroll up a line (pauses following)."""
        self._scroll_by(-1)

    def action_scroll_down(self) -> None:
        """Scroll down a line."""
        self._scroll_by(1)

    def action_page_up(self) -> None:
        """Scroll up a page (pauses following)."""
        self._scroll_by(-max(1, self.scrollable_content_region.height - 1))

    def action_page_down(self) -> None:
        """Scroll down a page."""
        self._scroll_by(max(1, self.scrollable_content_region.height - 1))

    def action_scroll_home(self) -> None:
        """Scroll to the first line (pauses following)."""
        if not self.allow_vertical_scroll:
            raise SkipAction()
        # Paused and moved at once: a scroll to the end queued before the key (new lines, a
        # resize) finds the view no longer following, and the key wins.
        self.set_following(False)
        self._move(0)

    def action_scroll_end(self) -> None:
        """Follow: scroll to the end and stick to it."""
        self.set_following(True)

    def _scroll_by(self, rows: int) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        if rows < 0:
            self.set_following(False)  # at once, as for home
        self.scroll_to(y=self.scroll_y + rows, animate=False)

    def on_resize(self) -> None:
        """Keep the end in view while following; re-wrap."""
        if self.wrap:
            self._wrapped.clear()
            self.update_size()
        if self.following:
            # Asked again when it runs: a key that paused following since then wins.
            self.call_after_refresh(self._stay_at_end)

    # -- rendering ----------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        """Render the rows in ``crop``, working out the widget's style once for all of them.

        Args:
            crop: The region to render.

        Returns:
            One strip per row.
        """
        self._render_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._render_style = None

    def render_line(self, y: int) -> Strip:
        """Render one row of the view.

        Args:
            y: Row on screen.

        Returns:
            The row's strip, cropped to the view.
        """
        width = self.scrollable_content_region.width
        style = self._style_now()
        if self.wrap:
            layout = self._layout_rows()
            if y >= len(layout):
                return Strip.blank(width, style)
            row, part = layout[y]
            return self._wrapped_strips(row, width)[part].crop_extend(0, width, style)
        row = int(self.scroll_y) + y
        if not 0 <= row < self.row_count:
            return Strip.blank(width, style)
        scroll_x = int(self.scroll_x)
        return self._strip(row).crop_extend(scroll_x, scroll_x + width, style)

    def _strip(self, row: int) -> Strip:
        line = self.line_of_row(row)
        assert self.index is not None
        start, end = self.index.span(line)
        key = (start, end, line == self.current, self._gutter_of(line), self._look)
        cached = self._strips.get(key)
        if cached is not None:
            return cached
        text = self._display_text(line, start, end)
        strip = Strip(Segment.apply_style(text.render(self.app.console), self._style_now()))
        self._strips[key] = strip
        if strip.cell_length > self._widest:
            self._widest = strip.cell_length
            self.call_later(self.update_size)
        return strip

    def _wrapped_strips(self, row: int, width: int) -> list[Strip]:
        line = self.line_of_row(row)
        assert self.index is not None
        start, end = self.index.span(line)
        key = (start, end, width, line == self.current, self._gutter_of(line), self._look)
        cached = self._wrapped.get(key)
        if cached is not None:
            return cached
        text = self._display_text(line, start, end)
        console = self.app.console
        parts = text.wrap(console, max(1, width), no_wrap=False, overflow="fold") or [Text("")]
        strips = [
            Strip(Segment.apply_style(part.render(console), self._style_now())) for part in parts
        ]
        self._wrapped[key] = strips
        return strips

    def _style_now(self) -> Style:
        """The widget's style: the one worked out for the rows being rendered, if any."""
        return self._render_style if self._render_style is not None else self.rich_style

    def _gutter_of(self, line: int) -> str:
        if self.rows is None:
            return ""
        is_match = self.marked is not None and _contains(self.marked, line)
        return f"{line + 1:>{len(str(self.row_count_lines()))}}{':' if is_match else '-'}"

    def row_count_lines(self) -> int:
        """Lines in the index (not rows)."""
        return self.index.line_count if self.index is not None else 0

    def _display_text(self, line: int, start: int, end: int) -> Text:
        base = self._sanitised(start, end)
        gutter = self._gutter_of(line)
        if self.stamps is not None:
            gutter = self.stamps.stamp(start) + gutter
        if not (gutter or self.pattern is not None or line == self.current):
            return base
        text = base.copy()
        if self.pattern is not None:
            text.highlight_regex(self.pattern, self.get_component_rich_style("log-lines--match"))
        if line == self.current:
            text.pad_right(max(0, self.scrollable_content_region.width - text.cell_len))
            text.stylize_before(self.get_component_rich_style("log-lines--current"))
        if gutter:
            name = "log-lines--gutter-match" if gutter.endswith(":") else "log-lines--gutter"
            text = Text(gutter, style=self.get_component_rich_style(name), end="") + text
        return text

    def _sanitised(self, start: int, end: int) -> Text:
        assert self.index is not None
        text, counted = self._texts.get(
            self.index, start, end, lambda: self.get_component_rich_style("log-lines--cut")
        )
        if counted and self._removed_reported:
            self._removed_reported = False
            self.call_later(self._report_removed)
        return text

    def _report_removed(self) -> None:
        self._removed_reported = True
        self.post_message(self.Sanitised())

    def _layout_rows(self) -> list[tuple[int, int]]:
        """In wrap mode: (row, wrapped part) for each screen row."""
        region = self.scrollable_content_region
        top = int(self.scroll_y)
        at_end = top >= self.max_scroll_y
        key = (top, at_end, region.width, region.height, self.row_count, self._look)
        if key == self._layout_key:
            return self._layout
        layout: list[tuple[int, int]] = []
        if self.index is not None and self.row_count:
            layout = wrap_layout(
                top=top,
                at_end=at_end,
                height=region.height,
                row_count=self.row_count,
                parts=lambda row: len(self._wrapped_strips(row, region.width)),
            )
        self._layout_key = key
        self._layout = layout
        return layout


def _contains(values: array[int], value: int) -> bool:
    at = bisect.bisect_left(values, value)
    return at < len(values) and values[at] == value
