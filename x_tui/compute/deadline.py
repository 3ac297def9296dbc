"""Deadlines on blocking calls: each runs in a daemon thread and is waited for at most so long.

A call that has not answered in time raises the error its caller names, and its thread is
abandoned (never joined), so a hung provider cannot hang the UI, the CLI or the worker thread
that asked. A stream (a listing, a file's chunks, log lines) gets an idle deadline instead: each
next item must come within it, however long the whole stream takes. Calls that wait out such
deadlines on a few threads of their own go to a :class:`DaemonPool`, whose threads do not keep
the program from exiting while they wait; a wait that names an :class:`Abandonment` ends when the
program quits.
"""

from __future__ import annotations

import contextlib
import functools
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


class Abandonment:
    """Ends at once every wait of :func:`call_with_deadline` that names it, and any asked after.

    A program that quits gives up the calls still in flight, as a passed deadline does, rather
    than wait them out: a thread that waits is joined at exit (Textual's thread workers are), so a
    status call to a hung provider would otherwise keep a quit program on the screen until its
    deadline passed.
    """

    def __init__(self) -> None:
        """A switch not yet thrown."""
        self._lock = threading.Lock()
        self._waits: set[threading.Event] = set()
        self._abandoned = False

    def abandon(self) -> None:
        """End every wait in flight now; every wait asked after ends before it starts."""
        with self._lock:
            self._abandoned = True
            waits = list(self._waits)
        for wait in waits:
            wait.set()

    def _watch(self, wait: threading.Event) -> bool:
        with self._lock:
            if self._abandoned:
                return False
            self._waits.add(wait)
            return True

    def _unwatch(self, wait: threading.Event) -> None:
        with self._lock:
            self._waits.discard(wait)


def call_with_deadline(
    call: Callable[[], T],
    *,
    seconds: float,
    late: Callable[[], BaseException],
    name: str,
    abandonment: Abandonment | None = None,
    abandoned: Callable[[], BaseException] | None = None,
) -> T:
    """Run ``call`` in a daemon thread and wait for it at most ``seconds``.

    Args:
        call: The blocking call.
        seconds: How long to wait.
        late: Makes the error raised when ``call`` did not return in time.
        name: The thread's name.
        abandonment: Ends the wait early (and a wait asked after it was thrown is not started).
        abandoned: Makes the error raised then (``late()`` if not given).

    Returns:
        What ``call`` returned.

    Raises:
        BaseException: ``late()`` if ``call`` did not return in time, ``abandoned()`` if the wait
            was abandoned; else whatever ``call`` raised, as it raised it.
    """
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()
    given_up = abandoned or late
    if abandonment is not None and not abandonment._watch(done):
        raise given_up()

    def target() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:
            outcome.append((False, error))
        finally:
            done.set()

    try:
        threading.Thread(target=target, name=name, daemon=True).start()
        woken = done.wait(seconds)
    finally:
        if abandonment is not None:
            abandonment._unwatch(done)
    if not outcome:  # the call is still going: its deadline passed, or the wait was abandoned
        raise given_up() if woken else late()
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


class DaemonPool:
    """Up to ``workers`` daemon threads that run the calls submitted to them, in order.

    ``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so a
    thread waiting out a hung provider's deadline (10 s for a status) kept a quit ``x-tui`` on the
    screen that long. These threads are daemons: the program exits at once, abandoning them, as
    :func:`call_with_deadline` abandons the call itself. A call's exception is dropped, as an
    executor's unread future drops it: the calls submitted here report their own failures.
    """

    def __init__(self, workers: int, *, name: str) -> None:
        """A pool of at most ``workers`` threads, named ``name_0``, ``name_1``...

        Args:
            workers: The most threads at once (each started with the first call it is needed for).
            name: The threads' name's prefix.
        """
        self._workers = max(1, workers)
        self._name = name
        self._calls: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0
        self._idle = 0
        self._shut = False

    def submit(self, call: Callable[..., object], *args: object) -> None:
        """Run ``call(*args)`` on a pool thread, as soon as one is free.

        Raises:
            RuntimeError: If the pool was shut down.
        """
        with self._lock:
            if self._shut:
                raise RuntimeError("the pool was shut down")
            self._calls.put(functools.partial(call, *args))
            if self._idle:
                self._idle -= 1  # that thread takes this call
                return
            if self._started < self._workers:
                thread = threading.Thread(
                    target=self._serve, name=f"{self._name}_{self._started}", daemon=True
                )
                self._started += 1
                thread.start()

    def shutdown(self) -> None:
        """Take no more calls and drop those not started; the ones running are left to end."""
        with self._lock:
            self._shut = True
            while True:
                try:
                    self._calls.get_nowait()
                except queue.Empty:
                    break
            for _ in range(self._started):
                self._calls.put(None)

    def _serve(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                return
            with contextlib.suppress(Exception):  # (the call reports its own failures)
                call()
            with self._lock:
                self._idle += 1
