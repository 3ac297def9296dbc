"""Where the known lines of a log file start and end, for :class:`~x_tui.compute.logindex.LogIndex`.

The numbering is two parts. The *prefix* is counted blocks: per block, the offset just past its
last newline and the newlines up to there (``array('Q')``, no Python object per line); newline
positions inside a block are found again only when a line there is needed, and a few blocks' worth
are cached. The *tail*, from :attr:`LineTable.tail_start`, keeps each newline offset, so the lines
read on open and those appended since are at hand. Before the prefix is counted, line 0 is the
tail's first line.

A :class:`LineTable` holds no lock and no file: its owner holds its lock around every call and
passes the file descriptor to the calls that read blocks. This module imports no Textual and no
Rich.
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections import OrderedDict
from itertools import accumulate, count
from operator import add

BLOCK_CACHE = 8
"""Blocks whose newline offsets are kept after a read."""


def newline_offsets(data: bytes, base: int) -> array[int]:
    """Offsets of every newline in ``data``, which starts at ``base``; no Python loop per line.

    Args:
        data: Bytes read from the file.
        base: The offset of ``data``'s first byte.

    Returns:
        The newlines' offsets, in order.
    """
    parts = data.split(b"\n")
    parts.pop()
    return array("Q", map(add, accumulate(map(len, parts)), count(base)))


class LineTable:
    """Line boundaries of the indexed part of a file (see the module docstring)."""

    def __init__(self, block_size: int) -> None:
        """Start empty: no lines, the whole (empty) prefix known.

        Args:
            block_size: Bytes per counted block.
        """
        self.block_size = block_size
        """Bytes per counted block."""
        self.block_ends = array("Q")
        """Per counted block, the offset just past its last newline."""
        self.block_cum = array("Q")
        """Per counted block, the newlines from the file's start to its end."""
        self.prefix_known = True
        """Whether every line from the start of the file is counted."""
        self.tail_start = 0
        """Offset of the first line whose newline offset is kept one by one."""
        self.tail_nl = array("Q")
        """Offsets of the newlines from :attr:`tail_start` on."""
        self.end = 0
        """Bytes of the file indexed."""
        self._cache: OrderedDict[int, array[int]] = OrderedDict()

    def start_at(self, start: int) -> None:
        """Number from a line start near the end; the lines before it are counted later.

        Args:
            start: The offset of a line start (see ``find_tail_start``).
        """
        self.tail_start = start
        self.end = start
        self.prefix_known = False

    def install_prefix(self, ends: array[int], cum: array[int]) -> int:
        """Put the counted blocks before the tail in place.

        Args:
            ends: Each block's end offset, up to :attr:`tail_start`.
            cum: The newlines up to each block's end.

        Returns:
            The lines now known before what was line 0.
        """
        self.block_ends = ends + self.block_ends
        self.block_cum = cum
        self.prefix_known = True
        self._cache.clear()
        return cum[-1] if cum else 0

    # -- counts -------------------------------------------------------------------------------

    def prefix_lines(self) -> int:
        """Lines in the counted blocks."""
        return self.block_cum[-1] if self.block_cum else 0

    def last_line_start(self) -> int:
        """Offset of the last line's start (or of the end, when the last line is finished)."""
        return self.tail_nl[-1] + 1 if self.tail_nl else self.tail_start

    def has_partial(self) -> bool:
        """Whether the last line has bytes but no newline yet."""
        return self.end > self.last_line_start()

    def tail_lines(self) -> int:
        """Lines from :attr:`tail_start` on (an unfinished last line counts)."""
        return len(self.tail_nl) + self.has_partial()

    def line_count(self) -> int:
        """Lines known."""
        return self.prefix_lines() + self.tail_lines()

    # -- growing ------------------------------------------------------------------------------

    def append(self, data: bytes) -> None:
        """Index bytes read at :attr:`end`, keeping each newline offset.

        Args:
            data: The bytes at :attr:`end`.
        """
        self.tail_nl.extend(newline_offsets(data, self.end))
        self.end += len(data)

    def count_appended(self, fd: int, stop: int) -> None:
        """Count a large append in blocks (after folding the newline offsets kept one by one).

        Args:
            fd: The file, read with ``os.pread``.
            stop: Offset to count up to.
        """
        self.fold_tail()
        pos = self.end
        last_newline = -1
        while pos < stop:
            data = os.pread(fd, min(self.block_size, stop - pos), pos)
            if not data:
                break
            found = data.count(b"\n")
            if found:
                last_newline = pos + data.rfind(b"\n")
                total = (self.block_cum[-1] if self.block_cum else 0) + found
                self.block_ends.append(last_newline + 1)
                self.block_cum.append(total)
            pos += len(data)
        if last_newline != -1:
            self.tail_start = last_newline + 1
        self.end = pos

    def fold_tail(self) -> None:
        """Turn the newline offsets kept one by one into counted blocks (same line numbers)."""
        nl = self.tail_nl
        if not nl:
            return
        total = self.block_cum[-1] if self.block_cum else 0
        start = self.tail_start
        i = 0
        while i < len(nl):
            j = max(i, bisect.bisect_right(nl, start + self.block_size - 1, lo=i) - 1)
            total += j - i + 1
            start = nl[j] + 1
            self.block_ends.append(start)
            self.block_cum.append(total)
            i = j + 1
        self.tail_start = start
        self.tail_nl = array("Q")

    # -- lookups ------------------------------------------------------------------------------

    def span(self, fd: int | None, number: int) -> tuple[int, int]:
        """The byte span of a line, its newline excluded.

        Args:
            fd: The file, read when the line is in a block not cached.
            number: A line number, ``0 <= number < line_count()``.

        Returns:
            ``(start, end)`` byte offsets.

        Raises:
            IndexError: If there is no such line.
        """
        total = self.line_count()
        if not 0 <= number < total:
            raise IndexError(f"line {number} is not in the index ({total} lines)")
        prefix = self.prefix_lines()
        if number < prefix:
            start = self._newline(fd, number) + 1 if number else 0
            return start, self._newline(fd, number + 1)
        k = number - prefix
        start = self.tail_nl[k - 1] + 1 if k else self.tail_start
        end = self.tail_nl[k] if k < len(self.tail_nl) else self.end
        return start, end

    def line_number_at(self, fd: int | None, offset: int) -> int | None:
        """The number of the line holding a byte.

        Args:
            fd: The file, read when the byte is in a block not cached.
            offset: A byte offset in the file.

        Returns:
            The line number, or ``None`` if the byte is before the known lines or past the end.
        """
        if offset >= self.end:
            return None
        if offset >= self.tail_start:
            return self.prefix_lines() + bisect.bisect_left(self.tail_nl, offset)
        if not self.prefix_known:
            return None
        block = bisect.bisect_right(self.block_ends, offset)
        before = self.block_cum[block - 1] if block else 0
        return before + bisect.bisect_left(self._block_newlines(fd, block), offset)

    def _newline(self, fd: int | None, m: int) -> int:
        """Offset of the ``m``-th newline (1-based) of the known region."""
        prefix = self.prefix_lines()
        if m > prefix:
            return self.tail_nl[m - prefix - 1]
        block = bisect.bisect_left(self.block_cum, m)
        before = self.block_cum[block - 1] if block else 0
        return self._block_newlines(fd, block)[m - before - 1]

    def _block_newlines(self, fd: int | None, block: int) -> array[int]:
        cached = self._cache.get(block)
        if cached is not None:
            self._cache.move_to_end(block)
            return cached
        assert fd is not None
        start = self.block_ends[block - 1] if block else 0
        data = os.pread(fd, self.block_ends[block] - start, start)
        offsets = newline_offsets(data, start)
        self._cache[block] = offsets
        if len(self._cache) > BLOCK_CACHE:
            self._cache.popitem(last=False)
        return offsets
