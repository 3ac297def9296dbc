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

The parts live beside it: ``logindex_follow`` (the file followed: open, refresh, close, the
background count), ``logindex_scan`` (the backwards tail reader and the block count),
``logindex_table`` (line boundaries: counted blocks and kept newline offsets), ``logindex_read``
(a line's text, capped), ``logindex_search`` (queries and the chunked search) and
``logindex_records``. What callers use is importable from here.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator

from x_tui.compute.logindex_follow import (
    BLOCK_SIZE,
    COUNT_BYTES,
    FOLD_LINES,
    REFRESH_BYTES,
    TAIL_BYTES,
    FollowedLog,
)
from x_tui.compute.logindex_read import read_capped
from x_tui.compute.logindex_records import IndexChange, LogLine
from x_tui.compute.logindex_search import (
    ERROR_QUERY,
    InvalidSearchError,
    SearchQuery,
    search_fd,
)
from x_tui.compute.logindex_table import BLOCK_CACHE

__all__ = [
    "BLOCK_CACHE",
    "BLOCK_SIZE",
    "COUNT_BYTES",
    "ERROR_QUERY",
    "FOLD_LINES",
    "REFRESH_BYTES",
    "TAIL_BYTES",
    "IndexChange",
    "InvalidSearchError",
    "LogIndex",
    "LogLine",
    "SearchQuery",
]


class LogIndex(FollowedLog):
    """A line index over one log file (see the module docstring for the design).

    Use it as a context manager, or call :meth:`open` and, when done, :meth:`close`; following
    (:meth:`open`, :meth:`refresh`, :meth:`close`) is :class:`FollowedLog`'s part.
    """

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
            text, cut = read_capped(fd, start, end, self._max_line_bytes)
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
            return read_capped(fd, start, end, self._max_line_bytes)

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
