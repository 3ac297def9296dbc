"""When each line of a combined log was received: a side file beside the log (``<log>.times``).

substrax's readers see only ``worker.log``, so the receive times go in a file of x-tui's own
beside it, ``worker.log.times``, written by the worker as it writes the log (see
``docs/log-times.md``). The format is append-only and binary, so a record is one ``write`` and a
reader can binary-search it without reading it all:

- a 16-byte header: :data:`MAGIC` (8 bytes), then the base time, milliseconds since the Unix
  epoch, as an unsigned 64-bit little-endian integer;
- then 12-byte records, each the byte offset in the log where a line starts (unsigned 64-bit
  little-endian) and the time that line was received, in milliseconds after the base time
  (unsigned 32-bit little-endian).

Offsets and times never decrease from one record to the next. A line's time is the time of the
last record at or before its start; a record is written only when a line starts at a time other
than the last record's, so the many lines of one read share one record. A trailing record cut
short (the worker was killed mid-write) is ignored. Times more than 2**32 ms (49 days) after
the base are not recorded.

Standard library only, for Python 3.10 and later: the writer ships inside the worker zipapp.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

MAGIC = b"XTTIMES1"
"""The first 8 bytes of a times file (format version 1)."""

SUFFIX = ".times"
"""Appended to a log's file name to name its times file."""

_HEADER = struct.Struct("<8sQ")
_RECORD = struct.Struct("<QI")
_MAX_DELTA = 0xFFFFFFFF


def times_path(log: Path) -> Path:
    """The times file of a log: ``worker.log`` -> ``worker.log.times``.

    Args:
        log: The log file.

    Returns:
        The side file's path, beside it.
    """
    return log.with_name(log.name + SUFFIX)


class TimesWriter:
    """Appends records to a times file, created (and truncated) when it is opened."""

    def __init__(self, path: Path, *, base: float) -> None:
        """Create the file with its header.

        Args:
            path: The times file.
            base: The base time (``time.time()`` at the start of the log).

        Raises:
            OSError: If the file cannot be created.
        """
        self._base_ms = max(0, int(base * 1000))
        self._fd: int | None = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644
        )
        self._last_offset = -1
        self._last_delta = -1
        self._write(_HEADER.pack(MAGIC, self._base_ms))

    def mark(self, offset: int, when: float) -> None:
        """Record that the line starting at ``offset`` was received at ``when``.

        Args:
            offset: The line's first byte in the log.
            when: When it was received (``time.time()``).
        """
        if self._fd is None or offset < self._last_offset:
            return
        delta = max(self._last_delta, int(when * 1000) - self._base_ms, 0)
        if delta > _MAX_DELTA or delta == self._last_delta:
            return
        self._last_offset, self._last_delta = offset, delta
        self._write(_RECORD.pack(offset, delta))

    def close(self) -> None:
        """Close the file; later marks are dropped."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            os.write(self._fd, data)
        except OSError:  # a full disk: the log goes on without times
            self.close()


class LogTimes:
    """Reads a times file: the receive time of the line starting at a given offset.

    The file is read record by record (``pread``), so it may grow while it is read and may be of
    any size; only the header is read when it is opened.
    """

    def __init__(self, path: Path) -> None:
        """Open a times file.

        Args:
            path: The times file.

        Raises:
            OSError: If it cannot be opened.
            ValueError: If it is not a times file (no header, another format).
        """
        self._fd = os.open(path, os.O_RDONLY)
        try:
            header = os.pread(self._fd, _HEADER.size, 0)
            if len(header) < _HEADER.size:
                raise ValueError(f"{path}: not a times file (no header)")
            magic, base_ms = _HEADER.unpack(header)
            if magic != MAGIC:
                raise ValueError(f"{path}: not a times file of this version")
        except BaseException:
            os.close(self._fd)
            raise
        self._base_ms: int = base_ms

    def __enter__(self) -> LogTimes:
        """Use as a context manager that closes the file."""
        return self

    def __exit__(self, *_exc: object) -> None:
        """Close the file."""
        self.close()

    def close(self) -> None:
        """Close the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def count(self) -> int:
        """Whole records the file holds now."""
        return max(0, (os.fstat(self._fd).st_size - _HEADER.size) // _RECORD.size)

    def record(self, number: int) -> tuple[int, float]:
        """One record: the offset where a line starts and its time (seconds since the epoch).

        Args:
            number: The record's number, from 0.

        Returns:
            The offset and the time.
        """
        data = os.pread(self._fd, _RECORD.size, _HEADER.size + number * _RECORD.size)
        offset, delta = _RECORD.unpack(data)
        return offset, (self._base_ms + delta) / 1000

    def time_at(self, offset: int) -> float | None:
        """When the line starting at ``offset`` was received.

        Args:
            offset: The line's first byte in the log.

        Returns:
            The time (seconds since the epoch) of the last record at or before ``offset``, or
            ``None`` when no record is (a line written before the times began).
        """
        low, high = 0, self.count
        while low < high:  # first record whose offset is past ``offset``
            middle = (low + high) // 2
            if self.record(middle)[0] <= offset:
                low = middle + 1
            else:
                high = middle
        return self.record(low - 1)[1] if low else None
