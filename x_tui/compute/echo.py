"""The worker's own output: a task's bytes copied to stdout or stderr, each line prefixed.

Every line a task writes is echoed as ``[<task>] <line>`` on the worker's stream of the same
name, byte for byte; the worker's own notes go the same way. A broken stream is skipped, never
raised, so a closed terminal cannot fail a task.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. It never
writes a task's log files.
"""

from __future__ import annotations

from typing import IO


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


class Echo:
    """Copies a task's bytes to a worker stream with ``[<task>] `` at the start of each line."""

    def __init__(self, stream: IO[str] | None, task: str) -> None:
        """Echo to ``stream``, or nowhere when it is ``None``.

        Args:
            stream: The worker's stream, or ``None`` to echo nothing.
            task: The task's name, for the prefix.
        """
        self._stream = stream
        self._prefix = f"[{task}] ".encode()
        self._at_line_start = True

    def __call__(self, chunk: bytes) -> None:
        """Echo a chunk, prefixing every line that starts in it.

        Args:
            chunk: The task's bytes, as read; a line may span chunks.
        """
        if self._stream is None:
            return
        pieces = chunk.split(b"\n")
        out = bytearray()
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if self._at_line_start and (piece or not last):
                out += self._prefix
            out += piece
            if not last:
                out += b"\n"
                self._at_line_start = True
            elif piece:
                self._at_line_start = False
        emit(self._stream, bytes(out))

    def line(self, text: str) -> None:
        """Echo a line of the worker's own, prefixed, starting a new line if one is open.

        Args:
            text: The line, without its newline.
        """
        if self._stream is not None:
            self(("" if self._at_line_start else "\n").encode() + text.encode() + b"\n")
