"""The first screenful of a large store: the newest runs, with how they ended, from the store
index's head and the newest runs' kept final states, before the store is read whole; a head that
is not the store's any more, or damaged, is not believed, and a run kept as ended is never polled.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import DEADLINE, asynchronous, wait_for, wait_until
from x_tui.app import run_follower, run_records
from x_tui.app.app import XTuiApp
from x_tui.app.final_states import RECENT_RUNS, read_recent_final_states, write_final_states
from x_tui.app.run_follower import RunFollower
from x_tui.app.service import Service
from x_tui.compute import operations
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, RunListing, RunStore, StoredRuns
from x_tui.compute.store_index import HEAD_ROWS

from .app_support import keep_final_states, pyproject_text, save_handle, whole_listing_held

START = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)
COUNT = HEAD_ROWS + 50


def run_id(index: int) -> str:
    return f"train-{START + dt.timedelta(minutes=index):%Y%m%dT%H%M%SZ}-{index:06x}"


def make_store(state: Path) -> list[str]:
    """``COUNT`` runs as an earlier session left them: listed, index and head made, settled.

    Returns:
        The run ids, newest first.
    """
    for index in range(COUNT):
        save_handle(
            state,
            run_id=run_id(index),
            job="train",
            submitted_at=START + dt.timedelta(minutes=index),
        )
    store = RunStore(state / "compute" / "runs")
    past = dt.datetime.now(dt.UTC).timestamp() - 60
    os.utime(store.root, (past, past))  # the runs were written a quiet minute ago
    store.read_all()
    assert store.head() is not None
    return [run_id(index) for index in reversed(range(COUNT))]


class Recording(RunFollower):
    """A follower that notes each listing it posts, with the states it knew then, and each
    status call it makes (every run answers ``running``)."""

    def __init__(self, service: Service) -> None:
        super().__init__(service, first_interval=0.0)
        self.events: list[tuple[str, bool, list[str], dict[str, RunState | None]]] = []
        self.complete = threading.Event()
        self.polled: list[list[str]] = []
        real_listing = service.store.listing

        def listing() -> RunListing:
            self.events.append(("store read whole", True, [], {}))
            return real_listing()

        service.store.listing = listing  # type: ignore[method-assign]
        service.status = self._status  # type: ignore[method-assign]
        service.statuses = self._statuses  # type: ignore[method-assign]

    def _status(self, handle: RunHandle) -> RunState:
        self.polled.append([handle.run_id])
        return RunState.RUNNING

    def _statuses(self, handles: Sequence[RunHandle]) -> Mapping[str, RunState]:
        self.polled.append([handle.run_id for handle in handles])
        return {handle.run_id: RunState.RUNNING for handle in handles}

    def on_runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
        states, _ = self.known_states()
        ids = [handle.run_id for handle in stored.handles]
        self.events.append(("listed", complete, ids, {run: states.get(run) for run in ids}))
        if complete:
            self.complete.set()


def follow(follower: Recording, *, then: Callable[[], object] = lambda: None) -> None:
    """Run ``follower`` until it has listed the store whole, and ``then`` (before it stops)."""
    follower.start()
    try:
        assert follower.complete.wait(DEADLINE), "the store was never listed whole"
        then()
    finally:
        follower.stop()


def test_the_newest_runs_and_how_they_ended_are_posted_before_the_store_is_read(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    newest_first = make_store(state_dir)
    ended = {run: (RunState.SUCCEEDED, 5.0) for run in newest_first}
    write_final_states(state_dir / "x-tui" / "final-states.json", ended)
    looked: list[object] = []
    for name in ("newest_names", "read_handle_record"):  # the newest files, without a head
        real = getattr(run_follower, name)
        monkeypatch.setattr(
            run_follower, name, lambda *args, real=real: looked.append(args) or real(*args)
        )
    follower = Recording(Service())
    follow(follower)
    assert looked == []  # no handle file read, nor the directory listed: the head and the index
    first, read, last = follower.events[:3]
    assert first[:3] == ("listed", False, newest_first[:HEAD_ROWS])
    assert set(first[3].values()) == {RunState.SUCCEEDED}  # each shown as it ended, at once
    assert read[0] == "store read whole"
    assert last[:3] == ("listed", True, newest_first)
    assert follower.polled == []  # every run kept as ended: none asked about


def test_a_run_kept_as_ended_is_never_polled_when_the_newest_states_are_not_believed(
    state_dir: Path,
) -> None:
    newest_first = make_store(state_dir)
    still_running = newest_first[-1]  # an old run, outside the head
    # The kept states as an earlier release wrote them (no newest runs' file beside them).
    keep_final_states(
        state_dir,
        {run: (RunState.FAILED, 5.0) for run in newest_first if run != still_running},
    )
    cache = state_dir / "x-tui" / "final-states.json"
    assert read_recent_final_states(cache) is None
    follower = Recording(Service())
    follow(follower, then=lambda: wait_for(lambda: follower.polled, "the unfinished run polled"))
    first = follower.events[0]
    assert first[:3] == ("listed", False, newest_first[:HEAD_ROWS])
    assert set(first[3].values()) == {None}  # not known yet: the whole cache is read after
    assert {run for call in follower.polled for run in call} == {still_running}
    # The newest runs' states are kept beside the cache now, for the next start.
    recent = read_recent_final_states(cache)
    assert recent is not None
    assert set(newest_first[:HEAD_ROWS]) <= set(recent)


@pytest.mark.parametrize("damage", ["a run saved after it", "damaged"])
def test_a_head_that_is_not_believed_still_lists_every_run(
    state_dir: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    newest_first = make_store(state_dir)
    old = newest_first[-1]  # ended, and not among the newest runs whose states are kept apart
    write_final_states(
        state_dir / "x-tui" / "final-states.json",
        {run: (RunState.SUCCEEDED, 5.0) for run in newest_first},
    )
    store = RunStore(state_dir / "compute" / "runs")
    if damage == "damaged":
        store.head_path.write_text('{"version": 2, "names": 7}', encoding="utf-8")
    else:
        late = save_handle(
            state_dir,
            run_id="train-20270101T000000Z-abcdef",
            job="train",
            submitted_at=dt.datetime(2027, 1, 1, tzinfo=dt.UTC),
        )
        newest_first.insert(0, late.run_id)
    follower = Recording(Service())
    real_read = run_follower.read_final_states

    def read_cache(path: Path) -> object:
        follower.events.append(("cache read whole", True, [], {}))
        return real_read(path)

    monkeypatch.setattr(run_follower, "read_final_states", read_cache)
    if damage == "damaged":
        follow(follower)
    else:  # the run saved after the head has no final state kept: it is polled
        follow(follower, then=lambda: wait_for(lambda: follower.polled, "the late run polled"))
    first = follower.events[0]
    assert first[0] == "listed"
    assert first[2][0] == newest_first[0]
    # The newest files read one by one, shown as they ended (their states kept apart), before
    # the whole store (and the whole cache) is read.
    assert first[3][newest_first[1]] is RunState.SUCCEEDED
    assert [event[0] for event in follower.events[1:3]] == ["cache read whole", "store read whole"]
    assert follower.events[-1][:3] == ("listed", True, newest_first)
    assert follower.known_states()[0][old] is RunState.SUCCEEDED
    polled = {run for call in follower.polled for run in call}
    assert polled == (set() if damage == "damaged" else {newest_first[0]})


@asynchronous
async def test_the_runs_table_shows_the_first_screenful_before_the_store_is_read_whole(
    state_dir: Path,
) -> None:
    newest_first = make_store(state_dir)
    write_final_states(
        state_dir / "x-tui" / "final-states.json",
        {run: (RunState.CANCELLED, 5.0) for run in newest_first},
    )
    service = Service()
    app = XTuiApp(None, service=service, poll=False)
    with whole_listing_held(service) as release:
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.main_screen.runs
            await wait_until(pilot, lambda: table.row_count >= 30, "a screenful of runs")
            assert table.shown_count == HEAD_ROWS
            assert table.highlighted_key() == newest_first[0]
            assert "cancelled" in str(table.get_row(newest_first[0]))
            release.set()
            await wait_until(pilot, lambda: table.shown_count == COUNT, "every run")


@asynchronous
async def test_the_newest_runs_are_in_the_first_frame(state_dir: Path) -> None:
    newest_first = make_store(state_dir)
    write_final_states(
        state_dir / "x-tui" / "final-states.json",
        {run: (RunState.SUCCEEDED, 5.0) for run in newest_first},
    )
    # The follower posts the head as it starts, before any of its threads reads a thing.
    follower = Recording(Service())
    follower.start()
    try:
        assert [handle.run_id for handle in follower.stored.handles] == newest_first[:HEAD_ROWS]
    finally:
        follower.stop()
    first_frame: list[int] = []

    class Timed(XTuiApp):
        def on_ready(self) -> None:  # the first frame is on the screen
            first_frame.append(self.main_screen.runs.row_count)

    app = Timed(None, service=Service(), poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: first_frame, "the first frame")
    assert first_frame[0] >= 30  # a screenful, drawn with the frame, not a frame later


@asynchronous
async def test_in_a_project_the_store_is_read_whole_only_once_its_jobs_are_shown(
    state_dir: Path, tmp_path: Path
) -> None:
    """Reading the rest of a large store takes the interpreter for a while (some 3 CPU s at
    100,000 runs): the project's jobs, read once the first frame is drawn, would show late."""
    make_store(state_dir)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject_text(), encoding="utf-8")
    service = Service()
    project_read, jobs_resolved = threading.Event(), threading.Event()
    read_whole: list[bool] = []  # for each read of the whole store: were the jobs resolved then
    real_open, real_list_jobs, real_listing = (
        service.open_project,
        service.list_jobs,
        service.store.listing,
    )

    def open_project(root: Path | None) -> operations.Project:
        project_read.wait(DEADLINE)  # the project reads slowly, until the test says
        return real_open(root)

    def list_jobs(project: operations.Project) -> operations.JobList:
        jobs = real_list_jobs(project)
        jobs_resolved.set()
        return jobs

    def listing() -> RunListing:
        read_whole.append(jobs_resolved.is_set())
        return real_listing()

    service.open_project = open_project  # type: ignore[method-assign]
    service.list_jobs = list_jobs  # type: ignore[method-assign]
    service.store.listing = listing  # type: ignore[method-assign]
    app = XTuiApp(project, service=service, poll=False)
    app.monitor.first_pause = DEADLINE  # only being told the first screenful is shown ends it
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            listed = app.monitor.stored.handles
            assert len(listed) == HEAD_ROWS  # the newest runs, in the first frame
            await pilot.pause(0.3)  # the store would have been read whole by now
            assert read_whole == []
            project_read.set()
            jobs = app.main_screen.jobs
            await wait_until(pilot, lambda: jobs.job_names == ("quick", "second"), "the jobs")
            await wait_until(
                pilot, lambda: len(app.monitor.stored.handles) == COUNT, "every run listed"
            )
            assert read_whole == [True]
    finally:
        project_read.set()


@asynchronous
async def test_a_projects_runs_that_are_not_the_newest_are_in_its_first_screenful(
    state_dir: Path, tmp_path: Path
) -> None:
    """Another project's sweep saved the store's newest runs: ours still show at once, from
    our project's own head, not once the whole store is read (some 3 s at 100,000 runs)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject_text(), encoding="utf-8")
    ours = [
        save_handle(
            state_dir,
            run_id=run_id(index),
            job="train",
            submitted_at=START + dt.timedelta(minutes=index),
            project=str(project),
        ).run_id
        for index in range(40)
    ]
    theirs = [  # more than the newest runs whose final states are read with the head
        save_handle(
            state_dir,
            run_id=run_id(index),
            job="sweep",
            submitted_at=START + dt.timedelta(minutes=index),
        ).run_id
        for index in range(40, 40 + RECENT_RUNS + 5)
    ]
    write_final_states(
        state_dir / "x-tui" / "final-states.json",
        {run: (RunState.SUCCEEDED, 5.0) for run in ours + theirs},
    )
    store = RunStore(state_dir / "compute" / "runs")
    past = dt.datetime.now(dt.UTC).timestamp() - 60
    os.utime(store.root, (past, past))
    store.read_all()  # the index, its head and our project's head made, as by an earlier start
    service = Service()
    app = XTuiApp(project, service=service, poll=False)
    with whole_listing_held(service) as release:
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.main_screen.runs
            await wait_until(pilot, lambda: table.shown_count == len(ours), "our runs")
            assert table.highlighted_key() == ours[-1]  # our newest, as the project filter shows
            # how they ended, once the kept final states are read (the whole store is not yet)
            await wait_until(
                pilot, lambda: "succeeded" in str(table.get_row(ours[-1])), "our newest's state"
            )
            await pilot.press("tab", "p")  # every project's runs: theirs too, ours below them
            await wait_until(pilot, lambda: table.shown_count == HEAD_ROWS + len(ours), "all")
            release.set()
            everyone = len(ours) + len(theirs)
            await wait_until(pilot, lambda: table.shown_count == everyone, "every run")


def test_a_newest_run_still_going_is_polled_before_the_store_is_read_whole(
    state_dir: Path,
) -> None:
    newest_first = make_store(state_dir)
    going = newest_first[0]
    write_final_states(
        state_dir / "x-tui" / "final-states.json",
        {run: (RunState.SUCCEEDED, 5.0) for run in newest_first if run != going},
    )
    follower = Recording(Service())
    polled = threading.Event()
    real_listing = follower.service.store.listing
    real_statuses = follower._statuses

    def statuses(handles: Sequence[RunHandle]) -> Mapping[str, RunState]:
        polled.set()
        return real_statuses(handles)

    def listing() -> RunListing:
        # The whole store is read only once the run still going was asked about.
        follower.events.append(("poll seen" if polled.wait(DEADLINE) else "no poll", True, [], {}))
        return real_listing()

    follower.service.statuses = statuses  # type: ignore[method-assign]
    follower.service.status = lambda handle: statuses([handle])[handle.run_id]  # type: ignore[method-assign]
    follower.service.store.listing = listing  # type: ignore[method-assign]
    follow(follower)
    assert ("poll seen", True, [], {}) in follower.events
    assert {run for call in follower.polled for run in call} == {going}


def test_the_launch_records_wait_for_the_first_screenful_of_a_large_store(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their thread starts with the app; reading them loads modules and an inotify binding
    (about 9 ms of CPU) that would be taken from the screen drawing its first frame."""
    monkeypatch.setattr(run_follower, "LAUNCH_SECONDS", 0.02)
    make_store(state_dir)  # more runs than the head holds
    reads: list[object] = []
    real_read = operations.read_launches
    monkeypatch.setattr(
        operations, "read_launches", lambda store: reads.append(store) or real_read(store)
    )
    follower = Recording(Service())
    follower.first_pause = DEADLINE  # only being told the runs are shown ends the wait
    follower.start()
    try:
        time.sleep(0.5)  # twenty-five of the launch thread's looks, were it not waiting
        assert reads == []
        assert follower.events[0][:2] == ("listed", False)  # the newest runs are posted
        follower.first_shown()
        wait_for(lambda: reads, "the launch records read once the newest runs are shown")
        assert follower.complete.wait(DEADLINE)
    finally:
        follower.stop()


def test_the_launch_records_of_a_store_its_head_holds_whole_are_read_at_once(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_follower, "LAUNCH_SECONDS", 0.02)
    for index in range(3):
        save_handle(state_dir, run_id=run_id(index), job="train", submitted_at=START)
    store = RunStore(state_dir / "compute" / "runs")
    past = dt.datetime.now(dt.UTC).timestamp() - 60
    os.utime(store.root, (past, past))  # written a quiet minute ago: its head is believed
    store.read_all()
    head = store.head()
    assert head is not None
    assert head.complete
    reads: list[object] = []
    real_read = operations.read_launches
    monkeypatch.setattr(
        operations, "read_launches", lambda store: reads.append(store) or real_read(store)
    )
    follower = Recording(Service())
    follower.first_pause = DEADLINE  # no first screenful to wait for: never waited on
    follower.start()
    try:
        wait_for(lambda: reads, "the launch records read without being told")
    finally:
        follower.stop()


def test_the_newest_names_are_the_listings_first_ones_without_sorting_them_all(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    # Runs of two jobs in one second (ties keep the listing's order), a name that is not a run
    # id (last), a dot-named partial write and another file (left out).
    names = [f"{run_id(index)}.json" for index in (3, 1, 7, 5)]
    names += ["eval-20260919T120100Z-00000a.json", "train-20260919T120100Z-00000b.json"]
    names += ["notes.json", ".train-20260919T121500Z-00000f.json.tmp", "README"]
    for name in names:
        (runs / name).write_text("{}", encoding="utf-8")
    listed = run_records.listing_names(runs)
    assert len(listed) == 7
    assert listed[-1] == "notes.json"
    for count in (0, 1, 3, 7, 20):
        newest, total = run_records.newest_names(runs, count)
        assert newest == listed[:count]
        assert total == 7
    assert run_records.newest_names(tmp_path / "missing", 5) == ([], 0)


def test_a_listing_is_sorted_and_made_without_holding_the_states_from_the_screen(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The screen asks for states under the follower's lock (the keys that apply to a run): a
    # key waited 0.3 s on it while the listing of 100,000 runs was sorted under it.
    make_store(state_dir)
    follower = Recording(Service())
    lock_held: list[bool] = []
    real_stored_runs = run_follower.StoredRuns

    def made(*args: Any, **kwargs: Any) -> StoredRuns:
        free = follower._lock.acquire(blocking=False)
        if free:
            follower._lock.release()
        lock_held.append(not free)
        return real_stored_runs(*args, **kwargs)

    monkeypatch.setattr(run_follower, "StoredRuns", made)
    follow(follower)
    assert lock_held  # the head's listing and the whole store's
    assert not any(lock_held)
