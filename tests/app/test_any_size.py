"""The app keeps running whatever the terminal's size, whatever date a record holds, and whatever
fails inside it: a notice below the size it can draw in, a panel for a failure."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app import run_header
from x_tui.app.fallback_screens import MIN_HEIGHT, MIN_WIDTH, FailureScreen, TooSmallScreen
from x_tui.app.main_screen import MainScreen
from x_tui.app.run_screen import RunScreen
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.manifest import TaskStatus
from x_tui.compute.worker.records import dumps_pretty

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run

SIZES = [(1, 1), (5, 3), (14, 10), (20, 5)]


def _run(state: Path, *, submitted_at: dt.datetime | None = None) -> RunHandle:
    handle = finished_run(
        state,
        tasks=[("fit", TaskStatus.SUCCEEDED, 0, 3.0, ("model.bin",))],
        worker_log="[fit] epoch 1\n[fit] " + "x" * 500 + "\n",
    )
    if submitted_at is None:
        return handle
    handle = dataclasses.replace(handle, submitted_at=submitted_at)
    (state / "compute" / "runs" / f"{handle.run_id}.json").write_text(
        dumps_pretty(handle), encoding="utf-8"
    )
    return handle


def _small(size: tuple[int, int]) -> bool:
    return size[0] < MIN_WIDTH or size[1] < MIN_HEIGHT


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@asynchronous
async def test_the_main_screen_at_any_size_keeps_running(
    state_dir: Path, size: tuple[int, int]
) -> None:
    _run(state_dir)
    app = make_app(None, poll=False)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.main_screen.is_mounted, "the main screen")
        await pilot.pause(0.3)
        for key in ("down", "question_mark", "escape", "ctrl+p", "escape"):
            await pilot.press(key)
        await pilot.pause(0.2)

        assert app.is_running
        if _small(size):
            assert isinstance(app.screen, TooSmallScreen)
            assert screen_text(app).strip(), "the notice shows what fits of itself"
        else:
            assert isinstance(app.screen, MainScreen)
            assert "Runs" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await wait_until(
            pilot, lambda: "train-20260919T120000Z" in screen_text(app), "the runs table again"
        )
        assert isinstance(app.screen, MainScreen)
        await pilot.press("q")
    assert app.return_code == 0


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@asynchronous
async def test_the_run_screen_survives_shrinking_to_any_size_and_comes_back(
    state_dir: Path, size: tuple[int, int]
) -> None:
    handle = _run(state_dir)
    app = make_app(None, poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")

        await pilot.resize_terminal(*size)
        await pilot.pause(0.2)
        for key in ("right_square_bracket", "right_square_bracket", "question_mark", "escape"):
            await pilot.press(key)
        await pilot.pause(0.2)
        assert app.is_running
        assert isinstance(app.screen, TooSmallScreen if _small(size) else RunScreen)
        if size == (14, 10):
            words = " ".join(screen_text(app).split())
            assert "14x10 is too small: x-tui needs 20x5. Enlarge the terminal," in words
        elif _small(size):
            assert screen_text(app).strip().startswith(f"{size[0]}x{size[1]}"[: size[0]])

        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: app.screen is screen, "the run screen again")
        await wait_until(pilot, lambda: handle.run_id in screen_text(app), "the run's header")
        await pilot.press("q")
    assert app.return_code == 0


@asynchronous
async def test_a_screen_opened_while_the_terminal_is_too_small_stays_under_the_notice(
    state_dir: Path,
) -> None:
    handle = _run(state_dir)
    app = make_app(None, poll=False)
    async with app.run_test(size=(10, 4)) as pilot:
        await pilot.pause(0.2)
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await wait_until(
            pilot, lambda: isinstance(app.screen, TooSmallScreen), "the notice over it"
        )
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        assert not any(isinstance(screen, TooSmallScreen) for screen in app.screen_stack)


@pytest.mark.parametrize(
    ("submitted_at", "shown"),
    [
        pytest.param(
            dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC),
            "submitted 9999-12-31 23:59:59Z",
            id="year-9999",
        ),
        pytest.param(
            dt.datetime(9999, 12, 31, 23, 0, tzinfo=dt.timezone(-dt.timedelta(hours=5))),
            "submitted 9999-12-31 23:00:00-0500",
            id="past-the-last-utc-moment",
        ),
        pytest.param(
            dt.datetime(1, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=5))),
            "00:00+0500",
            id="before-the-first-utc-moment",
        ),
        pytest.param(
            dt.datetime(1969, 7, 20, 20, 17, tzinfo=dt.UTC),
            "submitted 1969-07-20 20:17:00Z",
            id="before-1970",
        ),
    ],
)
@asynchronous
async def test_a_run_with_any_date_is_listed_and_opens(
    state_dir: Path, submitted_at: dt.datetime, shown: str
) -> None:
    handle = _run(state_dir, submitted_at=submitted_at)
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: handle.run_id in screen_text(app), "the run's row")
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await wait_until(pilot, lambda: shown in screen_text(app), "the submission time")
        assert isinstance(app.screen, RunScreen)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        await pilot.press("q")
    assert app.return_code == 0


@asynchronous
async def test_a_failure_inside_a_screen_is_shown_in_a_panel_and_the_app_keeps_running(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = _run(state_dir)
    calls: list[int] = []
    real = run_header.header_renderable

    def fails_once(*args: object, **kwargs: object) -> object:
        # The header is drawn as the screen is built, then as it is mounted: the second fails.
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("the header cannot show \x1b]0;this\x07 value")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("x_tui.app.run_screen.header_renderable", fails_once)
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(RunScreen(handle, clock=lambda: NOW))
        # Not wait_until: Pilot would wait for the failed screen to handle its messages, which
        # it never does again (Textual stops a widget that raised).
        for _ in range(600):
            if isinstance(app.screen, FailureScreen):
                break
            await asyncio.sleep(0.05)
        assert isinstance(app.screen, FailureScreen)
        await pilot.pause()
        text = screen_text(app)
        assert "Something in x-tui failed" in text
        assert "ValueError: the header cannot show  value" in text
        assert "run_screen.py" in text
        assert "The app keeps running" in text
        assert [type(screen) for screen in app.screen_stack] == [MainScreen, FailureScreen]

        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run, again")
        await wait_until(pilot, lambda: "epoch 1" in screen_text(app), "its log")
        await pilot.press("q")
    assert app.return_code == 0
