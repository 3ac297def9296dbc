"""The events file: what happened to runs, one JSON object a line, appended, read with bounds.

``<state>/x-tui/events.jsonl`` is written by the watcher (:mod:`x_tui.app.watcher`) and read by
anyone (the TUI's "while you were away" line, a script). Each line is one :class:`RunEvent`; a
line is appended whole under an exclusive ``flock`` (so two writers never interleave), and no
line is longer than :data:`MAX_LINE_BYTES`. A reader reads at most the last
:data:`READ_LIMIT_BYTES` of the file and skips any line it cannot read: a damaged or foreign line
costs that line only.

This module imports no Textual (the headless watcher writes it) and only the standard library.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.backend import RunState

EVENTS_NAME = "events.jsonl"
"""The events file's name in ``<state>/x-tui``."""

MAX_LINE_BYTES = 4096
"""The longest line written (a longer reason is cut to fit)."""

READ_LIMIT_BYTES = 4 * 1024 * 1024
"""How much of the file's end a reader reads at most."""

MAX_REASON_CHARS = 500
"""The longest reason kept in an event."""


_FINAL_STATES = frozenset(state.value for state in RunState if state.is_final)


class EventKind(str, enum.Enum):
    """What happened to a run.

    The first six are states the run entered (as its backend reported them); ``stalled`` and
    ``over_budget`` are findings about a run that goes on, made by checks given to the watcher.
    """

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    STALLED = "stalled"
    OVER_BUDGET = "over_budget"

    @property
    def is_final(self) -> bool:
        """Whether the run has ended with this event (it entered a final state)."""
        return self.value in _FINAL_STATES


NOTIFIABLE = frozenset(
    {
        EventKind.SUCCEEDED,
        EventKind.FAILED,
        EventKind.CANCELLED,
        EventKind.STALLED,
        EventKind.OVER_BUDGET,
        EventKind.PREEMPTED,
    }
)
"""The kinds a user can ask to be notified of (``[notify] events``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEvent:
    """One thing that happened to one run.

    Attributes:
        event_id: Unique per occurrence: ``<run_id>:<kind>`` (a run enters a state once), with a
            ``:<n>`` suffix for a finding that can repeat.
        at: When it was recorded (epoch seconds).
        run_id: The run.
        job: The run's job.
        kind: What happened.
        previous: The state the run was last seen in, if any.
        reason: Why, as the provider or the check said it (untrusted text; may be empty).
        cost: The run's cost so far in dollars, when known.
        duration: Seconds from the run's submission to this event.
    """

    event_id: str
    at: float
    run_id: str
    job: str
    kind: EventKind
    previous: str | None = None
    reason: str = ""
    cost: float | None = None
    duration: float | None = None

    def to_json(self) -> str:
        """The event as one JSON line (without the newline), cut to :data:`MAX_LINE_BYTES`."""
        reason = self.reason[:MAX_REASON_CHARS]
        while True:
            line = json.dumps(
                {
                    "id": self.event_id,
                    "at": round(self.at, 3),
                    "run_id": self.run_id,
                    "job": self.job,
                    "kind": self.kind.value,
                    "previous": self.previous,
                    "reason": reason,
                    "cost": self.cost,
                    "duration": None if self.duration is None else round(self.duration, 1),
                },
                ensure_ascii=True,
            )
            if len(line) < MAX_LINE_BYTES or not reason:
                return line[: MAX_LINE_BYTES - 1] if len(line) >= MAX_LINE_BYTES else line
            reason = reason[: len(reason) // 2]


def event_from_json(line: str) -> RunEvent | None:
    """Read one line of the events file; ``None`` for anything that is not a whole event."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        kind = EventKind(data["kind"])
        at = data["at"]
        cost = data.get("cost")
        duration = data.get("duration")
        previous = data.get("previous")
        fields = (data["id"], data["run_id"], data["job"], data.get("reason", ""))
    except (KeyError, ValueError, TypeError):
        return None
    if not all(isinstance(value, str) for value in fields):
        return None
    if not _number(at) or not (cost is None or _number(cost)):
        return None
    if not (duration is None or _number(duration)) or not (
        previous is None or isinstance(previous, str)
    ):
        return None
    event_id, run_id, job, reason = fields
    return RunEvent(
        event_id=event_id,
        at=float(at),
        run_id=run_id,
        job=job,
        kind=kind,
        previous=previous,
        reason=reason[:MAX_REASON_CHARS],
        cost=None if cost is None else float(cost),
        duration=None if duration is None else float(duration),
    )


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class EventLog:
    """The append-only events file of one state directory."""

    def __init__(self, state_dir: Path) -> None:
        """Use ``<state_dir>/x-tui/events.jsonl``.

        Args:
            state_dir: The state directory.
        """
        self.path = state_dir / "x-tui" / EVENTS_NAME

    def append(self, event: RunEvent) -> None:
        """Append ``event`` as one whole line (under an exclusive lock).

        Raises:
            OSError: If the file cannot be written.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = (event.to_json() + "\n").encode("ascii")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
        finally:
            os.close(fd)

    def read(self, *, since: float | None = None, limit: int = READ_LIMIT_BYTES) -> list[RunEvent]:
        """The events in the last ``limit`` bytes of the file, oldest first.

        Args:
            since: Only events recorded after this epoch time.
            limit: How many bytes of the file's end to read at most.

        Returns:
            The events that could be read (a damaged line is skipped).
        """
        events = [event for event in self._lines(limit) if since is None or event.at > since]
        return events

    def last_kinds(self, *, limit: int = READ_LIMIT_BYTES) -> dict[str, EventKind]:
        """Each run's latest state-change event kind, as far as the file's end tells."""
        kinds: dict[str, EventKind] = {}
        for event in self._lines(limit):
            if event.kind not in (EventKind.STALLED, EventKind.OVER_BUDGET):
                kinds[event.run_id] = event.kind
        return kinds

    def _lines(self, limit: int) -> Iterator[RunEvent]:
        try:
            with open(self.path, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                start = max(0, size - limit)
                stream.seek(start)
                data = stream.read(min(size, limit))
        except FileNotFoundError:
            return
        except OSError:
            return
        lines = data.split(b"\n")
        if start > 0:
            lines = lines[1:]  # the first one is cut
        for raw in lines:
            if not raw or len(raw) > MAX_LINE_BYTES:
                continue
            with contextlib.suppress(UnicodeDecodeError):
                event = event_from_json(raw.decode("utf-8"))
                if event is not None:
                    yield event
