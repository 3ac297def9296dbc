"""Receive times in the log view (``t``): each line prefixed with when the worker received it.

The times come from the log's side file (``<log>.times``, :mod:`x_tui.compute.worker.log_times`),
which the worker writes beside ``worker.log`` (and the log spool beside a remote run's copy). A
log without one (a task's own ``stdout.log``, a run substrax started) gets a toast saying so, and
the view is left as it is. The view's lines ask :class:`LineStamps` for a line's stamp by the
line's start offset; stamps are cached, so a line on screen costs one lookup.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from textual.cache import LRUCache

from x_tui.compute.worker.log_times import LogTimes, times_path

STAMP_CACHE = 4096
"""Stamps kept, by line offset."""

NO_TIME = " " * 12
"""The stamp of a line written before the times began (as wide as a time)."""


def format_stamp(when: float) -> str:
    """A receive time as shown before a line: local ``HH:MM:SS.mmm`` and a space."""
    moment = dt.datetime.fromtimestamp(when).astimezone()
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d} "


class LineStamps:
    """The receive times of one log's lines, read from its times file."""

    def __init__(self, log: Path) -> None:
        """Open the times file beside ``log``.

        Args:
            log: The log file shown.

        Raises:
            OSError: If there is no times file, or it cannot be read.
            ValueError: If the file beside it is not a times file.
        """
        self.log = log
        self._times = LogTimes(times_path(log))
        self._stamps: LRUCache[int, str] = LRUCache(STAMP_CACHE)

    def stamp(self, offset: int) -> str:
        """The stamp of the line starting at ``offset`` (blank when it has no time).

        Args:
            offset: The line's first byte in the log.

        Returns:
            ``HH:MM:SS.mmm `` or blanks of the same width.
        """
        cached = self._stamps.get(offset)
        if cached is not None:
            return cached
        try:
            when = self._times.time_at(offset)
        except (OSError, ValueError):  # struct.error is a ValueError
            when = None
        if when is None:
            return NO_TIME  # not cached: its record may come with the next write
        stamp = format_stamp(when)
        self._stamps[offset] = stamp
        return stamp

    def close(self) -> None:
        """Close the times file."""
        self._times.close()


def open_stamps(log: Path | None) -> LineStamps | None:
    """The stamps of ``log``, or ``None`` when it has no readable times file.

    Args:
        log: The log file shown, if any.

    Returns:
        Its stamps, or ``None``.
    """
    if log is None:
        return None
    try:
        return LineStamps(log)
    except (OSError, ValueError):
        return None
