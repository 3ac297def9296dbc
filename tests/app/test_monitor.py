"""The run monitor on its own: real store files, real processes, the real local backend."""

from __future__ import annotations

import datetime as dt
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.message import Message

from tests.support import DEADLINE, FlakyBackend, wait_for
from x_tui.app import inotify as inotify_module
from x_tui.app import run_follower
from x_tui.app.deadlines import call_with_deadline
from x_tui.app.messages import (
    ConfigChanged,
    RunsChanged,
    RunStateChanged,
    RunStatusFailed,
    RunStatusRecovered,
)
from x_tui.app.monitor import RunMonitor
from x_tui.app.run_follower import RunFollower
from x_tui.app.service import Service
from x_tui.compute import operations
from x_tui.compute.backend import Capability, RunState
from x_tui.compute.launches import LaunchBook, LaunchRecord, StoredLaunches, process_start
from x_tui.compute.store import RunHandle, RunStore, StoredRuns
from x_tui.compute.worker.errors import ProviderError

from .app_support import QUICK_JOB, keep_final_states, pyproject_text, save_handle

EARLIER = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


class Inbox:
    """What the monitor posted, in order, for a test to wait on."""

    def __init__(self) -> None:
        self.messages: queue.Queue[Message] = queue.Queue()
        self.seen: list[Message] = []

    def post(self, message: Message) -> None:
        self.messages.put(message)

    def wait_for(self, wanted: Callable[[Message], bool], what: str) -> Message:
        give_up = time.monotonic() + DEADLINE
        while True:
            left = give_up - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the monitor never posted {what}; it posted {self.seen!r}")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(message)
            if wanted(message):
                return message


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


@pytest.fixture
def started(state_dir: Path, inbox: Inbox) -> Iterator[Callable[..., RunMonitor]]:
    monitors: list[RunMonitor] = []

    def start(project: Path | None = None, *, poll: bool = True) -> RunMonitor:
        monitor = RunMonitor(Service(), inbox.post, project=project, poll=poll)
        monitors.append(monitor)
        monitor.start()
        return monitor

    yield start
    for monitor in monitors:
        monitor.stop()


def _holds(run_id: str) -> Callable[[Message], bool]:
    def check(message: Message) -> bool:
        return isinstance(message, RunsChanged) and any(
            handle.run_id == run_id for handle in message.stored.handles
        )

    return check


def test_a_handle_another_process_saves_is_posted_without_being_asked(
    state_dir: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    started(poll=False)
    inbox.wait_for(lambda m: isinstance(m, RunsChanged) and m.complete, "the first read")
    saver = """
import datetime as dt
from x_tui.compute.store import RunHandle, RunStore
RunStore().save(RunHandle(
    run_id="other-20260919T120000Z-aaaaaa", backend="local", job="other", project="/p",
    submitted_at=dt.datetime(2026, 9, 19, 12, tzinfo=dt.timezone.utc),
))
"""
    subprocess.run([sys.executable, "-c", saver], check=True, timeout=DEADLINE)
    inbox.wait_for(_holds("other-20260919T120000Z-aaaaaa"), "the other process's run")


def test_a_deleted_record_leaves_the_runs_posted(
    state_dir: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    save_handle(state_dir, run_id="gone-20260919T120000Z-bbbbbb", job="gone", submitted_at=EARLIER)
    monitor = started(poll=False)
    inbox.wait_for(_holds("gone-20260919T120000Z-bbbbbb"), "the stored run")
    (state_dir / "compute" / "runs" / "gone-20260919T120000Z-bbbbbb.json").unlink()
    inbox.wait_for(lambda m: isinstance(m, RunsChanged) and not m.stored.handles, "an empty store")
    assert monitor.stored.handles == ()


def test_a_record_that_cannot_be_read_is_posted_with_its_reason(
    state_dir: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    runs = state_dir / "compute" / "runs"
    runs.mkdir(parents=True)
    started(poll=False)
    inbox.wait_for(lambda m: isinstance(m, RunsChanged) and m.complete, "the first read")
    (runs / "bad-20260919T120000Z-cccccc.json").write_text('{"schema_version": 7}')
    message = inbox.wait_for(
        lambda m: isinstance(m, RunsChanged) and bool(m.stored.unreadable), "the bad record"
    )
    assert isinstance(message, RunsChanged)
    [(path, reason)] = message.stored.unreadable.items()
    assert path.name == "bad-20260919T120000Z-cccccc.json"
    assert "version 7" in reason


@pytest.mark.slow
def test_a_run_is_followed_to_its_end_and_a_later_session_knows_it_without_asking(
    state_dir: Path, project: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    monitor = started()
    service = Service()
    handle = service.submit(service.plan(service.open_project(project), "quick"))
    inbox.wait_for(
        lambda m: (
            isinstance(m, RunStateChanged)
            and m.run_id == handle.run_id
            and m.state is RunState.SUCCEEDED
        ),
        "the run's success",
    )
    assert monitor.ended_at(handle.run_id) is not None
    monitor.stop()

    news = Inbox()
    later = RunMonitor(Service(), news.post, poll=False)
    later.start()
    news.wait_for(lambda m: isinstance(m, RunsChanged) and m.complete, "the later first read")
    later.stop()
    assert later.state_of(handle.run_id) is RunState.SUCCEEDED
    assert later.ended_at(handle.run_id) == monitor.ended_at(handle.run_id)


def test_a_run_whose_backend_is_not_installed_is_reported_naming_it(
    state_dir: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    save_handle(
        state_dir,
        run_id="far-20260919T120000Z-dddddd",
        job="far",
        backend="nowhere",
        submitted_at=EARLIER,
    )
    monitor = started()
    message = inbox.wait_for(lambda m: isinstance(m, RunStatusFailed), "the backend's refusal")
    assert isinstance(message, RunStatusFailed)
    assert message.run_id == "far-20260919T120000Z-dddddd"
    assert "'nowhere'" in message.reason
    assert monitor.state_of("far-20260919T120000Z-dddddd") is None


def test_editing_pyproject_posts_the_project_as_it_reads_now(
    state_dir: Path, project: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    started(project, poll=False)
    inbox.wait_for(lambda m: isinstance(m, RunsChanged) and m.complete, "the first read")
    (project / "pyproject.toml").write_text(pyproject_text(QUICK_JOB), encoding="utf-8")
    message = inbox.wait_for(
        lambda m: (
            isinstance(m, ConfigChanged)
            and m.project.config is not None
            and list(m.project.config.jobs) == ["quick"]
        ),
        "the edited project",
    )
    assert isinstance(message, ConfigChanged)
    assert message.project.problem is None


def test_a_backend_call_past_its_deadline_names_the_backend_and_is_abandoned() -> None:
    release = threading.Event()
    try:
        with pytest.raises(ProviderError, match=r"backend 'modal': status of r1 did not answer"):
            call_with_deadline(
                lambda: release.wait(DEADLINE), seconds=0.05, backend="modal", what="status of r1"
            )
    finally:
        release.set()


def test_a_backend_error_within_the_deadline_is_raised_as_it_was() -> None:
    def refuse() -> None:
        raise ProviderError("modal: no such app")

    with pytest.raises(ProviderError, match="no such app"):
        call_with_deadline(refuse, seconds=DEADLINE, backend="modal", what="status")


class CountingBackend:
    """A backend that counts how it is asked; with ``batch``, it declares ``statuses``."""

    name = "counting"

    def __init__(self, *, batch: bool) -> None:
        self.capabilities = frozenset({Capability.STATUSES}) if batch else frozenset()
        self.batches: list[frozenset[str]] = []
        self.singles: list[str] = []
        self.ended = threading.Event()
        self._lock = threading.Lock()

    def _state(self) -> RunState:
        return RunState.SUCCEEDED if self.ended.is_set() else RunState.RUNNING

    def status(self, handle: RunHandle) -> RunState:
        with self._lock:
            self.singles.append(handle.run_id)
        return self._state()

    def statuses(self, handles: list[RunHandle]) -> dict[str, RunState]:
        with self._lock:
            self.batches.append(frozenset(handle.run_id for handle in handles))
        return {handle.run_id: self._state() for handle in handles}


def _save_counting_runs(state_dir: Path, count: int) -> set[str]:
    run_ids = set()
    for index in range(count):
        run_id = f"remote{index}-20260919T120000Z-{index:06x}"
        save_handle(
            state_dir,
            run_id=run_id,
            job=f"remote{index}",
            backend="counting",
            submitted_at=EARLIER + dt.timedelta(seconds=index),
        )
        run_ids.add(run_id)
    return run_ids


def test_the_monitor_asks_once_per_round_for_all_unfinished_runs_of_a_batching_backend(
    state_dir: Path, inbox: Inbox
) -> None:
    run_ids = _save_counting_runs(state_dir, 20)
    backend = CountingBackend(batch=True)
    service = Service(build_backend=lambda handle: backend)
    monitor = RunMonitor(service, inbox.post, first_interval=0.05, max_interval=0.1)
    monitor.start()
    try:
        wait_for(lambda: len(backend.batches) >= 3, "three poll rounds")
        backend.ended.set()
        wait_for(
            lambda: all(monitor.state_of(run_id) is RunState.SUCCEEDED for run_id in run_ids),
            "every run's success",
        )
        rounds = len(backend.batches)
        time.sleep(0.3)
    finally:
        monitor.stop()
    assert backend.singles == []
    assert backend.batches
    assert all(batch == run_ids for batch in backend.batches)
    assert len(backend.batches) == rounds  # finished runs are never asked for again
    assert not monitor._tellings  # nor is a telling lock kept for any of them


def test_a_backend_that_cannot_batch_is_asked_once_per_run(state_dir: Path, inbox: Inbox) -> None:
    run_ids = _save_counting_runs(state_dir, 3)
    backend = CountingBackend(batch=False)
    backend.ended.set()
    service = Service(build_backend=lambda handle: backend)
    monitor = RunMonitor(service, inbox.post, first_interval=0.05, max_interval=0.1)
    monitor.start()
    try:
        wait_for(
            lambda: all(monitor.state_of(run_id) is RunState.SUCCEEDED for run_id in run_ids),
            "every run's success",
        )
    finally:
        monitor.stop()
    assert backend.batches == []
    assert sorted(backend.singles) == sorted(run_ids)


def _launch_record(tmp_path: Path) -> LaunchRecord:
    """A launch record whose submitter (this process) lives: its run reads ``submitting``."""
    return LaunchRecord(
        run_id="alive-20261201T120000Z-aaaaaa",
        backend="local",
        job="alive",
        project=str(tmp_path),
        submitted_at=dt.datetime.now(dt.UTC),
        settings={"python": sys.executable},
        submitter_pid=os.getpid(),
        submitter_start=process_start(os.getpid()) or "",
    )


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "no-inotify"])
def test_launch_records_are_read_only_once_their_directory_changes(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inotify: bool
) -> None:
    monkeypatch.setattr(run_follower, "LAUNCH_SECONDS", 0.02)
    monkeypatch.setattr(run_follower, "SETTLED_SECONDS", 0.0)
    if not inotify:  # another system: the directory is looked at each LAUNCH_SECONDS
        monkeypatch.setattr(inotify_module, "open_inotify", lambda: None)
    looks: list[object] = []
    reads: list[object] = []
    real_stamp, real_read = run_follower._directory_stamp, operations.read_launches

    def looked(directory: Path) -> tuple[int, int] | None:
        looks.append(directory)
        return real_stamp(directory)

    def read(store: RunStore) -> StoredLaunches:
        reads.append(store)
        return real_read(store)

    monkeypatch.setattr(run_follower, "_directory_stamp", looked)
    monkeypatch.setattr(operations, "read_launches", read)  # (looked up at each read)
    told: queue.Queue[tuple[str, RunState]] = queue.Queue()

    class Follower(RunFollower):
        def on_launch_state(self, run_id: str, state: RunState) -> None:
            told.put((run_id, state))

    follower = Follower(Service())
    follower.start()
    try:
        wait_for(lambda: len(reads) == 1, "the first read of the launch records")
        if inotify:
            # Nothing to read, and nothing changed: not even looked at (each look was a wake-up).
            looked_then = len(looks)
            time.sleep(0.5)
            assert len(looks) == looked_then
        else:
            wait_for(lambda: len(looks) >= 10, "ten looks at the launch records")
        assert len(reads) == 1  # no records, and their directory unchanged: not read again
        record = _launch_record(tmp_path)
        LaunchBook(RunStore()).write(record)
        assert told.get(timeout=DEADLINE) == (record.run_id, RunState.SUBMITTING)
        looked_then = len(looks)
        wait_for(lambda: len(looks) >= looked_then + 5, "five more looks")
        assert len(reads) >= 5  # a record is there: read at every look, as its submitter may die
    finally:
        follower.stop()
    for thread in follower._threads:
        thread.join(timeout=DEADLINE)
        assert not thread.is_alive(), f"{thread.name} did not stop"


def test_a_launch_record_is_told_without_waiting_for_the_next_look(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Looks a thousand seconds apart: only the directory's change can bring the record in time.
    monkeypatch.setattr(run_follower, "LAUNCH_SECONDS", 1000.0)
    monkeypatch.setattr(run_follower, "SETTLED_SECONDS", 0.0)
    told: queue.Queue[tuple[str, RunState]] = queue.Queue()
    reads: list[object] = []
    real_read = operations.read_launches

    def read(store: RunStore) -> StoredLaunches:
        reads.append(store)
        return real_read(store)

    monkeypatch.setattr(operations, "read_launches", read)  # (looked up at each read)

    class Follower(RunFollower):
        def on_launch_state(self, run_id: str, state: RunState) -> None:
            told.put((run_id, state))

    follower = Follower(Service())
    # The first read comes only after a first wait: a record already there is not read either.
    monkeypatch.setattr(run_follower, "LAUNCH_SECONDS", 0.02)
    follower.start()
    try:
        wait_for(lambda: len(reads) == 1, "the first read of the launch records")
        monkeypatch.setattr(run_follower, "LAUNCH_SECONDS", 1000.0)
        time.sleep(0.1)  # the follower sleeps on the directory now
        record = _launch_record(tmp_path)
        LaunchBook(RunStore()).write(record)
        assert told.get(timeout=DEADLINE) == (record.run_id, RunState.SUBMITTING)
    finally:
        follower.stop()
    for thread in follower._threads:  # the sleeping launch thread is woken to stop
        thread.join(timeout=DEADLINE)
        assert not thread.is_alive(), f"{thread.name} did not stop"


def test_only_unfinished_runs_are_listed_as_unfinished(
    state_dir: Path, tmp_path: Path, inbox: Inbox, started: Callable[..., RunMonitor]
) -> None:
    for number in range(3):
        run_id = f"old-20260919T12000{number}Z-aaaaaa"
        save_handle(state_dir, run_id=run_id, job="old", submitted_at=EARLIER)
    keep_final_states(
        state_dir, {f"old-20260919T12000{n}Z-aaaaaa": (RunState.SUCCEEDED, 1.0) for n in range(3)}
    )
    root = tmp_path / "waits"
    root.mkdir()
    job = """
[tool.substrax.compute.jobs.waits]
timeout_seconds = 120
commands = { waits = ["python", "waits.py"] }
"""
    (root / "pyproject.toml").write_text(pyproject_text(job), encoding="utf-8")
    waits = "import os, time\nwhile not os.path.exists('stop'):\n    time.sleep(0.05)\n"
    (root / "waits.py").write_text(waits, encoding="utf-8")
    monitor = started()
    service = Service()
    handle = service.submit(service.plan(service.open_project(root), "waits"))
    try:
        inbox.wait_for(
            lambda m: (
                isinstance(m, RunStateChanged)
                and m.run_id == handle.run_id
                and m.state is RunState.RUNNING
            ),
            "the run running",
        )
        assert [h.run_id for h in monitor.unfinished()] == [handle.run_id]
    finally:
        (root / "stop").write_text("")
    inbox.wait_for(
        lambda m: (
            isinstance(m, RunStateChanged)
            and m.run_id == handle.run_id
            and m.state is RunState.SUCCEEDED
        ),
        "the run's success",
    )
    assert monitor.unfinished() == []


def test_a_runs_states_are_told_in_the_order_they_were_found(state_dir: Path) -> None:
    """A ``running`` whose telling is late (its thread preempted) never follows ``succeeded``."""
    (run_id,) = _save_counting_runs(state_dir, 1)
    backend = CountingBackend(batch=False)
    told: list[RunState] = []

    def post(message: Message) -> None:
        if isinstance(message, RunStateChanged) and message.run_id == run_id:
            if message.state is RunState.RUNNING:
                backend.ended.set()  # the run ends and is asked about at once (as after a
                monitor.poll_soon(run_id)  # cancel), while this thread still tells "running"
                time.sleep(0.5)
            told.append(message.state)

    service = Service(build_backend=lambda handle: backend)
    monitor = RunMonitor(service, post, first_interval=0.05, max_interval=0.1, parallel=4)
    monitor.start()
    try:
        wait_for(lambda: len(told) >= 2, "both states told")
    finally:
        monitor.stop()
    assert told == [RunState.RUNNING, RunState.SUCCEEDED]
    assert backend.singles.count(run_id) == 2


def test_a_backend_that_answers_again_is_told_so_and_its_problem_forgotten(
    state_dir: Path, inbox: Inbox
) -> None:
    save_handle(
        state_dir,
        run_id="far-20260919T120000Z-000001",
        job="far",
        backend="flaky",
        submitted_at=EARLIER,
    )
    backend = FlakyBackend()
    service = Service(build_backend=lambda handle: backend)
    monitor = RunMonitor(
        service, inbox.post, first_interval=0.05, max_interval=0.1, error_interval=0.1
    )
    monitor.start()
    run_id = "far-20260919T120000Z-000001"
    try:
        inbox.wait_for(lambda m: isinstance(m, RunStateChanged), "the run's state")
        backend.down.set()
        inbox.wait_for(lambda m: isinstance(m, RunStatusFailed), "the backend's failure")
        assert run_id in monitor.problems()
        backend.down.clear()
        inbox.wait_for(lambda m: isinstance(m, RunStatusRecovered), "the backend's answer")
    finally:
        monitor.stop()
    assert monitor.problems() == {}
    states = [m.state for m in inbox.seen if isinstance(m, RunStateChanged)]
    assert states == [RunState.RUNNING]  # the run never changed state: only its backend did
    recovered = [m for m in inbox.seen if isinstance(m, RunStatusRecovered)]
    assert [m.run_id for m in recovered] == [run_id]


def test_a_backend_that_answers_again_with_the_runs_end_tells_the_end_then_that_it_answers(
    state_dir: Path, inbox: Inbox
) -> None:
    """The run ended while its provider was unreachable: its end is told, then the recovery
    (which a screen's status notice waits for), though the run is polled no more."""
    run_id = "far-20260919T120000Z-000001"
    save_handle(state_dir, run_id=run_id, job="far", backend="flaky", submitted_at=EARLIER)
    backend = FlakyBackend()
    service = Service(build_backend=lambda handle: backend)
    monitor = RunMonitor(
        service, inbox.post, first_interval=0.05, max_interval=0.1, error_interval=0.1
    )
    monitor.start()
    try:
        inbox.wait_for(lambda m: isinstance(m, RunStateChanged), "the run's state")
        backend.down.set()
        inbox.wait_for(lambda m: isinstance(m, RunStatusFailed), "the backend's failure")
        backend.answer = RunState.SUCCEEDED
        backend.down.clear()
        inbox.wait_for(lambda m: isinstance(m, RunStatusRecovered), "the backend's answer")
    finally:
        monitor.stop()
    told = [
        (type(m).__name__, getattr(m, "state", None))
        for m in inbox.seen
        if isinstance(m, RunStateChanged | RunStatusRecovered)
    ]
    assert told == [
        ("RunStateChanged", RunState.RUNNING),
        ("RunStateChanged", RunState.SUCCEEDED),
        ("RunStatusRecovered", None),
    ]
    assert monitor.problems() == {}


def test_an_older_listing_told_late_never_follows_a_newer_one(state_dir: Path) -> None:
    """Two threads read the store one after the other; the first tells slowly."""
    told: list[int] = []
    first_in = threading.Event()

    class SlowFirst(RunFollower):
        def on_runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
            if not first_in.is_set():
                first_in.set()
                time.sleep(0.5)  # this thread is preempted before it tells what it read
            told.append(len(stored.handles))

    follower = SlowFirst(Service(), poll=False)
    save_handle(state_dir, run_id="one-20260919T120000Z-000001", job="one", submitted_at=EARLIER)
    first = threading.Thread(target=follower.rescan)
    first.start()
    assert first_in.wait(DEADLINE)
    save_handle(state_dir, run_id="two-20260919T120001Z-000002", job="two", submitted_at=EARLIER)
    follower.rescan()
    first.join()
    assert told == [1, 2]


def test_a_hook_that_takes_long_for_one_run_holds_up_no_other_runs_telling(
    state_dir: Path,
) -> None:
    """The watcher resubmits a preempted run in its hook (minutes, for a cloud): the other runs'
    states are told meanwhile."""
    slow, quick = sorted(_save_counting_runs(state_dir, 2))
    slow_in_hook, quick_told = threading.Event(), threading.Event()
    told: list[str] = []

    class QuickAnswersLate(CountingBackend):
        def status(self, handle: RunHandle) -> RunState:
            if handle.run_id == quick:
                slow_in_hook.wait(DEADLINE)  # the quick run answers once the slow one is told
            return super().status(handle)

    backend = QuickAnswersLate(batch=False)

    def post(message: Message) -> None:
        if not isinstance(message, RunStateChanged):
            return
        if message.run_id == slow:
            slow_in_hook.set()
            quick_told.wait(2.0)  # at once, if the quick run is told meanwhile
        else:
            quick_told.set()
        told.append(message.run_id)

    service = Service(build_backend=lambda handle: backend)
    monitor = RunMonitor(service, post, first_interval=0.05, max_interval=0.1, parallel=4)
    monitor.start()
    try:
        wait_for(lambda: len(told) >= 2, "both runs' states told")
    finally:
        monitor.stop()
    assert told[:2] == [quick, slow]
