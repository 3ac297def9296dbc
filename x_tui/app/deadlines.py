"""Deadlines on backend calls: each runs in a daemon thread and is waited for at most so long.

A call that has not answered in time is reported as a :class:`DeadlinePassed` (a
:class:`~x_tui.compute.worker.errors.ProviderError`) naming the backend, and its thread is abandoned
(never joined), so a hung provider cannot hang the UI or the worker that asked. A submit is never
raced this way: see :mod:`x_tui.app.submits`.
"""

from __future__ import annotations

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
