"""Deadlines on calls that reach Modal, which otherwise retries an unreachable server for ~57 s.

Each blocking call runs in a daemon thread; the caller waits at most its deadline and then
reports :class:`~x_tui.compute.errors.ProviderError`, leaving the thread to finish alone. A
stream (a Volume listing, a file's chunks) gets an idle deadline: each next item must come within
it, however long the whole stream takes.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Final, TypeVar, cast

from x_tui.compute.errors import ProviderError

T = TypeVar("T")

_END: Final = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


_QUEUE_SIZE: Final = 64


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
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:
            outcome.append((False, error))
        finally:
            done.set()

    threading.Thread(target=target, name=f"x-tui modal: {what}", daemon=True).start()
    if not done.wait(seconds):
        raise unanswered(seconds, what)
    succeeded, value = outcome[0]
    if succeeded:
        return cast(T, value)
    raise cast(BaseException, value)


def iterate_with_deadline(
    items: Callable[[], Iterable[T]], *, seconds: float, what: str
) -> Iterator[T]:
    """Iterate ``items()`` in a daemon thread, each item due within ``seconds`` of the last.

    Args:
        items: Makes the iterable (called in the thread, so making it may block too).
        seconds: The idle deadline.
        what: What the stream is, for the message.

    Yields:
        Each item, in order.

    Raises:
        ProviderError: If an item (or the end) did not come in time.
        BaseException: Whatever the iteration raised, as it raised it.
    """
    channel: queue.Queue[object] = queue.Queue(maxsize=_QUEUE_SIZE)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                channel.put(item, timeout=0.5)
            except queue.Full:
                continue
            return True
        return False

    def produce() -> None:
        try:
            for item in items():
                if not put(item):
                    return
        except BaseException as error:
            put(_Failure(error))
            return
        put(_END)

    threading.Thread(target=produce, name=f"x-tui modal: {what}", daemon=True).start()
    try:
        while True:
            try:
                item = channel.get(timeout=seconds)
            except queue.Empty:
                raise unanswered(seconds, what) from None
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield cast(T, item)
    finally:
        stop.set()
