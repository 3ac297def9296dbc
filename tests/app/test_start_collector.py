"""Python's cycle collector at start-up: held until the app's first frame (``run_app`` holds it),
then on again with what start-up made frozen; an app started by anything else leaves the
process's collector as it found it."""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app import (
    GARBAGE_THRESHOLDS,
    collect_garbage_from_now_on,
    hold_garbage_until_first_frame,
)
from x_tui.app.app import XTuiApp
from x_tui.app.service import Service

from .app_support import save_handle


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


@asynchronous
async def test_the_collector_is_held_until_the_first_frame_then_skips_what_start_up_made(
    state_dir: Path, collector_restored: None
) -> None:
    moment = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)
    save_handle(state_dir, run_id="train-20260919T120000Z-000001", job="train", submitted_at=moment)
    hold_garbage_until_first_frame()
    assert not gc.isenabled()
    assert gc.get_threshold() == GARBAGE_THRESHOLDS
    frozen = gc.get_freeze_count()
    seen_before_the_frame: list[bool] = []

    class Watched(XTuiApp):
        def on_mount(self) -> None:
            seen_before_the_frame.append(gc.isenabled())

    app = Watched(None, service=Service(), poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.main_screen.runs.row_count == 1, "the run")
        assert seen_before_the_frame == [False]
        assert gc.isenabled()
        # The modules, styles and widgets start-up made are never scanned again.
        assert gc.get_freeze_count() > frozen + 10_000
        assert gc.get_threshold() == GARBAGE_THRESHOLDS


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
