"""A line index over a log file that may keep growing, for a viewer that opens gigabytes at once.

The index never loads the file. :meth:`LogIndex.open` reads the file's tail backwards from the end,
so the last screenful is there at once, numbered from the first line of that tail; a background
thread then counts the newlines before the tail, one 1 MiB block at a time with ``bytes.count``
(no Python object per line: a count and an end offset per block, in ``array('Q')``). When the count
is done, :meth:`LogIndex.refresh` installs it and reports how many lines now come before the old
first line, so a view can keep its place. Newline positions inside a block are found again only
when a line there is read, and a few blocks' worth are cached.

:meth:`LogIndex.refresh` also follows the file: it re-checks from the saved offset, indexes what was
appended (at most ``max_bytes`` per call, so a caller on a UI thread never stalls), and starts over
when the file was truncated, rewritten or replaced (rotation).

Line text is read with ``os.pread`` and capped for display; :meth:`LogIndex.search` scans the file
in chunks and yields the start offsets of matching lines as it goes, matching what a viewer shows
(the sanitised plain text), never holding the file in memory.

Threads: one thread calls :meth:`refresh` (the UI's), the index's own thread counts the prefix, and
any thread may read lines or search. All shared state is behind one lock. Line numbers change only
inside :meth:`open` and :meth:`refresh`, so the thread that calls them always knows which numbering
it holds. This module imports no Textual and no Rich.

Three parts with an API of their own live beside it: :mod:`x_tui.compute.logindex_table` (line
boundaries: counted blocks and kept newline offsets, called with this index's lock held),
:mod:`x_tui.compute.logindex_scan` (the backwards tail reader and the block count) and
:mod:`x_tui.compute.logindex_search` (queries and the chunked search over a descriptor).
"""

from __future__ import annotations

import os
import re
import threading
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from x_tui.compute.logindex_scan import count_blocks, find_tail_start
from x_tui.compute.logindex_search import SearchQuery, search_fd
from x_tui.compute.logindex_table import LineTable
from x_tui.compute.sanitize import MAX_LINE_CHARS, decode

BLOCK_SIZE = 1 << 20
"""Bytes per counted block."""

TAIL_BYTES = 256 << 10
"""Bytes read backwards from the end when a file is opened (a few thousand lines)."""

REFRESH_BYTES = 4 << 20
"""Default limit of appended bytes one :meth:`LogIndex.refresh` indexes line by line."""

COUNT_BYTES = 32 << 20
"""Appended bytes one refresh may count by blocks, once the whole file is indexed."""

FOLD_LINES = 1 << 16
"""Newline offsets kept one by one at the end before they are folded into counted blocks."""

_SIGNATURE_BYTES = 64


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


class LogIndex:
    """A line index over one log file (see the module docstring for the design).

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

    # -- state --------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        """Lines known: the whole file once indexed, else the tail read on open (and appends)."""
        with self._lock:
            return self._table.line_count()

    @property
    def complete(self) -> bool:
        """Whether every line from the start of the file is counted (line 0 is the file's first)."""
        with self._lock:
            return self._table.prefix_known

    @property
    def progress(self) -> float:
        """How much of the background count is done, from 0.0 to 1.0."""
        with self._lock:
            if self._table.prefix_known or not self._scan_target:
                return 1.0
            return min(1.0, self._scanned / self._scan_target)

    @property
    def numbering(self) -> int:
        """Changes whenever line numbers change meaning (a reset, or lines known before line 0).

        A thread that holds line numbers compares this before and after using them.
        """
        with self._lock:
            return self._numbering

    @property
    def start_offset(self) -> int:
        """Byte offset of line 0: 0 once the whole file is indexed, else the tail's start."""
        with self._lock:
            table = self._table
            return 0 if table.prefix_known else table.tail_start

    def resume_offset(self) -> int:
        """Where a search that covered :attr:`size` must look again when the file grows.

        Returns:
            The start of the last line if it is unfinished (it may still change), else :attr:`size`.
        """
        with self._lock:
            table = self._table
            return table.last_line_start() if table.has_partial() else table.end

    @property
    def size(self) -> int:
        """Bytes of the file indexed so far."""
        with self._lock:
            return self._table.end

    # -- numbering ----------------------------------------------------------------------------

    def span(self, number: int) -> tuple[int, int]:
        """The byte span of a line, its newline excluded.

        Args:
            number: A line number, ``0 <= number < line_count``.

        Returns:
            ``(start, end)`` byte offsets.

        Raises:
            IndexError: If there is no such line.
        """
        with self._lock:
            return self._table.span(self._fd, number)

    def line_number_at(self, offset: int) -> int | None:
        """The number of the line holding a byte.

        Args:
            offset: A byte offset in the file.

        Returns:
            The line number, or ``None`` if the byte is before the known lines (the background
            count has not finished) or past the indexed end.
        """
        with self._lock:
            return self._table.line_number_at(self._fd, offset)

    # -- reading ------------------------------------------------------------------------------

    def line(self, number: int) -> LogLine:
        """Read one line for display.

        Args:
            number: A line number, ``0 <= number < line_count``.

        Returns:
            The line, its text capped (see :class:`LogLine`).

        Raises:
            IndexError: If there is no such line.
        """
        with self._lock:
            start, end = self._table.span(self._fd, number)
            fd = self._fd
            assert fd is not None
            text, cut = _read_capped(fd, start, end, self._max_line_bytes)
        return LogLine(number=number, start=start, end=end, text=text, cut=cut)

    def lines(self, start: int, stop: int) -> list[LogLine]:
        """Read the lines ``start <= n < stop`` (clipped to the known lines).

        Args:
            start: First line number.
            stop: Line number after the last.

        Returns:
            The lines, in order.
        """
        with self._lock:
            stop = min(stop, self._table.line_count())
            return [self.line(n) for n in range(max(0, start), stop)]

    def read(self, start: int, end: int) -> tuple[str, bool]:
        """Read a line's text by its span (from :meth:`span`), capped as :meth:`line` does.

        Args:
            start: Byte offset of the line's start.
            end: Byte offset of the line's end, its newline excluded.

        Returns:
            The decoded text and whether it was cut.
        """
        with self._lock:
            fd = self._fd
            if fd is None:
                return "", False
            return _read_capped(fd, start, end, self._max_line_bytes)

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        query: SearchQuery | re.Pattern[str],
        *,
        start: int = 0,
        stop: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[int]:
        """Find lines whose displayed text matches, reading the file in chunks.

        Matching is on what a viewer shows: escape sequences removed, ``\\r`` resolved, long lines
        capped. ``start`` should be a line start (0, or just after a newline).

        Args:
            query: A query, or a compiled pattern (compile with ``re.MULTILINE``).
            start: Byte offset to start at.
            stop: Byte offset to stop at; the indexed size when ``None``.
            cancel: Set it to stop the search early.

        Yields:
            The start offset of each matching line, in file order.

        Raises:
            InvalidSearchError: If the query's pattern is not a valid regular expression.
        """
        pattern = query.compile() if isinstance(query, SearchQuery) else query
        with self._lock:
            if self._fd is None:
                return
            fd = os.dup(self._fd)
            limit = self._table.end if stop is None else stop
        try:
            yield from search_fd(fd, pattern, start, limit, cap=self._max_line_bytes, cancel=cancel)
        finally:
            os.close(fd)

    def matching_lines(
        self,
        query: SearchQuery | re.Pattern[str],
        *,
        start: int = 0,
        stop: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[int]:
        """Like :meth:`search`, yielding line numbers (valid while :attr:`numbering` is unchanged).

        Args:
            query: A query, or a compiled pattern (compile with ``re.MULTILINE``).
            start: Byte offset to start at (a line start, at or after :attr:`start_offset`).
            stop: Byte offset to stop at; the indexed size when ``None``.
            cancel: Set it to stop the search early.

        Yields:
            The number of each matching line, in order.

        Raises:
            InvalidSearchError: If the query's pattern is not a valid regular expression.
        """
        for offset in self.search(query, start=start, stop=stop, cancel=cancel):
            number = self.line_number_at(offset)
            if number is not None:
                yield number


def _read_capped(fd: int, start: int, end: int, cap: int) -> tuple[str, bool]:
    """Read the bytes ``[start, end)`` of a line, capped for display.

    Args:
        fd: An open file descriptor, read with ``os.pread``.
        start: Byte offset of the line's start.
        end: Byte offset of the line's end, its newline excluded.
        cap: Bytes read at most from the line's start (and from its last ``\\r`` part).

    Returns:
        The decoded text (UTF-8, invalid bytes replaced; not sanitised) and whether it was cut.
    """
    if end - start <= cap:
        return decode(os.pread(fd, end - start, start)), False
    head = os.pread(fd, cap, start)
    tail = os.pread(fd, cap, end - cap)
    cr = tail.rfind(b"\r", 0, len(tail) - 1 if tail.endswith(b"\r") else len(tail))
    if cr != -1:
        # A progress bar redrawn for hours: show its latest state over its first.
        return decode(head) + "\r" + decode(tail[cr + 1 :]), True
    return decode(head), True
