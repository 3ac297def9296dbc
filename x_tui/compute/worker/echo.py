"""The worker's own output, the combined log: every task's pieces, prefixed, on whole lines.

The worker's stdout and stderr are what a backend keeps as the run's log (the local backend sends
both to ``worker.log``). :class:`CombinedLog` writes there the pieces a
:class:`~x_tui.compute.worker.line_assembly.LineAssembler` cuts from each task stream, each prefixed
``[<task>] `` and on the worker stream of the same name:

- a line as ``[<task>] <line>\\n``;
- a ``\\r``-redrawn line as its states, each prefixed and drawn over the one before:
  ``[<task>] 10%\\r[<task>] 20%...``, ended by ``\\n`` when the task ends it (the line never ends
  in ``\\r``); a viewer that shows a ``\\r`` line as a terminal would shows its last state,
  prefixed;
- a line handed over before it ended as ``[<task>] <text> ↵\\n`` (``CONTINUED_MARK``).

One stream's redrawn line may be left open between states; anything else written (the other
stream's line, the worker's own notice) first ends it with ``\\n`` on the stream that opened it, so
no two streams ever share a line and a notice is always a line of its own. A redrawn line is ended
too once it holds :data:`MAX_REDRAWN_LINE_BYTES` of states, so a bar drawn for hours never makes
one enormous line for a reader that reads whole lines.

When given a :class:`~x_tui.compute.worker.log_times.TimesWriter`, it records when each line it
starts was received, against the line's offset in the log file (only while its streams are that
regular file, as under the local backend).

A broken stream is skipped, never raised, so a closed terminal cannot fail a task. Standard
library only, for Python 3.10 and later: it ships inside the worker zipapp. It never writes a
task's own log files.
"""

from __future__ import annotations

import os
import stat
import time
from typing import IO

from x_tui.compute.worker.line_assembly import CONTINUED_MARK, Piece, PieceKind
from x_tui.compute.worker.log_times import TimesWriter

MAX_REDRAWN_LINE_BYTES = 64 * 1024
"""Bytes of states one redrawn line holds at most; the next state starts a new line."""


def emit(stream: IO[str] | None, data: bytes) -> None:
    """Write bytes to one of the worker's own streams, as they are; a broken stream is skipped.

    Args:
        stream: The stream (its binary ``buffer`` when it has one); nothing is written if ``None``.
        data: The bytes.
    """
    if stream is None or not data:
        return
    try:
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode("utf-8", "replace"))
            stream.flush()
    except (OSError, ValueError):
        pass


def _file_identity(stream: IO[str] | None) -> tuple[int, int] | None:
    """The (device, inode) of a stream that is a regular file, else ``None``."""
    if stream is None:
        return None
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


class CombinedLog:
    """The worker's two streams, written a whole line (or a redrawn line's state) at a time."""

    def __init__(
        self,
        stdout: IO[str] | None,
        stderr: IO[str] | None,
        *,
        times: TimesWriter | None = None,
    ) -> None:
        """Write to ``stdout`` and ``stderr`` (``None``: nowhere).

        Args:
            stdout: The worker's stdout, for task stdout and the worker's notes.
            stderr: The worker's stderr, for task stderr.
            times: Where to record when each line was received; used only while ``stdout`` is
                a regular file (and for ``stderr`` only when it is the same file).
        """
        self._streams = (stdout, stderr)
        self._open: int | None = None  # the stream whose redrawn line is open
        self._open_bytes = 0  # bytes of states on the open line
        identity = _file_identity(stdout)
        self._timed = (
            identity is not None,
            identity is not None and _file_identity(stderr) == identity,
        )
        self._times = times if identity is not None else None

    def write(
        self, task: str, stream: int, pieces: list[Piece], received: float | None = None
    ) -> None:
        """Write a task stream's pieces, prefixed with the task's name.

        Args:
            task: The task's name.
            stream: 0 for its stdout, 1 for its stderr.
            pieces: What its :class:`~x_tui.compute.worker.line_assembly.LineAssembler` handed over.
            received: When the bytes were received (``time.time()``); now when ``None``.
        """
        if not pieces or self._streams[stream] is None:
            return
        prefix = f"[{task}] ".encode()
        out = bytearray()
        if self._open is not None and self._open != stream:
            self._end_open()
        start_at = None if self._open == stream else 0  # where the first new line starts
        for piece in pieces:
            if piece.kind is PieceKind.CLOSE:
                if self._open == stream:
                    out += b"\n"
                    self._open = None
                continue
            before = len(out)
            if self._open == stream:  # this stream's redrawn line is open: draw over it
                if self._open_bytes >= MAX_REDRAWN_LINE_BYTES:
                    out += b"\n"  # a bar redrawn for hours: its states go on on a new line
                    self._open = None
                else:
                    out += b"\r"
            if self._open is None:
                self._open_bytes = 0
                if start_at is None:
                    start_at = len(out)
            if piece.kind is PieceKind.LINE:  # one or more lines, each prefixed
                out += prefix + piece.text.replace(b"\n", b"\n" + prefix) + b"\n"
                self._open = None
            elif piece.kind is PieceKind.STATE:
                out += prefix + piece.text
                self._open = stream
                self._open_bytes += len(out) - before
            else:
                out += prefix + piece.text + CONTINUED_MARK + b"\n"
                self._open = None
        self._emit(stream, bytes(out), start_at, received)

    def note(self, task: str | None, text: str) -> None:
        """Write a line of the worker's own on its stdout, always on a line of its own.

        Args:
            task: The task it is about (prefixed ``[<task>] ``), or ``None`` for the run.
            text: The line, without its newline.
        """
        self.note_on(0, task, text)

    def note_on(self, stream: int, task: str | None, text: str) -> None:
        """Like :meth:`note`, on stdout (0) or stderr (1).

        Args:
            stream: 0 for stdout, 1 for stderr.
            task: The task it is about, or ``None`` for the run.
            text: The line, without its newline.
        """
        if self._streams[stream] is None:
            return
        if self._open is not None:
            self._end_open()
        prefix = f"[{task}] " if task is not None else ""
        self._emit(stream, (prefix + text + "\n").encode(), 0, None)

    def end_lines(self) -> None:
        """End a redrawn line left open, so whatever is written next starts a line."""
        if self._open is not None:
            self._end_open()

    def _end_open(self) -> None:
        stream, self._open = self._open, None
        if stream is not None:
            emit(self._streams[stream], b"\n")

    def _emit(self, stream: int, data: bytes, start_at: int | None, received: float | None) -> None:
        """Write ``data``; a line starting at ``start_at`` in it gets its time recorded."""
        target = self._streams[stream]
        if target is None or not data:
            return
        if start_at is not None and self._times is not None and self._timed[stream]:
            try:
                target.flush()
                offset = os.lseek(target.fileno(), 0, os.SEEK_CUR)
            except (OSError, ValueError):
                self._times = None
            else:
                when = time.time() if received is None else received
                self._times.mark(offset + start_at, when)
        emit(target, data)
