"""Deadlines on backend calls: each runs in a daemon thread and is waited for at most so long.

A call that has not answered in time is reported as a :class:`DeadlinePassed` (a
:class:`~x_tui.compute.worker.errors.ProviderError`) naming the backend, and its thread is abandoned
(never joined), so a hung provider cannot hang the UI or the worker that asked. When x-tui quits,
the reads in flight are given up (:class:`CallAbandoned`) and the writes (:class:`WritesInFlight`)
are left to finish in their threads, waited for after the screen is closed. A submit is never
raced this way: see :mod:`x_tui.app.submits`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from x_tui.compute import deadline
from x_tui.compute.worker.errors import ProviderError

T = TypeVar("T")


class DeadlinePassed(ProviderError):
    """A backend call did not answer within its deadline; its thread was left to finish alone."""


class CallAbandoned(ProviderError):
    """A backend call given up because x-tui is quitting; its thread was left to finish alone."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Deadlines:
    """Seconds each kind of backend call may take before it is reported as not answering.

    Attributes:
        status: ``status(handle)``, polled by the run monitor.
        plan: Resolving a job and asking the backend what it would request.
        submit: Submitting a run, for a backend that declares no ``submit_seconds`` of its own
            (one that does, such as Modal, which builds an image first, is waited for that long).
        cancel: Cancelling a run.
        fetch: Copying a run's outputs here.
        peek: Reading one file of a running run's outputs.
        logs: Opening a run's log stream (the stream itself may then run for as long as the run).
    """

    status: float = 10.0
    plan: float = 60.0
    submit: float = 120.0
    cancel: float = 60.0
    fetch: float = 1800.0
    peek: float = 20.0
    logs: float = 30.0


def call_with_deadline(
    call: Callable[[], T],
    *,
    seconds: float,
    backend: str,
    what: str,
    abandonment: deadline.Abandonment | None = None,
) -> T:
    """Run ``call`` in a daemon thread and wait for it at most ``seconds``.

    Args:
        call: The blocking call.
        seconds: How long to wait.
        backend: The backend's name, for the message.
        what: What the call does (``"status"``, ``"submit"``...), for the message.
        abandonment: Ends the wait when x-tui quits (for reads only: a write is waited for).

    Returns:
        What ``call`` returned.

    Raises:
        DeadlinePassed: If ``call`` did not return in time; its thread is left to finish alone.
        CallAbandoned: If ``abandonment`` was thrown first; its thread is left to finish alone.
        Exception: Whatever ``call`` raised, as it raised it.
    """
    return deadline.call_with_deadline(
        call,
        seconds=seconds,
        late=lambda: DeadlinePassed(
            f"backend '{backend}': {what} did not answer within {seconds:g} s"
        ),
        name=f"x-tui {backend} {what}",
        abandonment=abandonment,
        abandoned=lambda: CallAbandoned(f"backend '{backend}': {what} given up, x-tui is quitting"),
    )


@dataclass(frozen=True, eq=False, slots=True)
class Write:
    """A write in flight: what it is, when its deadline passes, and whether it has finished."""

    what: str
    due: float
    finished: threading.Event


class WritesInFlight:
    """The writes (cancels, fetches) the UI waits on, which a quitting x-tui leaves to finish.

    A write runs in a daemon thread with its deadline, as any backend call; the worker that waits
    for it is let go when the app quits (:meth:`let_go`), so the event loop, which joins its
    worker threads at exit, is not held, and the write goes on in its own thread until
    :meth:`wait` (``run_app``, after the screen is closed, saying so) has seen it finish.
    """

    def __init__(self) -> None:
        """No write in flight."""
        self._lock = threading.Lock()
        self._writes: dict[Write, None] = {}  # in the order begun
        self._abandonment = deadline.Abandonment()

    def call(self, call: Callable[[], T], *, seconds: float, backend: str, what: str) -> T:
        """Run the write ``call`` as :func:`call_with_deadline` does, keeping it in flight.

        Raises:
            DeadlinePassed: If ``call`` did not return in time.
            CallAbandoned: If the app quit first (the write goes on, and :meth:`wait` waits).
            Exception: Whatever ``call`` raised, as it raised it.
        """
        due = time.monotonic() + seconds
        write = Write(what=f"the {what}", due=due, finished=threading.Event())
        started = threading.Event()

        def tracked() -> T:
            started.set()
            try:
                return call()
            finally:
                write.finished.set()
                with self._lock:
                    self._writes.pop(write, None)

        with self._lock:
            self._writes[write] = None
        try:
            return call_with_deadline(
                tracked, seconds=seconds, backend=backend, what=what, abandonment=self._abandonment
            )
        except CallAbandoned:
            if not started.is_set():  # let go before it began: it never will
                with self._lock:
                    self._writes.pop(write, None)
            raise

    def let_go(self) -> None:
        """Stop every wait for a write (each raises :class:`CallAbandoned`); the writes go on."""
        self._abandonment.abandon()

    def pending(self) -> list[Write]:
        """The writes not finished yet, the first begun first."""
        with self._lock:
            return list(self._writes)

    def wait(self) -> list[Write]:
        """Wait for each write to finish, at most until its deadline.

        Returns:
            The writes still going when their deadlines passed.
        """
        unfinished: list[Write] = []
        for write in self.pending():
            if not write.finished.wait(max(0.0, write.due - time.monotonic())):
                unfinished.append(write)
        return unfinished
