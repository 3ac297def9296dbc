"""The run follower's first read of a large store: the newest runs from their files, the rest
from the store's index, and a run saved meanwhile by substrax is seen all the same."""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path

import pytest

from tests.support import DEADLINE
from x_tui.app import run_follower
from x_tui.app.run_follower import FIRST_BATCH, RunFollower
from x_tui.app.service import Service
from x_tui.compute.store import RunStore, StoredRuns

from .app_support import save_handle

START = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


class Listing(RunFollower):
    """A follower that keeps its last complete listing for the test."""

    def __init__(self, service: Service) -> None:
        super().__init__(service, poll=False)
        self.complete = threading.Event()
        self.listed: StoredRuns | None = None

    def on_runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
        if complete:
            self.listed = stored
            self.complete.set()


def test_a_large_store_is_listed_from_its_index_after_the_newest_runs(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = FIRST_BATCH + 50
    ids = [
        save_handle(
            state_dir,
            run_id=f"train-{START + dt.timedelta(minutes=index):%Y%m%dT%H%M%SZ}-{index:06x}",
            job="train",
            submitted_at=START + dt.timedelta(minutes=index),
        ).run_id
        for index in range(count)
    ]
    store = RunStore(state_dir / "compute" / "runs")
    store.read_all()  # the index, as an earlier `x-tui status` left it
    # One more run, saved by substrax (which knows no index) after the index was made.
    late = save_handle(
        state_dir,
        run_id="train-20260101T000000Z-abcdef",
        job="train",
        submitted_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    )
    past = START.timestamp()
    os.utime(store.root, (past, past))  # (its time as after a quiet while: the index is
    # not believed on the directory's time alone, since the directory changed after it)
    read: list[Path] = []
    real = run_follower.read_handle_record

    def counting(store: RunStore, path: Path, stamp: tuple[int, int]) -> run_follower.Record:
        read.append(path)
        return real(store, path, stamp)

    monkeypatch.setattr(run_follower, "read_handle_record", counting)
    follower = Listing(Service())
    follower.start()
    try:
        assert follower.complete.wait(DEADLINE), "the store was never listed"
    finally:
        follower.stop()
    assert follower.listed is not None
    listed = [handle.run_id for handle in follower.listed.handles]
    assert listed == [*reversed(ids), late.run_id]
    assert follower.listed.unreadable == {}
    # The newest screenful came from its files one by one; the rest (the late run included,
    # which the index took in when it saw the directory changed) from the index.
    assert sorted(read) == sorted(store.root / f"{run_id}.json" for run_id in ids[-FIRST_BATCH:])
