"""Giving up the waits in flight when the program quits: a wait that names an ``Abandonment``
ends at once when it is thrown, a wait asked after never starts its call, a call that answered is
still answered, and a deadline still passes as before. End to end: x-tui quit while its run
screen waits on a hung provider's state exits at once, not when the deadline passes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

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
    assert abandonment.abandoned


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
    abandonment.abandon()  # with none in flight: nothing to end
    assert abandonment.abandoned


def test_quitting_while_the_run_screen_waits_on_a_hung_state_exits_at_once(
    tmp_path: Path,
) -> None:
    """The run screen asks a run's state (deadline: 10 minutes) on a Textual thread worker, which
    the event loop joins at exit; the user quits while it waits, and x-tui exits at once."""
    script = textwrap.dedent(
        """
        import datetime as dt, sys, threading, time
        from pathlib import Path
        from x_tui.app.app import XTuiApp
        from x_tui.app.deadlines import Deadlines
        from x_tui.app.run_screen import RunScreen
        from x_tui.app.service import Service
        from x_tui.compute.store import RunHandle, RunStore

        state = Path(sys.argv[1])
        store = RunStore(state / "compute" / "runs")
        handle = RunHandle(
            run_id="train-20260101T000000Z-000001", backend="local", job="train", project="/p",
            submitted_at=dt.datetime.now(dt.UTC), settings={}, details={},
        )
        store.save(handle)
        asked = []

        class Hung:
            def status(self, handle):
                asked.append(handle.run_id)  # by the run follower, then by the run screen
                time.sleep(3600)

        service = Service(store=store, state_dir=state, deadlines=Deadlines(status=600.0))
        service._build = lambda handle: Hung()

        class App(XTuiApp):
            def on_ready(self):
                super().on_ready()
                self.push_screen(RunScreen(handle))
                self.set_interval(0.05, self.quit_once_asked)

            def quit_once_asked(self):
                loading = [w for w in self.workers if w.group == "run-load" and not w.is_finished]
                if len(asked) >= 2 and loading:
                    self.exit()

        App(None, service=service).run(headless=True)
        print("quit", flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=DEADLINE,  # without the abandonment: the status deadline, 600 s
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "quit"
