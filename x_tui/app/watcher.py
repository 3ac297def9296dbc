"""The headless watcher: follows every unfinished run, records what changes, announces it.

A :class:`Watcher` is a :class:`~x_tui.app.run_follower.RunFollower` (the TUI's own following:
the same service, deadlines, backoff and one poll per run at a time) whose hooks append
:class:`~x_tui.app.watch_events.RunEvent` lines to the events file and hand the events the user
asked for to one delivery thread (:mod:`x_tui.app.notify`), so a slow hook never holds a poll.

A run's first answer is an event only when it says something new: the events file tells the
state a previous watcher last saw, and a run found already ended that no watcher saw unfinished
and that was submitted before this watcher started is not announced (it ended while nobody
watched; the TUI's "while you were away" line reads the store for those).

Findings about a run that goes on (``stalled``, ``over_budget``) come from ``checks``: each is
called after every answer for an unfinished run and returns the findings it makes; each finding
becomes an event once per run and key (the budget check is :mod:`x_tui.app.watch_budgets`). A run
that ends ``cancelled`` or ``preempted`` for a recorded reason (:mod:`x_tui.compute.run_endings`)
carries it in its event; a ``preempted`` one is handed to ``resubmit``
(:mod:`x_tui.app.watch_resubmits`) once its event is recorded.

This module imports no Textual.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from x_tui.app.notify import DeliveredEvents, deliver_once, wanted
from x_tui.app.notify_settings import NotifySettings
from x_tui.app.run_follower import FIRST_INTERVAL, MAX_INTERVAL, RunFollower
from x_tui.app.service import Service
from x_tui.app.watch_events import EventKind, EventLog, RunEvent
from x_tui.compute.backend import RunState
from x_tui.compute.run_endings import EndingBook
from x_tui.compute.sanitize import plain
from x_tui.compute.store import RunHandle


@dataclass(frozen=True, slots=True)
class Finding:
    """What a check found about a run that goes on.

    Attributes:
        kind: ``stalled`` or ``over_budget`` (or any other :class:`EventKind`).
        key: Tells findings of one kind apart (``"80%"``, ``"100%"``); each key is announced
            once per run.
        reason: Why, in words.
        cost: The run's cost so far, when known.
    """

    kind: EventKind
    key: str = ""
    reason: str = ""
    cost: float | None = None


Check = Callable[[RunHandle, RunState], Iterable[Finding]]
"""Called after every answer for an unfinished run; returns what it finds (often nothing)."""


class Watcher(RunFollower):
    """Follows the runs of one state directory and records and announces what happens."""

    def __init__(
        self,
        service: Service,
        notify: NotifySettings,
        *,
        checks: Sequence[Check] = (),
        cost_of: Callable[[RunHandle], float | None] | None = None,
        resubmit: Callable[[RunHandle], RunHandle | None] | None = None,
        first_interval: float = FIRST_INTERVAL,
        max_interval: float = MAX_INTERVAL,
        log: TextIO | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Follow ``service``'s runs.

        Args:
            service: The engine (its state directory holds the events file).
            notify: Which events to announce, and how.
            checks: Findings about runs that go on (stall, budget).
            cost_of: A run's cost so far in dollars, for events; ``None`` when unknown.
            resubmit: Called once a run reads ``preempted`` (after its event is recorded);
                returns the run that replaces it, or ``None`` (see
                :mod:`x_tui.app.watch_resubmits`).
            first_interval: Seconds before a new (or changed) run is polled.
            max_interval: The longest wait between two polls of an unfinished run.
            log: Where one line per event and per failed delivery goes (stdout by default).
            clock: The current epoch time.
        """
        super().__init__(service, first_interval=first_interval, max_interval=max_interval)
        self.notify = notify
        self.events = EventLog(service.state_dir)
        self.delivered = DeliveredEvents(service.state_dir)
        self._checks = tuple(checks)
        self._cost_of = cost_of
        self._resubmit = resubmit
        self._log = log
        self._clock = clock
        self._started_at = clock()
        self._last = self.events.last_kinds()
        self._found: set[str] = set()
        self._outbox: queue.Queue[RunEvent | None] = queue.Queue()
        self._sender = threading.Thread(target=self._send_loop, name="x-tui notify", daemon=True)
        self._record_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        """Held from an event's recording to its queueing, and by :meth:`stop`: every event this
        watcher recorded is queued before the delivery thread is told to end."""
        self._stopped = False

    def start(self) -> None:
        """Start following and the delivery thread."""
        self._sender.start()
        super().start()

    def stop(self) -> None:
        """Stop following; the events queued for delivery are delivered first (and waited for)."""
        super().stop()
        with self._queue_lock:  # an event being recorded now is queued first
            self._stopped = True
            self._outbox.put(None)
        if self._sender.is_alive():
            self._sender.join()

    # Hooks ------------------------------------------------------------------------------------

    def on_state_changed(
        self, handle: RunHandle, state: RunState, previous: RunState | None
    ) -> None:
        """Record the change (and queue it for announcing when the user asked for it)."""
        with self._record_lock:
            last = self._last.get(handle.run_id)
            if previous is None:
                if last is not None and last.value == state.value:
                    return  # a previous watcher recorded this already
                if (
                    last is None
                    and state.is_final
                    and handle.submitted_at.timestamp() < self._started_at
                ):
                    return  # it ended while nobody watched
            before = previous.value if previous is not None else (last.value if last else None)
            kind = EventKind(state.value)
            self._last[handle.run_id] = kind
        reason = failure_reason(self.service, handle) if kind is EventKind.FAILED else ""
        if not reason and kind in (EventKind.CANCELLED, EventKind.PREEMPTED):
            ending = EndingBook(self.service.state_dir).load(handle.run_id)
            reason = ending.reason if ending is not None else ""
        self._record(handle, kind, previous=before, reason=reason or _state_reason(before, kind))
        if kind is EventKind.PREEMPTED and self._resubmit is not None:
            try:
                new = self._resubmit(handle)
            except Exception as error:  # a failed resubmit is logged, never stops the watcher
                self._say(f"run {handle.run_id}: cannot resubmit it: {error}")
                return
            if new is not None:
                self._say(f"run {handle.run_id}: preempted; resubmitted as {new.run_id}")

    def on_polled(self, handle: RunHandle, state: RunState) -> None:
        """Run the checks on an unfinished run; each new finding becomes an event."""
        if state.is_final:
            return
        for check in self._checks:
            try:
                findings = list(check(handle, state))
            except Exception as error:  # a check's failure never stops the watcher
                self._say(f"check {getattr(check, '__name__', check)!r} failed: {error}")
                continue
            for finding in findings:
                key = f"{handle.run_id}:{finding.kind.value}:{finding.key}"
                with self._record_lock:
                    if key in self._found:
                        continue
                    self._found.add(key)
                self._record(
                    handle,
                    finding.kind,
                    previous=state.value,
                    reason=finding.reason,
                    cost=finding.cost,
                    suffix=finding.key,
                )

    def on_status_failed(self, run_id: str, reason: str) -> None:
        """Say in the log that a backend did not answer (once per distinct reason)."""
        self._say(f"run {run_id}: no state: {reason}")

    def on_status_recovered(self, run_id: str) -> None:
        """Say in the log that the backend answers again."""
        self._say(f"run {run_id}: its backend answers again")

    # Recording and announcing -----------------------------------------------------------------

    def _record(
        self,
        handle: RunHandle,
        kind: EventKind,
        *,
        previous: str | None,
        reason: str,
        cost: float | None = None,
        suffix: str = "",
    ) -> None:
        if cost is None and self._cost_of is not None:
            try:
                cost = self._cost_of(handle)
            except Exception:  # an unknown cost is left out, never a lost event
                cost = None
        event = event_for(
            handle,
            kind,
            at=self._clock(),
            previous=previous,
            reason=reason,
            cost=cost,
            suffix=suffix,
        )
        with self._queue_lock:
            if self._stopped:  # a status call that ended after stop(): nothing is recorded
                return
            try:
                self.events.append(event)
            except OSError as error:
                self._say(f"cannot record an event in {self.events.path}: {error}")
            self._say(f"event: {event.run_id} {event.kind.value}")
            if wanted(self.notify, event):
                self._outbox.put(event)

    def _send_loop(self) -> None:
        while True:
            event = self._outbox.get()
            if event is None:
                return
            try:
                delivery = deliver_once(event, self.notify, self.delivered)
            except OSError as error:
                self._say(f"cannot record a notification in {self.delivered.path}: {error}")
                continue
            if delivery is None:
                continue
            self._say(f"notified: {delivery.line}")
            for problem in delivery.problems:
                self._say(f"notification failed: {problem}")

    def _say(self, line: str) -> None:
        stream = self._log if self._log is not None else sys.stdout
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._clock()))
        try:
            stream.write(f"{stamp} {' '.join(plain(line).split())}\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed or full log never stops the watcher


def event_for(
    handle: RunHandle,
    kind: EventKind,
    *,
    at: float,
    previous: str | None = None,
    reason: str = "",
    cost: float | None = None,
    suffix: str = "",
) -> RunEvent:
    """The event of ``handle`` entering ``kind`` (or a finding, told apart by ``suffix``) at ``at``.

    The id is ``<run_id>:<kind>[:<suffix>]``, the same whoever makes it (the watcher, the TUI),
    so the delivered-events record announces it once.
    """
    return RunEvent(
        event_id=f"{handle.run_id}:{kind.value}" + (f":{suffix}" if suffix else ""),
        at=at,
        run_id=handle.run_id,
        job=handle.job,
        kind=kind,
        previous=previous,
        reason=reason,
        cost=cost,
        duration=max(0.0, at - handle.submitted_at.timestamp()),
    )


def failure_reason(service: Service, handle: RunHandle) -> str:
    """Why a failed run failed, as its manifest tells: its first task that did not succeed.

    Returns:
        ``"task NAME failed with exit status N"`` (or ``timed out``), ``"it stopped before
        its tasks finished"``, or ``""`` when the manifest cannot be read.
    """
    from x_tui.compute.worker.manifest import MANIFEST_NAME, TaskStatus, parse_manifest

    try:
        data = service.peek(handle, MANIFEST_NAME)
        if data is None:
            return ""
        manifest = parse_manifest(data, source=MANIFEST_NAME)
    except Exception:  # an unreadable manifest leaves the reason out, never the event
        return ""
    for task in manifest.tasks:
        if task.status is TaskStatus.TIMED_OUT:
            return f"task {task.name} timed out"
        if task.status is not TaskStatus.SUCCEEDED:
            code = f" with exit status {task.returncode}" if task.returncode is not None else ""
            return f"task {task.name} failed{code}"
    return "" if manifest.finished else "it stopped before its tasks finished"


def _state_reason(previous: str | None, kind: EventKind) -> str:
    return f"was {previous}" if previous is not None else ""
