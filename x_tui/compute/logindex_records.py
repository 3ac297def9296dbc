"""What a :class:`~x_tui.compute.logindex.LogIndex` hands out: lines, and what a refresh changed.

Frozen records, no behaviour beyond a derived flag. This module imports no Textual and no Rich.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class LogLine:
    """One line of the file, as read for display."""

    number: int
    """Its line number in the index's numbering when it was read (0 is the first known line)."""
    start: int
    """Byte offset of its first byte."""
    end: int
    """Byte offset just past its last byte (its newline excluded)."""
    text: str
    """Its bytes decoded (UTF-8, invalid bytes replaced), capped; not sanitised."""
    cut: bool
    """Whether the line was longer than the display cap and part of it is not in ``text``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexChange:
    """What one :meth:`LogIndex.refresh` (or :meth:`LogIndex.open`) changed."""

    reset: bool = False
    """The file was replaced, truncated or rewritten: every line number is new."""
    prepended: int = 0
    """Lines now known before what was line 0 (the background count finished)."""
    appended: int = 0
    """Lines added at the end (a new unfinished last line counts)."""
    last_changed: bool = False
    """The last line, unfinished before, received more bytes."""
    more: bool = False
    """More appended bytes are waiting than one refresh indexes; refresh again soon."""

    @property
    def changed(self) -> bool:
        """Whether anything a viewer shows may have changed."""
        return self.reset or bool(self.prepended or self.appended) or self.last_changed
