"""Giving up the waits in flight when the program quits: a wait that names an ``Abandonment``
ends at once when it is thrown, a wait asked after never starts its call, a call that answered is
still answered, and a deadline still passes as before. The app's use of it, end to end:
``tests/app/test_quitting.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from tests.support import DEADLINE
from x_tui.compute.deadline import Abandonment, call_with_deadline


class Late(Exception):
    pass


class GivenUp(Exception):
    pass


def wait(call: Callable[[], object], abandonment: Abandonment, *, seconds: float = 600.0) -> object:
    return call_with_deadline(
        call,
        seconds=seconds,
        late=Late,
        name="test call",
        abandonment=abandonment,
        abandoned=GivenUp,
    )


def test_a_wait_in_flight_ends_at_once_when_abandoned() -> None:
    abandonment = Abandonment()
    started = threading.Event()
    release = threading.Event()
    outcome: list[BaseException] = []

    def hung() -> None:
        started.set()
        release.wait(DEADLINE)

    def waiter() -> None:
        try:
            wait(hung, abandonment)
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=waiter)
    thread.start()
    assert started.wait(DEADLINE)
    abandonment.abandon()
    thread.join(DEADLINE)
    release.set()
    assert not thread.is_alive()
    assert [type(error) for error in outcome] == [GivenUp]  # not Late: the deadline is 600 s


def test_a_wait_asked_after_the_abandonment_never_starts_its_call() -> None:
    abandonment = Abandonment()
    abandonment.abandon()
    called: list[bool] = []
    with pytest.raises(GivenUp):
        wait(lambda: called.append(True), abandonment)
    time.sleep(0.05)
    assert called == []


def test_an_answer_and_a_passed_deadline_are_as_without_it() -> None:
    abandonment = Abandonment()
    assert wait(lambda: 42, abandonment) == 42
    with pytest.raises(ZeroDivisionError):
        wait(lambda: 1 / 0, abandonment)
    release = threading.Event()
    with pytest.raises(Late):
        wait(lambda: release.wait(DEADLINE), abandonment, seconds=0.05)
    release.set()
    assert not abandonment._waits  # every finished wait has left the switch
    abandonment.abandon()  # with none in flight: nothing to end, and the next wait never starts
    with pytest.raises(GivenUp):
        wait(lambda: 42, abandonment)
