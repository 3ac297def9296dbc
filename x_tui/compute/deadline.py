"""Deadlines on blocking calls: each runs in a daemon thread and is waited for at most so long.

A call that has not answered in time raises the error its caller names, and its thread is
abandoned (never joined), so a hung provider cannot hang the UI, the CLI or the worker thread
that asked. A stream (a listing, a file's chunks, log lines) gets an idle deadline instead: each
next item must come within it, however long the whole stream takes.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Final, TypeVar, cast

T = TypeVar("T")

_END: Final = object()
_QUEUE_SIZE: Final = 64


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def call_with_deadline(
    call: Callable[[], T],
    *,
    seconds: float,
    late: Callable[[], BaseException],
    name: str,
) -> T:
    """Run ``call`` in a daemon thread and wait for it at most ``seconds``.

    Args:
        call: The blocking call.
        seconds: How long to wait.
        late: Makes the error raised when ``call`` did not return in time.
        name: The thread's name.

    Returns:
        What ``call`` returned.

    Raises:
        BaseException: ``late()`` if ``call`` did not return in time; else whatever ``call``
            raised, as it raised it.
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

    threading.Thread(target=target, name=name, daemon=True).start()
    if not done.wait(seconds):
        raise late()
    succeeded, value = outcome[0]
    if succeeded:
        return cast(T, value)
    raise cast(BaseException, value)


def iterate_with_deadline(
    items: Callable[[], Iterable[T]],
    *,
    seconds: float,
    late: Callable[[], BaseException],
    name: str,
) -> Iterator[T]:
    """Iterate ``items()`` in a daemon thread, each item due within ``seconds`` of the last.

    Args:
        items: Makes the iterable (called in the thread, so making it may block too).
        seconds: The idle deadline.
        late: Makes the error raised when an item (or the end) did not come in time.
        name: The thread's name.

    Yields:
        Each item, in order.

    Raises:
        BaseException: ``late()`` if an item did not come in time; else whatever the iteration
            raised, as it raised it.
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

    threading.Thread(target=produce, name=name, daemon=True).start()
    try:
        while True:
            try:
                item = channel.get(timeout=seconds)
            except queue.Empty:
                raise late() from None
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield cast(T, item)
    finally:
        stop.set()
