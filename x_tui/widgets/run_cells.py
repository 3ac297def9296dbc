"""The cells of the runs table: states with a glyph as well as a colour, ages, durations, and when a
growing span next shows another text.

Every cell is a ``rich.text.Text`` (a ``str`` cell would be parsed as markup); untrusted text goes
through ``safe_text``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable

from rich.text import Text

from x_tui.compute.backend import RunState
from x_tui.widgets.run_states import UNKNOWN_LABEL, StateStyles, state_label

EMPTY = "—"
"""What an empty cell shows."""


def format_span(seconds: float) -> str:
    """A short human span: ``42s``, ``17m``, ``3h05m``, ``2d04h``.

    Args:
        seconds: The span; a negative one (a clock skew) reads as ``0s``.

    Returns:
        The text, at most six characters for spans under 100 days.
    """
    return _span(seconds, fine=True)


def format_age(seconds: float) -> str:
    """A coarse human age, at most four characters: ``42s``, ``17m``, ``5h``, ``12d``.

    Args:
        seconds: How long ago; a negative one (a clock skew) reads as ``0s``.

    Returns:
        The text.
    """
    return _span(seconds, fine=False)


def _span(seconds: float, *, fine: bool) -> str:
    """Seconds, minutes, hours or days, whichever is largest; with ``fine``, hours and days
    carry the next unit too."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    unit, name, part, part_name = (3600, "h", 60, "m") if whole < 86400 else (86400, "d", 3600, "h")
    if not fine:
        return f"{whole // unit}{name}"
    return f"{whole // unit}{name}{whole % unit // part:02d}{part_name}"


def next_change(seconds: float, *, fine: bool) -> float:
    """How many seconds until a growing span shows another text.

    Args:
        seconds: The span now.
        fine: For :func:`format_span` (a running run's duration); else for :func:`format_age`.

    Returns:
        The wait, always positive.
    """
    if seconds < 0:
        return -seconds + 0.001
    step = _step(seconds, fine=fine)
    return step - (seconds % step)


def _step(seconds: float, *, fine: bool) -> int:
    """Every how many seconds a span of ``seconds`` (not negative) shows another text."""
    if seconds < 60:
        return 1
    if seconds < 3600 or (fine and seconds < 86400):
        return 60
    return 3600 if (fine or seconds < 86400) else 86400


COARSE_GATHER = 5.0
"""A span shown in minutes (or coarser) turns at the next multiple of this many seconds of the
clock after its text changes, at most this late: the rows of runs submitted within a few seconds
of each other turn together, in one redraw, rather than one redraw each."""


class RedrawQueue:
    """When each row's age (or running duration) next shows another text: a heap of due times,
    so a table of many rows that sits still costs nothing."""

    def __init__(self) -> None:
        """Start with nothing due."""
        self._due: list[tuple[float, str]] = []
        self._next_at: dict[str, float] = {}

    def schedule(self, key: str, since: float, now: float, *, fine: bool) -> None:
        """Make ``key`` due when its span (from ``since``) next shows another text.

        Args:
            key: The row.
            since: When its span starts (an epoch time).
            now: The current epoch time.
            fine: Whether the span is shown finely (a running duration) rather than as an age.
        """
        span = now - since
        due = now + next_change(span, fine=fine)
        if span >= 0 and _step(span, fine=fine) >= 60:
            due = math.ceil(due / COARSE_GATHER) * COARSE_GATHER
        self._next_at[key] = due
        heapq.heappush(self._due, (due, key))

    def first_due(self) -> float | None:
        """When the next row is due, if any is."""
        return self._due[0][0] if self._due else None

    def pop_due(self, now: float) -> list[str]:
        """The rows due by ``now``, each once; they are due no more until scheduled again."""
        keys: list[str] = []
        while self._due and self._due[0][0] <= now:
            due, key = heapq.heappop(self._due)
            if self._next_at.get(key) == due:
                del self._next_at[key]
                keys.append(key)
        return keys


def state_cell(state: RunState | None, styles: StateStyles, *, problem: bool = False) -> Text:
    """A run's state, or ``? unknown`` when its backend could not say, in the table's styles."""
    if problem:
        return Text(UNKNOWN_LABEL, style=styles.of(state, unknown=True))
    return Text(state_label(state), style=styles.of(state))


def group_state(states: Iterable[RunState | None]) -> RunState | None:
    """The one state that sums up a sweep's runs: the least settled one.

    Running before pending before checking; once every run is final, failed before cancelled
    before succeeded (a sweep reads succeeded only when every run did).

    Args:
        states: Each run's state (``None`` before its backend has answered).

    Returns:
        The state shown on the sweep's row.
    """
    seen = list(states)
    order = (
        RunState.RUNNING,
        RunState.SUBMITTING,
        RunState.PENDING,
        None,
        RunState.FAILED,
        RunState.PREEMPTED,
    )
    for state in (*order, RunState.CANCELLED):
        if state in seen:
            return state
    return RunState.SUCCEEDED if seen else None


def group_state_cell(states: Iterable[RunState | None], styles: StateStyles) -> Text:
    """A sweep's row's state cell: the summing-up state's glyph and the number of runs."""
    seen = list(states)
    state = group_state(seen)
    glyph = state_label(state).split()[0]
    plural = "" if len(seen) == 1 else "s"
    return Text(f"{glyph} {len(seen)} run{plural}", style=styles.of(state))


def count_states(states: Iterable[RunState | None]) -> str:
    """``1 running, 1 succeeded``: how many runs are in each state."""
    counts: dict[str, int] = {}
    for state in states:
        name = state.value if state is not None else "checking"
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{count} {name}" for name, count in counts.items())
