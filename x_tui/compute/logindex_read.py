"""Reading one line of a log file for display, without reading all of a huge line.

A line longer than the cap is read as its first ``cap`` bytes; if its last ``cap`` bytes hold a
``\\r`` (a progress bar redrawn in place for hours) the text after the last one is kept too, so a
viewer shows the bar's latest state. This module imports no Textual and no Rich.
"""

from __future__ import annotations

import os

from x_tui.compute.sanitize import decode


def read_capped(fd: int, start: int, end: int, cap: int) -> tuple[str, bool]:
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
