"""Log lines as display text for the log view: sanitised once each, kept by byte span.

A line is read from the index only on a cache miss, sanitised with ``ansi_text_counted`` (SGR
colours kept, every other sequence gone), marked when cut, and kept in an LRU cache keyed by its
byte span, so line numbers may shift (the lines before the tail became known) without losing it.
The control sequences removed are counted once per line start, so the view can say how many it
hid. Rendering, highlights and the gutter are the view's part.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache

from x_tui.compute.logindex import LogIndex
from x_tui.compute.worker.line_assembly import CONTINUED_MARK
from x_tui.widgets.safe_text import ansi_text_counted

_CONTINUED = CONTINUED_MARK.decode()

TEXT_CACHE = 4096
"""Sanitised lines kept."""

REMOVED_TRACKED = 100_000
"""Lines whose removed control sequences are counted, at most."""


class SanitisedTexts:
    """Sanitised display text of log lines, cached by byte span; counts what was removed."""

    def __init__(self) -> None:
        """Start empty, with nothing removed."""
        self.removed = 0
        """Control sequences removed from the lines sanitised so far (each line counted once)."""
        self._removed_at: dict[int, int] = {}
        self._texts: LRUCache[tuple[int, int], Text] = LRUCache(TEXT_CACHE)

    def clear(self) -> None:
        """Forget the texts (their styles changed), keeping the count."""
        self._texts.clear()

    def reset(self) -> None:
        """Forget the texts and the count (another file, or the same one rewritten)."""
        self.removed = 0
        self._removed_at.clear()
        self._texts.clear()  # a rewritten file may hold other text at the same offsets

    def get(
        self, index: LogIndex, start: int, end: int, cut_style: Callable[[], Style]
    ) -> tuple[Text, bool]:
        """The display text of the line spanning ``[start, end)``.

        Args:
            index: The index to read the line from on a cache miss.
            start: Byte offset of the line's start.
            end: Byte offset of the line's end, its newline excluded.
            cut_style: The style of the mark after a line cut for display (asked only then).

        Returns:
            The text (no wrapping, tabs expanded), and whether sanitising it removed control
            sequences not counted before.
        """
        cached = self._texts.get((start, end))
        if cached is not None:
            return cached, False
        raw, cut = index.read(start, end)
        text, removed = ansi_text_counted(raw)
        text.no_wrap = True
        text.end = ""
        text.expand_tabs()
        if cut:
            text.append("…", style=cut_style())
        elif text.plain.endswith(_CONTINUED):  # the worker wrote the line before it ended
            text.stylize(cut_style(), len(text) - len(_CONTINUED))
        counted = (
            bool(removed)
            and start not in self._removed_at
            and len(self._removed_at) < REMOVED_TRACKED
        )
        if counted:
            self._removed_at[start] = removed
            self.removed += removed
        self._texts[(start, end)] = text
        return text, counted
