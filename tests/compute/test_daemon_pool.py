"""The pool that status calls wait out their deadlines on: calls run on at most N daemon threads,
a failing call leaves the pool working, a shut pool drops what had not started, and a program
whose pool thread waits on a hung provider exits at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support import DEADLINE, run_script, wait_for
from x_tui.compute.deadline import DaemonPool


def test_calls_run_on_at_most_the_pools_threads_each_a_daemon() -> None:
    pool = DaemonPool(2, name="test pool")
    release = threading.Event()
    running: list[str] = []
    daemons: list[bool] = []
    done: list[int] = []
    lock = threading.Lock()

    def call(number: int) -> None:
        with lock:
            running.append(threading.current_thread().name)
            daemons.append(threading.current_thread().daemon)
        release.wait(DEADLINE)
        with lock:
            done.append(number)

    for number in range(5):
        pool.submit(call, number)
    wait_for(lambda: len(running) == 2, "two calls running")
    assert sorted(running) == ["test pool_0", "test pool_1"]  # the other three wait their turn
    release.set()
    wait_for(lambda: sorted(done) == [0, 1, 2, 3, 4], "every call")
    assert set(running) == {"test pool_0", "test pool_1"}
    assert daemons == [True] * 5  # none of them keeps the program from exiting
    pool.shutdown()


def test_a_call_that_raises_leaves_the_pool_working() -> None:
    pool = DaemonPool(1, name="test pool")
    done = threading.Event()

    def fails() -> None:
        raise ValueError("a call's own failure")

    pool.submit(fails)
    pool.submit(done.set)
    assert done.wait(DEADLINE)
    pool.shutdown()


def test_a_shut_pool_drops_the_calls_not_started_and_takes_no_more() -> None:
    pool = DaemonPool(1, name="test pool")
    started = threading.Event()
    release = threading.Event()
    ran: list[str] = []

    def first() -> None:
        started.set()
        release.wait(DEADLINE)
        ran.append("first")

    pool.submit(first)
    pool.submit(ran.append, "queued")
    assert started.wait(DEADLINE)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(ran.append, "late")
    release.set()
    wait_for(lambda: ran == ["first"], "the running call to end")
    assert ran == ["first"]


def test_quitting_while_a_status_call_hangs_does_not_wait_out_its_deadline(
    tmp_path: Path,
) -> None:
    """The run follower asks for a state that never comes (its deadline: 10 minutes), is stopped
    as the app stops it, and the program exits at once, not when the deadline passes."""
    script = """
        import datetime as dt, sys, threading, time
        from pathlib import Path
        from x_tui.app.deadlines import Deadlines
        from x_tui.app.run_follower import RunFollower
        from x_tui.app.service import Service
        from x_tui.compute.store import RunHandle, RunStore

        state = Path(sys.argv[1])
        store = RunStore(state / "compute" / "runs")
        store.save(RunHandle(
            run_id="train-20260101T000000Z-000001", backend="local", job="train", project="/p",
            submitted_at=dt.datetime.now(dt.UTC), settings={}, details={},
        ))
        asked = threading.Event()

        class Hung:
            def status(self, handle):
                asked.set()
                time.sleep(3600)

        service = Service(store=store, state_dir=state, deadlines=Deadlines(status=600.0))
        service._build = lambda handle: Hung()
        follower = RunFollower(service, first_interval=0.0)
        follower.start()
        assert asked.wait(60), "the run's state was never asked for"
        follower.stop()
        print("stopped", flush=True)
    """
    done = run_script(script, str(tmp_path / "state"))  # else: the status deadline, 600 s
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
