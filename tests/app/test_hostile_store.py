"""The TUI on a store full of hostile entries (:mod:`x_tui.testing.hostile_store`).

It shows what ``x-tui status`` shows: every good run listed, each bad entry on a row of its own
with its reason; a bad entry that is removed leaves the listing, and the final-states cache that
was replaced by a FIFO is written anew.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from tests.support import DEADLINE, asynchronous, wait_until
from x_tui.app.final_states import read_final_states
from x_tui.app.run_sources import RunReader, RunSnapshot
from x_tui.app.service import Service
from x_tui.compute.worker.attempts import ATTEMPTS_NAME
from x_tui.compute.worker.manifest import MANIFEST_NAME
from x_tui.testing.hostile_store import build_hostile_store

from .app_support import make_app


@asynchronous
async def test_the_runs_pane_lists_the_good_runs_and_names_each_bad_entry(
    state_dir: Path,
) -> None:
    corpus = build_hostile_store(state_dir)
    expected = {*corpus.good, *(f"file:{path}" for path in corpus.bad)}
    app = make_app(None)
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.main_screen.runs
        monitor = app.monitor

        def keys() -> set[str]:
            return {str(key.value) for key in table.rows}

        await wait_until(pilot, lambda: expected <= keys(), "every run and every bad entry")
        assert monitor is not None
        stored = monitor.stored
        assert [handle.run_id for handle in stored.handles] == list(corpus.good)
        assert set(stored.unreadable) == set(corpus.bad)
        for path, reason in corpus.bad.items():
            assert reason in stored.unreadable[path], (path, stored.unreadable[path])
        title = str(app.main_screen.query_one("#runs-pane").border_title)
        assert title == f"Runs · {len(corpus.good) + len(corpus.bad)}"
        # A run whose manifest is hostile is listed, its row saying why its state is unknown.
        for run_id, reason in corpus.bad_manifests.items():
            await wait_until(
                pilot,
                lambda run_id=run_id, reason=reason: reason in str(table.describe(run_id)),
                f"the reason on {run_id}'s row",
            )

        # Removing bad entries takes them off the listing; the good runs stay.
        gone = [path for path, reason in corpus.bad.items() if reason in ("FIFO", "directory")]
        assert len(gone) >= 3
        for path in gone:
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        left = expected - {f"file:{path}" for path in gone}
        await wait_until(pilot, lambda: keys() & expected == left, "the removed entries gone")
        assert set(corpus.good) <= keys()
    cache = corpus.caches[0]
    assert stat.S_ISREG(os.lstat(cache).st_mode), "the FIFO cache was not written anew"
    kept = read_final_states(cache)
    assert kept is not None
    assert set(kept) <= set(corpus.good)


@asynchronous
async def test_a_store_holding_only_a_fifo_recovers_when_it_is_removed(state_dir: Path) -> None:
    runs = state_dir / "compute" / "runs"
    runs.mkdir(parents=True)
    fifo = runs / "bad-20260919T120000Z-000001.json"
    os.mkfifo(fifo)
    app = make_app(None, poll=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 1, "the FIFO's row")
        fifo.unlink()
        await wait_until(pilot, lambda: table.row_count == 0, "the FIFO's row gone")
        good = build_hostile_store(state_dir, hostile=False)
        await wait_until(pilot, lambda: table.row_count >= len(good.good), "the good runs")
        title = str(app.main_screen.query_one("#runs-pane").border_title)
        assert title == f"Runs · {len(good.good)}"


def test_a_runs_files_replaced_by_fifos_are_named_not_read(state_dir: Path) -> None:
    corpus = build_hostile_store(state_dir)
    [run_id] = [run for run, reason in corpus.bad_manifests.items() if reason == "FIFO"]
    handle = Service().store.load(run_id)
    outputs = state_dir / "elsewhere" / run_id / "outputs"
    os.mkfifo(outputs / ATTEMPTS_NAME)
    snapshot: list[RunSnapshot] = []
    reader = threading.Thread(
        target=lambda: snapshot.append(RunReader(Service(), handle).snapshot())
    )
    reader.start()
    reader.join(DEADLINE)
    assert not reader.is_alive(), "reading the run's files did not end"
    [seen] = snapshot
    assert seen.manifest is None
    # The outputs' one reading rule refuses it (x_tui.compute.outputs), naming the file.
    assert seen.manifest_problem is not None
    assert MANIFEST_NAME in seen.manifest_problem
    assert "not a regular file" in seen.manifest_problem
    assert seen.attempts_problem is not None
    assert ATTEMPTS_NAME in seen.attempts_problem
    assert "not a regular file" in seen.attempts_problem
