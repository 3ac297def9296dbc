"""Deadlines on calls that reach Modal, which otherwise retries an unreachable server for ~57 s.

Thin wrappers over :mod:`x_tui.compute.deadline` whose late error says what was being done and
where Modal is reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from x_tui.compute import deadline
from x_tui.compute.worker.errors import ProviderError

T = TypeVar("T")


def unanswered(seconds: float, what: str) -> ProviderError:
    """The error of a Modal call that did not answer in time."""
    return ProviderError(
        f"Modal did not answer within {seconds:g} s while {what}; check this machine's network"
        " connection to api.modal.com (or MODAL_SERVER_URL)"
    )


def call_with_deadline(call: Callable[[], T], *, seconds: float, what: str) -> T:
    """Run ``call`` in a daemon thread and wait for it at most ``seconds``.

    Args:
        call: The blocking call.
        seconds: How long to wait.
        what: What the call does, for the message (``"reading the run's status"``).

    Returns:
        What ``call`` returned.

    Raises:
        ProviderError: If ``call`` did not return in time.
        BaseException: Whatever ``call`` raised, as it raised it.
    """
    return deadline.call_with_deadline(
        call, seconds=seconds, late=lambda: unanswered(seconds, what), name=f"x-tui modal: {what}"
    )


def iterate_with_deadline(
    items: Callable[[], Iterable[T]], *, seconds: float, what: str
) -> Iterator[T]:
    """Iterate ``items()`` in a daemon thread, each item due within ``seconds`` of the last.

    Raises:
        ProviderError: If an item (or the end) did not come in time.
        BaseException: Whatever the iteration raised, as it raised it.
    """
    return deadline.iterate_with_deadline(
        items, seconds=seconds, late=lambda: unanswered(seconds, what), name=f"x-tui modal: {what}"
    )
