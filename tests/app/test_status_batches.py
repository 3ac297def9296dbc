"""The monitor asks for the states of the runs due together in one call, one run's fault hiding
none of the others' states (on the runs table too): real local runs (a live worker process, real
manifests), and a backend whose answer for one run hangs."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from textual.message import Message

from tests.support import (
    DEADLINE,
    QUICK_POLLS,
    FlakyBackend,
    asynchronous,
    wait_for,
    wait_for_worker_arguments,
    wait_until,
)
from x_tui.app.app import XTuiApp
from x_tui.app.deadlines import Deadlines
from x_tui.app.messages import RunStateChanged, RunStatusFailed
from x_tui.app.monitor import RunMonitor
from x_tui.app.run_screen import RunScreen
from x_tui.app.service import Service
from x_tui.backends.local.backend import LocalBackend
from x_tui.compute.backend import Capability, RunState
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.manifest import JobManifest, TaskOutcome, TaskStatus, write_manifest

from .app_support import make_app, screen_text

EARLIER = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


class Inbox:
    """Every message the monitor posted, for a test to look through."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[Message] = []

    def post(self, message: Message) -> None:
        with self._lock:
            self._messages.append(message)

    def failures(self) -> dict[str, str]:
        """The last reason told for each run whose status failed."""
        with self._lock:
            return {m.run_id: m.reason for m in self._messages if isinstance(m, RunStatusFailed)}

    def states(self, run_id: str) -> list[RunState]:
        """The states told for ``run_id``, in order."""
        with self._lock:
            return [
                m.state
                for m in self._messages
                if isinstance(m, RunStateChanged) and m.run_id == run_id
            ]


def _finished_manifest() -> JobManifest:
    outcome = TaskOutcome(
        name="work",
        argv=("python", "work.py"),
        status=TaskStatus.SUCCEEDED,
        returncode=0,
        seconds=0.5,
        outputs=(),
    )
    return JobManifest(job="work", tasks=(outcome,), finished=True)


def _local_run(state: Path, name: str, pid: int, index: int) -> tuple[RunHandle, Path]:
    run_id = f"{name}-20260919T12000{index}Z-{index:06x}"
    run_dir = state / "compute" / "local" / run_id
    (run_dir / "outputs").mkdir(parents=True)
    (run_dir / "spec.json").write_text("{}")
    handle = RunHandle(
        run_id=run_id,
        backend="local",
        job=name,
        project=str(state),
        submitted_at=EARLIER + dt.timedelta(seconds=index),
        settings={"python": None, "state_dir": str(state)},
        details={"pid": str(pid), "run_dir": str(run_dir)},
    )
    return handle, run_dir


def test_local_runs_are_asked_for_together_and_a_damaged_one_hides_none(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[set[str]] = []
    real_statuses = LocalBackend.statuses

    def statuses(
        self: LocalBackend, handles: Sequence[RunHandle]
    ) -> dict[str, RunState | UserError]:
        batches.append({handle.run_id for handle in handles})
        return real_statuses(self, handles)

    monkeypatch.setattr(LocalBackend, "statuses", statuses)
    done, damaged, going, worker = _three_runs(state_dir)
    inbox = Inbox()
    monitor = RunMonitor(Service(), inbox.post, first_interval=0.05, max_interval=0.2)
    monitor.start()
    try:
        # The one answer is settled run by run: each is waited for, in no particular order.
        wait_for(lambda: monitor.state_of(going.run_id) is RunState.RUNNING, "the live run")
        wait_for(lambda: monitor.state_of(done.run_id) is RunState.SUCCEEDED, "the ended run")
        wait_for(lambda: damaged.run_id in inbox.failures(), "the damaged run's failure")
        assert "manifest.json" in inbox.failures()[damaged.run_id]
        assert {done.run_id, damaged.run_id, going.run_id} in batches  # one call for all
        # The run ends: its manifest says so, its worker exits; the state follows.
        write_manifest(_going_dir(state_dir) / "outputs", _finished_manifest())
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait(DEADLINE)
        wait_for(lambda: monitor.state_of(going.run_id) is RunState.SUCCEEDED, "the live run's end")
    finally:
        monitor.stop()
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert inbox.states(going.run_id) == [RunState.RUNNING, RunState.SUCCEEDED]
    assert set(inbox.failures()) == {damaged.run_id}
    assert monitor.state_of(damaged.run_id) is None


class HangingBackend:
    """Declares ``statuses``; any question that includes the hung run waits until released."""

    name = "hanging"
    capabilities = frozenset({Capability.STATUSES})

    def __init__(self, hung: str) -> None:
        self.hung = hung
        self.release = threading.Event()

    def status(self, handle: RunHandle) -> RunState:
        if handle.run_id == self.hung:
            self.release.wait(DEADLINE)
        return RunState.RUNNING

    def statuses(self, handles: Sequence[RunHandle]) -> dict[str, RunState]:
        if any(handle.run_id == self.hung for handle in handles):
            self.release.wait(DEADLINE)
        return {handle.run_id: RunState.RUNNING for handle in handles}


def test_a_run_whose_status_hangs_hides_none_of_the_others_states(state_dir: Path) -> None:
    store = RunStore(state_dir / "compute" / "runs")
    handles = [
        RunHandle(
            run_id=f"far{index}-20260919T120000Z-{index:06x}",
            backend="hanging",
            job=f"far{index}",
            project="/p",
            submitted_at=EARLIER + dt.timedelta(seconds=index),
        )
        for index in range(4)
    ]
    for handle in handles:
        store.save(handle)
    hung = handles[1].run_id
    backend = HangingBackend(hung)
    service = Service(build_backend=lambda handle: backend, deadlines=Deadlines(status=0.3))
    inbox = Inbox()
    monitor = RunMonitor(service, inbox.post, first_interval=0.05, max_interval=0.2)
    monitor.start()
    others = [handle.run_id for handle in handles if handle.run_id != hung]
    try:
        wait_for(
            lambda: all(monitor.state_of(run_id) is RunState.RUNNING for run_id in others),
            "the other runs' states",
        )
        wait_for(lambda: hung in inbox.failures(), "the hung run told as not answering")
    finally:
        backend.release.set()
        monitor.stop()
    assert "did not answer within 0.3 s" in inbox.failures()[hung]
    assert set(inbox.failures()) == {hung}


def _going_dir(state_dir: Path) -> Path:
    """The going run's directory (see :func:`_three_runs`)."""
    return state_dir / "compute" / "local" / "going-20260919T120003Z-000003"


def _three_runs(
    state_dir: Path,
) -> tuple[RunHandle, RunHandle, RunHandle, subprocess.Popen[bytes]]:
    """Three stored local runs: one done, one whose manifest is damaged, one going (with the
    live worker it waits on, which the caller stops)."""
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    done, done_dir = _local_run(state_dir, "done", exited.pid, 1)
    write_manifest(done_dir / "outputs", _finished_manifest())
    damaged, damaged_dir = _local_run(state_dir, "damaged", exited.pid, 2)
    (damaged_dir / "outputs" / "manifest.json").write_text('{"schema_version": 2, "job": ')
    going_dir = _going_dir(state_dir)
    # The going run's worker: a live process whose command line runs this run's spec, as the local
    # backend's worker does (it prints nothing, and stops when the test says so).
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdin.read()",
            "--spec",
            str(going_dir / "spec.json"),
            "--outputs",
            str(going_dir / "outputs"),
        ],
        stdin=subprocess.PIPE,
    )
    wait_for_worker_arguments(worker.pid)
    going, _ = _local_run(state_dir, "going", worker.pid, 3)
    store = RunStore(state_dir / "compute" / "runs")
    for handle in (done, damaged, going):
        store.save(handle)
    return done, damaged, going, worker


def _row(app: XTuiApp, run_id: str) -> str:
    """The screen's line that shows ``run_id`` (empty when none does)."""
    return next((line for line in screen_text(app).splitlines() if run_id in line), "")


@asynchronous
async def test_the_runs_table_shows_each_local_runs_state_and_a_damaged_ones_failure(
    state_dir: Path,
) -> None:
    done, damaged, going, worker = _three_runs(state_dir)
    try:
        app = make_app(None)
        async with app.run_test(size=(200, 40)) as pilot:
            await wait_until(pilot, lambda: "running" in _row(app, going.run_id), "running")
            await wait_until(pilot, lambda: "succeeded" in _row(app, done.run_id), "success")
            await wait_until(pilot, lambda: "? unknown" in _row(app, damaged.run_id), "failure")
            # The run ends: its manifest says so and its worker exits; its row follows.
            write_manifest(_going_dir(state_dir) / "outputs", _finished_manifest())
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait(DEADLINE)
            await wait_until(pilot, lambda: "succeeded" in _row(app, going.run_id), "its end")
            assert "? unknown" in _row(app, damaged.run_id)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


@asynchronous
async def test_a_runs_problem_goes_from_the_screens_once_its_backend_answers_again(
    state_dir: Path,
) -> None:
    """A provider that was unreachable for a moment: the run's row and its screen say so, then
    stop saying so when it answers again, though the run stayed running all along."""
    handle = RunHandle(
        run_id="far-20260919T120000Z-000001",
        backend="flaky",
        job="far",
        project="/p",
        submitted_at=EARLIER,
    )
    RunStore(state_dir / "compute" / "runs").save(handle)
    backend = FlakyBackend()
    service = Service(build_backend=lambda handle: backend)
    app = XTuiApp(None, service=service, poll_intervals=QUICK_POLLS)
    reason = "the provider's API is unreachable"
    async with app.run_test(size=(160, 40)) as pilot:
        monitor = app.monitor
        await wait_until(pilot, lambda: monitor.state_of(handle.run_id) is RunState.RUNNING, "it")
        backend.down.set()
        await wait_until(pilot, lambda: reason in screen_text(app), "the row's problem")
        screen = RunScreen(handle)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.loaded, "the run screen")
        await wait_until(pilot, lambda: f"status: {reason}" in screen_text(app), "the header's")
        backend.down.clear()
        await wait_until(pilot, lambda: reason not in screen_text(app), "the header without it")
        await pilot.press("escape")
        await wait_until(pilot, lambda: handle.run_id in screen_text(app), "the runs table")
        assert reason not in screen_text(app)
        assert monitor.state_of(handle.run_id) is RunState.RUNNING
