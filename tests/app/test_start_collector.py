"""Python's cycle collector at start-up: held until the whole store is in the runs table
(``run_app`` holds it), then on again with what start-up and the listing made frozen; an app
started by anything else leaves the process's collector as it found it."""

from __future__ import annotations

import datetime as dt
import gc
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app import (
    GARBAGE_THRESHOLDS,
    collect_garbage_from_now_on,
    hold_garbage_until_listed,
)
from x_tui.app.app import XTuiApp
from x_tui.app.service import Service
from x_tui.compute.store import RunStore
from x_tui.compute.store_index import HEAD_ROWS

from .app_support import save_handle, whole_listing_held


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """The process's collector as it was, whatever the test did to it."""
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    try:
        yield
    finally:
        collect_garbage_from_now_on()  # a hold the test left is ended
        if gc.get_freeze_count() > frozen:
            gc.unfreeze()  # (back into the oldest generation, to be collected as before)
        gc.set_threshold(*thresholds)
        gc.enable()


def _store_past_its_head(state_dir: Path) -> int:
    """More runs than the store's head holds, listed once (index and head made); their count."""
    moment = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)
    count = HEAD_ROWS + 50
    for index in range(count):
        save_handle(
            state_dir,
            run_id=f"train-{moment + dt.timedelta(minutes=index):%Y%m%dT%H%M%SZ}-{index:06x}",
            job="train",
            submitted_at=moment + dt.timedelta(minutes=index),
        )
    store = RunStore(state_dir / "compute" / "runs")
    past = time.time() - 60
    os.utime(store.root, (past, past))  # written a quiet minute ago
    store.read_all()
    return count


@asynchronous
async def test_the_collector_is_held_until_the_store_is_listed_then_skips_what_was_made(
    state_dir: Path, collector_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from x_tui.app import app as app_module

    monkeypatch.setattr(app_module, "GARBAGE_HOLD_SECONDS", 3600.0)  # (the listing lets it go)
    count = _store_past_its_head(state_dir)
    hold_garbage_until_listed()
    assert not gc.isenabled()
    assert gc.get_threshold() == GARBAGE_THRESHOLDS
    frozen = gc.get_freeze_count()
    seen_before_the_frame: list[bool] = []

    class Watched(XTuiApp):
        def on_mount(self) -> None:
            seen_before_the_frame.append(gc.isenabled())

    service = Service()
    app = Watched(None, service=service, poll=False)
    with whole_listing_held(service) as release:
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.main_screen.runs
            await wait_until(pilot, lambda: table.shown_count == HEAD_ROWS, "the newest runs")
            await pilot.pause(0.2)
            assert seen_before_the_frame == [False]
            assert not gc.isenabled()  # the rest of the store is still to be read
            release.set()
            await wait_until(pilot, gc.isenabled, "the collector let go")
            assert table.shown_count == count
            # The modules, styles and widgets start-up made are never scanned again, nor are
            # the store's handles and the table's rows.
            assert gc.get_freeze_count() > frozen + 10_000
            assert gc.get_threshold() == GARBAGE_THRESHOLDS


@asynchronous
async def test_a_store_never_listed_whole_still_lets_the_collector_go(
    state_dir: Path, collector_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from x_tui.app import app as app_module

    _store_past_its_head(state_dir)
    monkeypatch.setattr(app_module, "GARBAGE_HOLD_SECONDS", 0.3)
    hold_garbage_until_listed()
    service = Service()
    app = XTuiApp(None, service=service, poll=False)
    with whole_listing_held(service):
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, gc.isenabled, "the collector let go")
            assert app.main_screen.runs.shown_count == HEAD_ROWS  # still not listed whole


@asynchronous
async def test_an_app_not_started_by_run_app_leaves_the_collector_alone(
    state_dir: Path, collector_restored: None
) -> None:
    gc.disable()  # as a program that runs the app inside it may have it
    frozen = gc.get_freeze_count()
    app = XTuiApp(None, service=Service(), poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not gc.isenabled()
        assert gc.get_freeze_count() == frozen


def test_an_app_that_ends_before_its_first_frame_leaves_the_collector_running(
    state_dir: Path, collector_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_app`` holds the collector; an app that fails before it draws never lets it go, so
    ``run_app`` does, before it waits for the submits still going (which may take minutes)."""
    from x_tui import app as app_package

    seen_while_waiting: list[bool] = []
    monkeypatch.setattr(XTuiApp, "run", lambda self: 1)  # ended at once, no frame drawn
    monkeypatch.setattr(
        app_package, "wait_for_submits", lambda service: seen_while_waiting.append(gc.isenabled())
    )

    assert app_package.run_app(None) == 1
    assert seen_while_waiting == [True]
