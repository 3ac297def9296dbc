"""A run's log as pieces of lines, so a line of any length streams in bounded memory.

A task can write a line of a hundred megabytes (a progress bar redrawn with ``\\r`` for hours,
a dump without newlines). Read as whole lines, such a line is held in memory at once, and joined
chunk by chunk it costs time quadratic in its length. :class:`LineSplitter` cuts the bytes of a
log, as they are read, into :class:`LogPiece` items: the text of a line up to the end of a chunk,
and whether the line ends there. Each piece is at most one chunk long, each byte is looked at a
constant number of times, and UTF-8 is decoded across chunk boundaries as it would be whole.

A backend that reads its log this way declares ``Capability.LOG_PIECES`` and has
``log_pieces(handle, follow=...)``; :func:`x_tui.compute.backend.pieces_of` gives the pieces of
any backend, a whole line per piece for one that only has ``logs``.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import NamedTuple

_NEWLINE = 0x0A
_CARRIAGE_RETURN = b"\r"


class LogPiece(NamedTuple):
    """Part of a log line, or the last part of one.

    Attributes:
        text: The text, without line ending (decoded as UTF-8, invalid bytes replaced).
        ends_line: Whether the line ends after this text.
    """

    text: str
    ends_line: bool


class LineSplitter:
    """Cuts the bytes of a log, chunk by chunk, into :class:`LogPiece` items.

    A ``\\r`` just before a ``\\n`` (a CRLF ending) is dropped; any other carriage return is kept
    for the viewer to resolve.
    """

    __slots__ = ("_decoder", "_held", "_open")

    def __init__(self) -> None:
        """Start before the first byte of a log."""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = b""
        self._open = False

    def feed(self, chunk: bytes) -> Iterator[LogPiece]:
        """The pieces the next chunk of the log completes.

        Args:
            chunk: The next bytes of the log.

        Yields:
            Each line the chunk ends, then what it holds of the next line (if anything shows).
        """
        if not chunk:
            return
        data = self._held + chunk if self._held else chunk
        self._held = b""
        decode = self._decoder.decode
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            end = newline - 1 if newline > start and data[newline - 1] == 0x0D else newline
            yield LogPiece(decode(data[start:end], True), True)
            start = newline + 1
        rest = data[start:] if start else data
        if rest.endswith(_CARRIAGE_RETURN):
            # It may be the first half of a CRLF ending: wait for the next byte.
            self._held = _CARRIAGE_RETURN
            rest = rest[:-1]
        self._open = bool(rest or self._held)
        if rest:
            text = decode(rest)
            if text:
                yield LogPiece(text, False)

    def finish(self) -> Iterator[LogPiece]:
        """End the last line if one is open (a log that does not end with a newline).

        Yields:
            The end of the open line, if there is one; the splitter is then back at a line start.
        """
        if self._open:
            self._held = b""
            self._open = False
            yield LogPiece(self._decoder.decode(b"", True), True)


def lines_of(pieces: Iterable[LogPiece]) -> Iterator[str]:
    """Whole lines from pieces, each joined once (linear in its length).

    Args:
        pieces: Pieces, as a backend's ``log_pieces`` yields them.

    Yields:
        Each line, without line ending; an unfinished last line is left out.
    """
    parts: list[str] = []
    for text, ends_line in pieces:
        if not ends_line:
            parts.append(text)
        elif parts:
            parts.append(text)
            yield "".join(parts)
            parts.clear()
        else:
            yield text
