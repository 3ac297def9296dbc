"""Quitting while the app waits on a backend: the event loop joins its thread workers at exit, so
each is let go. A read (a run's state) is given up and x-tui exits at once; a write (a cancel, a
fetch) goes on in its own thread, and x-tui waits for it after the screen is closed, saying so, at
most until its deadline."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support import DEADLINE, run_script, wait_for
from x_tui.app import wait_for_writes
from x_tui.app.deadlines import CallAbandoned, DeadlinePassed, WritesInFlight
from x_tui.app.service import Service


def test_a_write_let_go_goes_on_and_is_waited_for() -> None:
    writes = WritesInFlight()
    release = threading.Event()
    finished: list[str] = []
    outcome: list[BaseException] = []

    def fetch() -> str:
        release.wait(DEADLINE)
        finished.append("copied")
        return "copied"

    def worker() -> None:
        try:
            writes.call(fetch, seconds=600.0, backend="local", what="fetch of run-1")
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    wait_for(lambda: len(writes.pending()) == 1, "the fetch to be in flight")
    writes.let_go()
    thread.join(DEADLINE)
    assert not thread.is_alive()  # the worker returned at once, with the fetch still going
    assert [type(error) for error in outcome] == [CallAbandoned]
    assert [write.what for write in writes.pending()] == ["the fetch of run-1"]
    release.set()
    assert writes.wait() == []  # waited until the fetch finished
    assert finished == ["copied"]
    assert writes.pending() == []


def test_a_write_past_its_deadline_is_named_and_a_finished_one_leaves() -> None:
    writes = WritesInFlight()
    assert writes.call(lambda: 7, seconds=5.0, backend="local", what="cancel of run-1") == 7
    assert writes.pending() == []
    release = threading.Event()
    with pytest.raises(DeadlinePassed):
        writes.call(
            lambda: release.wait(DEADLINE), seconds=0.2, backend="local", what="cancel of run-2"
        )
    late = writes.wait()  # its deadline has passed: not waited for again
    release.set()
    assert [write.what for write in late] == ["the cancel of run-2"]


def test_after_the_screen_closes_a_write_past_its_deadline_is_named_once_and_left(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    service = Service(state_dir=tmp_path / "state")
    release = threading.Event()
    with pytest.raises(DeadlinePassed):
        service.writes.call(
            lambda: release.wait(DEADLINE), seconds=0.2, backend="modal", what="cancel of run-2"
        )
    wait_for_writes(service)
    release.set()
    assert capsys.readouterr().err.splitlines() == [
        "x-tui: waiting for the cancel of run-2 to finish"
        " (ctrl+c stops waiting and leaves it unfinished)",
        "x-tui: the cancel of run-2 did not finish within its deadline",
    ]


def test_a_write_asked_after_the_app_let_go_is_never_begun() -> None:
    writes = WritesInFlight()
    writes.let_go()
    called: list[bool] = []
    with pytest.raises(CallAbandoned):
        writes.call(lambda: called.append(True), seconds=5.0, backend="local", what="fetch of r")
    assert called == []
    assert writes.pending() == []


def test_quitting_while_the_run_screen_waits_on_a_hung_state_exits_at_once(
    tmp_path: Path,
) -> None:
    """The run screen asks a run's state (deadline: 10 minutes) on a Textual thread worker, which
    the event loop joins at exit; the user quits while it waits, and x-tui exits at once."""
    script = """
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
    done = run_script(script, str(tmp_path / "state"))  # else: the status deadline, 600 s
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "quit"


def test_quitting_during_a_fetch_closes_the_screen_then_waits_for_the_fetch_saying_so(
    tmp_path: Path,
) -> None:
    """x-tui quits while a fetch copies (its deadline: 30 minutes): the app returns at once, the
    fetch finishes after it, and x-tui says what it waits for."""
    script = """
        import datetime as dt, sys, threading, time
        from pathlib import Path
        from x_tui.app import wait_for_writes
        from x_tui.app.app import XTuiApp
        from x_tui.app.fetching import start_fetch
        from x_tui.app.service import Service
        from x_tui.compute.store import RunHandle, RunStore

        state, into = Path(sys.argv[1]), Path(sys.argv[2])
        store = RunStore(state / "compute" / "runs")
        handle = RunHandle(
            run_id="train-20260101T000000Z-000001", backend="local", job="train", project="/p",
            submitted_at=dt.datetime.now(dt.UTC), settings={}, details={},
        )
        store.save(handle)
        copying = threading.Event()

        class Slow:
            def status(self, handle):
                time.sleep(3600)

            def fetch(self, handle, destination):
                copying.set()
                time.sleep(2)
                target = destination / handle.run_id
                target.mkdir(parents=True)
                (target / "weights.bin").write_text("done")
                print(f"fetched {time.monotonic() - started:.1f}", flush=True)
                return target

        service = Service(store=store, state_dir=state)
        service._build = lambda handle: Slow()

        class App(XTuiApp):
            def on_ready(self):
                super().on_ready()
                start_fetch(self.screen, handle, into)
                self.set_interval(0.05, self.quit_once_copying)

            def quit_once_copying(self):
                if copying.is_set():
                    self.exit()

        started = time.monotonic()
        App(None, service=service).run(headless=True)
        print(f"closed {time.monotonic() - started:.1f}", flush=True)
        wait_for_writes(service)
        print("exited", flush=True)
    """
    done = run_script(script, str(tmp_path / "state"), str(tmp_path / "into"))
    assert done.returncode == 0, done.stderr
    said = done.stdout.split()
    assert said[::2] == ["closed", "fetched", "exited"], done.stdout
    assert float(said[1]) < float(said[3])  # the screen closed before the fetch was done
    fetched = tmp_path / "into" / "train-20260101T000000Z-000001" / "weights.bin"
    assert fetched.read_text() == "done"
    assert done.stderr.strip() == (
        "x-tui: waiting for the fetch of train-20260101T000000Z-000001 to finish"
        " (ctrl+c stops waiting and leaves it unfinished)"
    )
