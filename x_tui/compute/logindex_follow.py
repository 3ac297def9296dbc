"""Following a log file as it grows: the base of :class:`~x_tui.compute.logindex.LogIndex`.

:class:`FollowedLog` owns the file descriptor, the lock and the line table.
:meth:`~FollowedLog.open` numbers from the file's tail and starts the background count of the
lines before it in a thread of the index's own; :meth:`~FollowedLog.refresh` installs that count
when done, indexes what was appended (at most ``max_bytes`` line by line per call) and starts over
when the file was truncated, rewritten or replaced. Reading lines and searching are
:class:`~x_tui.compute.logindex.LogIndex`'s part.
This module imports no Textual and no Rich.
"""

from __future__ import annotations

import os
import threading
from array import array
from pathlib import Path
from typing import Self

from x_tui.compute.logindex_records import IndexChange
from x_tui.compute.logindex_scan import count_blocks, find_tail_start
from x_tui.compute.logindex_table import LineTable
from x_tui.compute.sanitize import MAX_LINE_CHARS

BLOCK_SIZE = 1 << 20
"""Bytes per counted block."""

TAIL_BYTES = 256 << 10
"""Bytes read backwards from the end when a file is opened (a few thousand lines)."""

REFRESH_BYTES = 4 << 20
"""Default limit of appended bytes one :meth:`FollowedLog.refresh` indexes line by line."""

COUNT_BYTES = 32 << 20
"""Appended bytes one refresh may count by blocks, once the whole file is indexed."""

FOLD_LINES = 1 << 16
"""Newline offsets kept one by one at the end before they are folded into counted blocks."""

_SIGNATURE_BYTES = 64


class FollowedLog:
    """A log file kept indexed as it grows (see the module docstring).

    Use it as a context manager, or call :meth:`open` and, when done, :meth:`close`.
    """

    def __init__(
        self,
        path: Path,
        *,
        block_size: int = BLOCK_SIZE,
        tail_bytes: int = TAIL_BYTES,
        max_line_bytes: int = MAX_LINE_CHARS,
    ) -> None:
        """Prepare an index over ``path``; nothing is read until :meth:`open`.

        Args:
            path: The log file. It need not exist yet; it is looked for on every refresh.
            block_size: Bytes per counted block.
            tail_bytes: Bytes read backwards from the end on open.
            max_line_bytes: Bytes of a line's start (and of its last ``\\r`` part) read for display.
        """
        self._path = path
        self._block_size = block_size
        self._tail_bytes = tail_bytes
        self._max_line_bytes = max_line_bytes
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._generation = 0
        self._numbering = 0
        self._scanner: threading.Thread | None = None
        self._clear()

    def _clear(self) -> None:
        self._table = LineTable(self._block_size)
        self._signature = b""
        self._pending: tuple[int, array[int], array[int]] | None = None
        self._scan_target = 0
        self._scanned = 0

    # -- lifetime -----------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        """The file this index reads."""
        return self._path

    def open(self) -> IndexChange:
        """Read the file's tail (if the file exists) and start counting the lines before it.

        Returns:
            The change from an empty index: ``appended`` is the number of lines known now.
        """
        with self._lock:
            self._closed.clear()
            self._numbering += 1
            self._open_file()
            return self._catch_up(REFRESH_BYTES, reset=False)

    def close(self) -> None:
        """Stop the background count and close the file. The index reads nothing afterwards."""
        self._closed.set()
        with self._lock:
            self._generation += 1
            self._numbering += 1
            self._close_fd()
            self._clear()
        scanner = self._scanner
        if scanner is not None and scanner is not threading.current_thread():
            scanner.join()

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Wait for the background count to finish (it is installed by the next refresh).

        Args:
            timeout: Seconds to wait at most; ``None`` waits as long as it takes.

        Returns:
            Whether the count finished (or there was none to do).
        """
        scanner = self._scanner
        if scanner is not None:
            scanner.join(timeout)
            return not scanner.is_alive()
        return True

    # -- following ----------------------------------------------------------------------------

    def refresh(self, max_bytes: int = REFRESH_BYTES) -> IndexChange:
        """Look at the file again: install a finished count, index appended bytes, detect resets.

        Args:
            max_bytes: Appended bytes to index line by line in this call at most (more are
                counted in blocks once the whole file is indexed); ``more`` says if some wait.

        Returns:
            What changed since the last call.
        """
        with self._lock:
            if self._closed.is_set():
                return IndexChange()
            if self._fd is None:
                if not self._open_file():
                    return IndexChange()
                self._numbering += 1
                return self._catch_up(max_bytes, reset=True)
            if self._replaced():
                self._close_fd()
                self._generation += 1
                self._numbering += 1
                self._clear()
                self._open_file()
                return self._catch_up(max_bytes, reset=True)
            prepended = self._install_prefix()
            change = self._catch_up(max_bytes, reset=False)
            if prepended:
                return IndexChange(
                    prepended=prepended,
                    appended=change.appended,
                    last_changed=change.last_changed,
                    more=change.more,
                )
            return change

    def _open_file(self) -> bool:
        try:
            fd = os.open(self._path, os.O_RDONLY)
        except OSError:
            return False
        stat = os.fstat(fd)
        self._fd = fd
        self._ident = (stat.st_dev, stat.st_ino)
        self._generation += 1
        size = stat.st_size
        if size > self._tail_bytes * 2:
            self._start_at_tail(fd, size)
        return True

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._ident = None

    def _replaced(self) -> bool:
        """Whether the path now names another file, or the file shrank or was rewritten."""
        assert self._fd is not None
        try:
            stat = os.stat(self._path)
        except OSError:
            return False  # deleted: keep reading what the open descriptor still holds
        if (stat.st_dev, stat.st_ino) != self._ident:
            return True
        end = self._table.end
        if stat.st_size < end:
            return True
        if self._signature:
            at = end - len(self._signature)
            return os.pread(self._fd, len(self._signature), at) != self._signature
        return False

    def _start_at_tail(self, fd: int, size: int) -> None:
        """Number from the first line start in the last ``tail_bytes``; count the rest apart."""
        start = find_tail_start(fd, size, self._tail_bytes)
        if start is None:
            return  # one enormous line: index it from the start, step by step
        self._table.start_at(start)
        self._scan_target = start
        self._scanned = 0
        generation = self._generation
        dup = os.dup(fd)
        self._scanner = threading.Thread(
            target=self._count_prefix,
            args=(dup, generation, start),
            name=f"logindex-{self._path.name}",
            daemon=True,
        )
        self._scanner.start()

    def _count_prefix(self, fd: int, generation: int, stop: int) -> None:
        """Count newlines in ``[0, stop)`` per block (runs in the index's own thread)."""
        try:
            counted = count_blocks(
                fd,
                stop,
                self._block_size,
                stopped=lambda: self._closed.is_set() or generation != self._generation,
                progress=self._count_progress,
            )
        finally:
            os.close(fd)
        if counted is None:
            return
        ends, cum = counted
        with self._lock:
            if generation == self._generation:
                self._pending = (generation, ends, cum)

    def _count_progress(self, scanned: int) -> None:
        self._scanned = scanned

    def _install_prefix(self) -> int:
        pending = self._pending
        if pending is None or pending[0] != self._generation:
            return 0
        self._pending = None
        _, ends, cum = pending
        self._numbering += 1
        return self._table.install_prefix(ends, cum)

    def _catch_up(self, max_bytes: int, *, reset: bool) -> IndexChange:
        """Index bytes appended since the indexed end (at most ``max_bytes`` line by line)."""
        fd = self._fd
        if fd is None:
            return IndexChange(reset=reset)
        table = self._table
        before = table.line_count()
        was_partial = table.has_partial()
        old_end = table.end
        size = os.fstat(fd).st_size
        if table.prefix_known and size - table.end > max_bytes:
            table.count_appended(fd, min(size, table.end + max(COUNT_BYTES, max_bytes)))
        else:
            table.append(os.pread(fd, min(size - table.end, max_bytes), table.end))
        if table.prefix_known and len(table.tail_nl) > FOLD_LINES:
            table.fold_tail()
        if table.end:
            width = min(_SIGNATURE_BYTES, table.end)
            self._signature = os.pread(fd, width, table.end - width)
        return IndexChange(
            reset=reset,
            appended=table.line_count() - before,
            last_changed=was_partial and table.end > old_end,
            more=size > table.end,
        )
