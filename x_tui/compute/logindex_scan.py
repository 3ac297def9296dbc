"""How :class:`~x_tui.compute.logindex.LogIndex` opens a big file: tail first, then the rest.

:func:`find_tail_start` reads backwards from the end for the first whole line of the last few
hundred KiB, so a viewer shows the last screenful at once; :func:`count_blocks` then counts the
newlines before it, one block at a time with ``bytes.count`` (a count and an end offset per block,
in ``array('Q')``, no Python object per line), in the index's own thread. Neither holds a lock or
any state of the index. This module imports no Textual and no Rich.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable

_TAIL_GROWTH = 64
"""How many times ``tail_bytes`` the tail reader looks back at most for a line start."""


def find_tail_start(fd: int, size: int, tail_bytes: int) -> int | None:
    """Find the first line start in the last ``tail_bytes`` of a file, looking further if needed.

    Args:
        fd: An open file descriptor, read with ``os.pread``.
        size: The file's size in bytes.
        tail_bytes: Bytes to read back from the end at first (grown four times at a time).

    Returns:
        The offset just after a newline, with at least one byte after it; ``None`` when none is
        found within ``64 * tail_bytes`` of the end (one enormous line: index from the start).
    """
    back = tail_bytes
    while True:
        at = max(0, size - back - 1)
        data = os.pread(fd, size - at, at)
        first = data.find(b"\n")
        if first != -1 and at + first + 1 < size:
            return at + first + 1
        if at == 0 or back > _TAIL_GROWTH * tail_bytes:
            return None
        back *= 4


def count_blocks(
    fd: int,
    stop: int,
    block_size: int,
    *,
    stopped: Callable[[], bool],
    progress: Callable[[int], None],
) -> tuple[array[int], array[int]] | None:
    """Count the newlines in ``[0, stop)``, one block at a time.

    Args:
        fd: An open file descriptor, read with ``os.pread`` (not closed here).
        stop: Byte offset to count up to.
        block_size: Bytes per block.
        stopped: Asked before each block; when it answers ``True`` the count is given up.
        progress: Told the offset counted up to after each block.

    Returns:
        ``(ends, cumulative)``: each block's end offset and the newlines up to it; ``None`` when
        the count was given up, the file was truncated under it, or a read failed.
    """
    ends = array("Q")
    cum = array("Q")
    total = 0
    pos = 0
    try:
        while pos < stop:
            if stopped():
                return None
            data = os.pread(fd, min(block_size, stop - pos), pos)
            if not data:
                return None  # truncated under us: the next refresh resets
            total += data.count(b"\n")
            pos += len(data)
            ends.append(pos)
            cum.append(total)
            progress(pos)
    except OSError:
        return None
    return ends, cum
