"""Line assembly for one output stream of a task: bytes as read, cut into the pieces of a log.

A task's stdout and stderr arrive in chunks that end anywhere. :class:`LineAssembler` keeps one
stream's bytes until they make a piece the combined log can take whole:

- a **line**, ended by ``\\n``;
- a **state** of a line redrawn with ``\\r`` (a progress bar): the text before each ``\\r``, and,
  when the stream has been quiet for a while, the latest state drawn so far;
- a **continued** piece: a line that is still open after the stream was quiet for
  ``idle_seconds`` (or whose oldest byte is ``max_wait_seconds`` old), or that grew past
  ``max_bytes``, or that was left open when the task ended. It is handed over at once and marked
  (:data:`CONTINUED_MARK`); what the task writes next goes on a line of its own.

A piece never holds more than ``max_bytes`` of the task's text, so a 100 MB line without a newline
is never held in memory; it is never cut inside a UTF-8 character when a boundary is near.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. It does no
I/O; the worker's echo writes the pieces (``echo``).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

CONTINUED_MARK = " \u21b5".encode()
"""Ends a piece of a line the worker wrote before the line ended (`` ↵``); it goes on below."""

MAX_LINE_BYTES = 16 * 1024
"""Bytes of one line held at most before they are written as a continued piece."""

IDLE_SECONDS = 1.5
"""How long a stream may be quiet before its unfinished line is written as it stands."""

MAX_WAIT_SECONDS = 10.0
"""How long an unfinished line is held at most, however often the stream adds to it."""


class PieceKind(enum.Enum):
    """What a piece of a stream is, which decides how it ends in the combined log."""

    LINE = "line"
    """Whole lines: each ends with ``\\n`` (the text may hold several, ``\\n`` between them)."""
    STATE = "state"
    """A state of a ``\\r``-redrawn line: ends with ``\\r``; the line stays open."""
    CONTINUED = "continued"
    """Part of a line that has not ended: ends with :data:`CONTINUED_MARK` and ``\\n``."""
    CLOSE = "close"
    """The end of a ``\\r``-redrawn line (no text): ends the open line with ``\\n``."""


class Piece(NamedTuple):
    """One piece of a stream, ready for the combined log (a tuple: one is made per line)."""

    kind: PieceKind
    """How it ends."""
    text: bytes
    """The task's bytes, without the ``\\n`` or ``\\r`` that ended them (a ``LINE`` piece
    holds no ``\\r``, and ``\\n`` only between its lines)."""


class LineAssembler:
    """One stream's bytes, held until they make whole pieces (see the module documentation)."""

    def __init__(
        self,
        *,
        max_bytes: int = MAX_LINE_BYTES,
        idle_seconds: float = IDLE_SECONDS,
        max_wait_seconds: float = MAX_WAIT_SECONDS,
    ) -> None:
        """Start with nothing held.

        Args:
            max_bytes: Bytes of a line held at most (at least 4, so a character fits).
            idle_seconds: Quiet time after which an unfinished line is handed over.
            max_wait_seconds: Age of the oldest held byte after which it is handed over anyway.
        """
        self._max = max(4, max_bytes)
        self._idle = idle_seconds
        self._max_wait = max_wait_seconds
        self._pending = bytearray()
        self._redrawn = False  # a \r was seen in the line now open
        self._first_at = 0.0  # when the oldest held byte came
        self._last_at = 0.0  # when the last byte came

    @property
    def holding(self) -> bool:
        """Whether bytes of an unfinished line are held."""
        return bool(self._pending)

    def feed(self, chunk: bytes, now: float) -> list[Piece]:
        """Take a chunk as read and hand over every piece it completes.

        Args:
            chunk: The stream's bytes (a line may span chunks).
            now: When it was read (a monotonic clock), for the idle rules.

        Returns:
            The pieces, in order.
        """
        pieces: list[Piece] = []
        if not chunk:
            return pieces
        if not self._pending:
            self._first_at = now
        self._last_at = now
        if b"\r" not in chunk:  # most chunks: whole lines, split at once
            return self._feed_lines(chunk, now, pieces)
        start = 0
        size = len(chunk)
        ret = chunk.find(b"\r")  # searched again only once passed: no rescan per line
        while start < size:
            newline = chunk.find(b"\n", start)
            if ret != -1 and ret < start:
                ret = chunk.find(b"\r", start)
            if ret != -1 and (newline == -1 or ret < newline):
                end, kind = ret, PieceKind.STATE
            elif newline != -1:
                end, kind = newline, PieceKind.LINE
            else:
                self._hold(chunk[start:], pieces)
                break
            self._hold(chunk[start:end], pieces)
            pieces.extend(self._end(kind))
            start = end + 1
            self._first_at = now
        return pieces

    def _feed_lines(self, chunk: bytes, now: float, pieces: list[Piece]) -> list[Piece]:
        """:meth:`feed` for a chunk without ``\\r``: its whole lines as few pieces as it can."""
        first = chunk.find(b"\n")
        if first == -1:
            self._hold(chunk, pieces)
            return pieces
        self._hold(chunk[:first], pieces)
        pieces.extend(self._end(PieceKind.LINE))
        last = chunk.rfind(b"\n")
        if last > first:
            middle = chunk[first + 1 : last]
            if len(middle) <= self._max or max(map(len, middle.split(b"\n"))) <= self._max:
                pieces.append(Piece(PieceKind.LINE, middle))  # several lines in one piece
            else:
                for part in middle.split(b"\n"):
                    self._hold(part, pieces)
                    pieces.extend(self._end(PieceKind.LINE))
        self._first_at = now
        self._hold(chunk[last + 1 :], pieces)
        return pieces

    def due(self) -> float | None:
        """When held bytes are next due to be handed over (monotonic), or ``None``."""
        if not self._pending:
            return None
        return min(self._last_at + self._idle, self._first_at + self._max_wait)

    def flush_due(self, now: float) -> list[Piece]:
        """Hand over the unfinished line if it waited long enough.

        Args:
            now: The monotonic time.

        Returns:
            The piece (a state of a redrawn line, else a continued piece), or nothing.
        """
        due = self.due()
        if due is None or now < due:
            return []
        return self._flush()

    def finish(self) -> list[Piece]:
        """Hand over everything held, at the end of the stream.

        Returns:
            The unfinished line as a continued piece (a redrawn line: its last state and its
            end), or nothing.
        """
        pieces = self._flush()
        if self._redrawn:
            self._redrawn = False
            pieces.append(Piece(PieceKind.CLOSE, b""))
        return pieces

    def _flush(self) -> list[Piece]:
        if not self._pending:
            return []
        text = bytes(self._pending)
        self._pending.clear()
        kind = PieceKind.STATE if self._redrawn else PieceKind.CONTINUED
        return [Piece(kind, text)]

    def _hold(self, data: bytes, pieces: list[Piece]) -> None:
        """Keep ``data``, handing over full-size continued pieces as the line grows past the cap."""
        self._pending += data
        while len(self._pending) > self._max:
            cut = _character_boundary(self._pending, self._max)
            pieces.append(Piece(PieceKind.CONTINUED, bytes(self._pending[:cut])))
            del self._pending[:cut]

    def _end(self, kind: PieceKind) -> list[Piece]:
        text = bytes(self._pending)
        self._pending.clear()
        if kind is PieceKind.STATE:
            self._redrawn = True
            return [Piece(PieceKind.STATE, text)] if text else []
        redrawn, self._redrawn = self._redrawn, False
        if redrawn and not text:
            return [Piece(PieceKind.CLOSE, b"")]
        return [Piece(PieceKind.LINE, text)]


def _character_boundary(data: bytearray, limit: int) -> int:
    """The largest cut at or before ``limit`` that does not split a UTF-8 character, if near."""
    cut = limit
    for _ in range(3):
        if cut <= 1 or (data[cut] & 0xC0) != 0x80:
            break
        cut -= 1
    if (data[cut] & 0xC0) == 0x80:
        return limit  # not UTF-8 there: cut where the limit says
    return cut
