"""Search in a log file for :class:`~x_tui.compute.logindex.LogIndex`: queries, the chunked scan.

A search reads the file in 1 MiB chunks with ``os.pread`` and yields the start offset of each line
whose displayed text matches (escape sequences removed, ``\\r`` resolved, long lines capped), as it
goes; it never holds the file in memory. Clean chunks (no escapes, controls or over-long lines) are
matched in one pass of the pattern, each hit checked again on its own line. This module knows
nothing of line numbers and imports no Textual and no Rich.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from x_tui.compute.sanitize import cap_line, decode, plain
from x_tui.compute.worker.errors import UserError

_SEARCH_CHUNK = 1 << 20
"""Bytes read per search step."""

_SUSPECT_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
"""Bytes that make a line's display text differ from its decoded bytes (escapes, controls, CR)."""


class InvalidSearchError(UserError, ValueError):
    """A search pattern that is not a valid regular expression."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchQuery:
    """What to look for in a log: plain text or a regular expression."""

    text: str
    """The text or pattern, as the user typed it."""
    regex: bool = False
    """Whether ``text`` is a Python regular expression (else it is matched literally)."""
    ignore_case: bool = True
    """Whether letter case is ignored."""

    def compile(self) -> re.Pattern[str]:
        """The query as a pattern, with ``^`` and ``$`` matching at line boundaries.

        Returns:
            The compiled pattern.

        Raises:
            InvalidSearchError: If ``regex`` is set and ``text`` is not a valid pattern.
        """
        flags = re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)
        source = self.text if self.regex else re.escape(self.text)
        try:
            return re.compile(source, flags)
        except re.error as error:
            raise InvalidSearchError(
                f"search pattern {self.text!r} is not a valid regular expression: {error}"
            ) from None


ERROR_QUERY = SearchQuery(
    text=r"Traceback \(most recent call last\)|\bERROR\b|Error:|\bFAILED\b|(?i:exception)",
    regex=True,
    ignore_case=False,
)
"""Lines "next error" jumps to: tracebacks, ``ERROR``, ``Error:``, ``FAILED``, exceptions."""


def search_fd(
    fd: int,
    pattern: re.Pattern[str],
    pos: int,
    stop: int,
    *,
    cap: int,
    cancel: threading.Event | None,
) -> Iterator[int]:
    """Find the lines of ``[pos, stop)`` whose displayed text matches.

    Args:
        fd: An open file descriptor, read with ``os.pread`` (never moved, never closed here).
        pattern: The compiled pattern (with ``re.MULTILINE``).
        pos: Byte offset to start at (a line start).
        stop: Byte offset to stop at.
        cap: Bytes of a line matched at most, as they are displayed.
        cancel: Set it to stop the search early.

    Yields:
        The start offset of each matching line, in file order.
    """
    while pos < stop:
        if cancel is not None and cancel.is_set():
            return
        data = os.pread(fd, min(_SEARCH_CHUNK, stop - pos), pos)
        if not data:
            return
        last = data.rfind(b"\n")
        if last == -1 and pos + len(data) < stop:
            # One line longer than a chunk: match its capped start, then skip to its end.
            if _line_matches(pattern, data[:cap], cap):
                yield pos
            pos = _skip_line(fd, pos + len(data), stop)
            continue
        chunk = data if last == -1 else data[: last + 1]
        yield from _search_chunk(pattern, chunk, pos, cap)
        pos += len(chunk)


def _skip_line(fd: int, pos: int, stop: int) -> int:
    while pos < stop:
        data = os.pread(fd, min(_SEARCH_CHUNK, stop - pos), pos)
        if not data:
            return stop
        found = data.find(b"\n")
        if found != -1:
            return pos + found + 1
        pos += len(data)
    return stop


def _line_matches(pattern: re.Pattern[str], raw: bytes, cap: int) -> bool:
    text, _ = cap_line(decode(raw).rstrip("\n"), cap)
    return pattern.search(plain(text)) is not None


def _search_chunk(pattern: re.Pattern[str], chunk: bytes, base: int, cap: int) -> Iterator[int]:
    """Matching line starts in a chunk of whole lines (the last may lack its newline)."""
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    if _SUSPECT_BYTES.search(chunk) is not None or max(map(len, lines), default=0) > cap:
        # Escapes, controls or very long lines: match each line's displayed text.
        offset = base
        for raw in lines:
            if _line_matches(pattern, raw, cap):
                yield offset
            offset += len(raw) + 1
        return
    # Clean text: one pass of the pattern over the whole chunk, each hit checked on its line.
    ascii_only = chunk.isascii()
    text = chunk.decode("ascii") if ascii_only else chunk.decode("utf-8", "surrogateescape")
    at = 0
    byte_at = base
    char_at = 0
    while True:
        match = pattern.search(text, at)
        if match is None:
            return
        line_start = text.rfind("\n", 0, match.start()) + 1
        if line_start >= len(text):
            return  # an empty match after the last newline: no line there
        line_end = text.find("\n", line_start)
        if line_end == -1:
            line_end = len(text)
        if ascii_only:
            offset = base + line_start
        else:
            byte_at += len(text[char_at:line_start].encode("utf-8", "surrogateescape"))
            char_at = line_start
            offset = byte_at
        if pattern.search(text[line_start:line_end]) is not None:
            yield offset
        at = line_end + 1
        if at > len(text):
            return
