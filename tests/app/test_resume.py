"""Resume after a dropped link: the view file as a killed session left it reopens the same place.

The first session is driven with keys to a run's log (filtered, scrolled), then to another tab;
what it has written to ``view.json`` by then is what a SIGHUP would leave, and is put back after
the session's own orderly exit. While the user is away another run fails, with no watcher and no
TUI running. The second session must reopen that run, tab, filter and line, say that the other
run failed, and open it on the key the line gives it. The main screen's runs filter, pane and
highlighted run come back the same way, and a watcher's events are listed with theirs keys too.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, TabbedContent

from tests.support import asynchronous, wait_until
from x_tui.app import view_keeper
from x_tui.app.help_screen import HelpScreen
from x_tui.app.main_screen import MainScreen
from x_tui.app.run_screen import RunScreen
from x_tui.app.view_keeper import AwayItem, away_items, away_line, capture
from x_tui.app.view_state import ViewState, read_view, view_path, write_view
from x_tui.app.watch_events import EventKind, EventLog, RunEvent
from x_tui.compute.backend import RunState
from x_tui.compute.logindex_search import SearchQuery
from x_tui.widgets.log_view import LogView

from .app_support import (
    keep_final_states,
    make_app,
    pyproject_text,
    save_handle,
    submit_with_cli,
)
from .terminal_support import run_to_the_end

COUNTING_JOB = """
[tool.substrax.compute.jobs.counting]
timeout_seconds = 120
[tool.substrax.compute.jobs.counting.commands]
count = ["python", "-c", "for i in range(400): print('line', i, ('odd', 'even')[i % 2 == 0])"]
"""

FAILING_JOB = """
[tool.substrax.compute.jobs.failing]
timeout_seconds = 60
commands = { fail = ["python", "-c", "raise SystemExit(3)"] }
"""


@pytest.mark.slow
@asynchronous
async def test_a_new_session_reopens_the_run_tab_filter_and_line_and_says_what_changed(
    state_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "sample"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        pyproject_text(COUNTING_JOB + FAILING_JOB), encoding="utf-8"
    )
    run_id = submit_with_cli(project, "counting")

    app = make_app(project)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(
            pilot, lambda: app.monitor.state_of(run_id) is RunState.SUCCEEDED, "the run to end"
        )
        [handle] = app.monitor.stored.handles
        await app.push_screen(RunScreen(handle))
        log = app.screen.query_one("#combined-log", LogView)
        await wait_until(pilot, lambda: log.index is not None and log.index.line_count > 300, "log")
        await pilot.press("ampersand", *"even", "enter")
        await wait_until(pilot, lambda: not log._finder.filter.running, "the filter")
        await pilot.press("home", *(["down"] * 7))
        place = log.place()
        assert place.top_line is not None
        assert place.top_line > 0
        assert place.filter == SearchQuery(text="even")
        await pilot.press("right_square_bracket")
        tabs = app.screen.query_one("#run-tabs", TabbedContent)
        assert tabs.active == "tab-manifest"

        def kept() -> ViewState | None:
            return read_view(state_dir)

        await wait_until(
            pilot,
            lambda: (view := kept()) is not None and view.tab == "tab-manifest",
            "the view to be kept",
        )
        # What a SIGHUP leaves: the file as it was, before any orderly exit.
        left = tmp_path / "left-by-sighup.json"
        shutil.copy(view_path(state_dir), left)
    shutil.copy(left, view_path(state_dir))
    kept_view = read_view(state_dir)
    assert kept_view is not None
    assert (kept_view.screen, kept_view.run_id) == ("run", run_id)
    assert kept_view.log_top == place.top_line

    # While the user is away (no TUI, no watcher), another run fails.
    failed = run_to_the_end(project, "failing", detail="fails while away")

    again = make_app(project)
    async with again.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(again.screen, RunScreen), "the run screen")
        screen = again.screen
        assert isinstance(screen, RunScreen)
        assert screen.handle.run_id == run_id
        tabs = screen.query_one("#run-tabs", TabbedContent)
        await wait_until(pilot, lambda: tabs.active == "tab-manifest", "the same tab")
        # Back to the log: it shows the same filter, from the same line.
        await pilot.press("left_square_bracket")
        log = screen.query_one("#combined-log", LogView)
        await wait_until(
            pilot,
            lambda: (
                log.place().filter == SearchQuery(text="even")
                and log._pending_place is None
                and log.lines_view.top_line == place.top_line
            ),
            "the same filter and line",
        )
        keeper = again.view_keeper
        assert keeper is not None
        await wait_until(pilot, lambda: keeper.away_line is not None, "the away line")
        assert keeper.away_line == f"1 {failed.run_id} failed (press 1 to open)"
        # Its key opens the run that failed.
        await pilot.press("1")
        await wait_until(
            pilot,
            lambda: (
                isinstance(again.screen, RunScreen) and again.screen.handle.run_id == failed.run_id
            ),
            "the failed run's screen",
        )


FIRST, SECOND, OTHER = (
    "quick-20261201T000000Z-aaaaaa",
    "quick-20261201T010000Z-bbbbbb",
    "second-20261201T020000Z-cccccc",
)


def _three_ended_runs(state_dir: Path, project: Path) -> None:
    """Two runs of ``quick`` and one of ``second``, all seen to end by an earlier session."""
    submitted = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    for run_id in (FIRST, SECOND, OTHER):
        save_handle(
            state_dir,
            run_id=run_id,
            job=run_id.split("-")[0],
            submitted_at=submitted,
            project=str(project),
        )
    ended = {run_id: (RunState.SUCCEEDED, 100.0) for run_id in (FIRST, SECOND, OTHER)}
    keep_final_states(state_dir, ended)


@asynchronous
async def test_the_main_screens_filter_pane_and_run_come_back_and_watcher_events_are_keys(
    state_dir: Path, project: Path
) -> None:
    first, second, other = FIRST, SECOND, OTHER
    _three_ended_runs(state_dir, project)
    since = time.time() - 100
    write_view(
        state_dir,
        ViewState(
            screen="main", pane="runs", selected_run=first, runs_filter="quick", seen_at=since
        ),
    )
    events = EventLog(state_dir)
    for at, run_id, kind in (
        (since - 5, first, EventKind.FAILED),  # before the user left: not listed
        (since + 5, first, EventKind.RUNNING),  # not an event worth a line
        (since + 10, second, EventKind.FAILED),
        (since + 20, other, EventKind.OVER_BUDGET),
    ):
        events.append(
            RunEvent(event_id=f"{run_id}:{kind.value}", at=at, run_id=run_id, job="j", kind=kind)
        )

    app = make_app(project, poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        keeper = app.view_keeper
        assert keeper is not None
        main = app.main_screen
        await wait_until(pilot, lambda: keeper.away_line is not None, "the away line")
        assert keeper.away_line == (
            f"1 {other} over budget · 2 {second} failed (press 1-2 to open)"
        )
        await wait_until(pilot, lambda: not keeper.restoring, "the main screen's place")
        field = main.query_one("#runs-filter", Input)
        assert field.display
        assert field.value == "quick"
        assert main.runs.filter_text == "quick"
        assert main.runs.shown_count == 2  # the filter hides the other job's run
        assert main.runs.has_focus
        selected = main.selected_run()
        assert selected is not None
        assert selected.run_id == first
        # The run the filter hides is still a key away; so is the other one.
        await pilot.press("1")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "a run screen")
        assert isinstance(app.screen, RunScreen)
        assert app.screen.handle.run_id == other
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        await pilot.press("2")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "a run screen")
        assert isinstance(app.screen, RunScreen)
        assert app.screen.handle.run_id == second
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        # Once the line has gone, the numbers are keys no more.
        keeper._away_until = 0.0
        await pilot.press("1")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        # A modal screen in front (the help) changes nothing of the place kept.
        before = capture(app, now=0.0)
        assert before is not None
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        assert capture(app, now=0.0) == before
        await pilot.press("escape")
        # The place is kept again from now on, as it was reopened.
        await wait_until(
            pilot,
            lambda: (view := read_view(state_dir)) is not None and view.seen_at > since,
            "the view written again",
        )
    kept = read_view(state_dir)
    assert kept is not None
    assert (kept.screen, kept.pane, kept.selected_run, kept.runs_filter) == (
        "main",
        "runs",
        first,
        "quick",
    )


@asynchronous
async def test_the_away_line_is_worked_out_off_the_event_loop(
    state_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It copies the state of every run the store holds: some 0.2 s of keys and frames held
    # with 100,000 runs, when it ran on the event loop.
    _three_ended_runs(state_dir, project)
    since = time.time() - 100
    write_view(state_dir, ViewState(screen="main", pane="runs", seen_at=since))
    EventLog(state_dir).append(
        RunEvent(
            event_id=f"{SECOND}:failed",
            at=since + 10,
            run_id=SECOND,
            job="j",
            kind=EventKind.FAILED,
        )
    )
    on_the_loop: list[bool] = []
    real_away_items = view_keeper.away_items

    def noted(*args: Any, **kwargs: Any) -> list[AwayItem]:
        on_the_loop.append(threading.current_thread() is threading.main_thread())
        return real_away_items(*args, **kwargs)

    monkeypatch.setattr(view_keeper, "away_items", noted)
    app = make_app(project, poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        keeper = app.view_keeper
        assert keeper is not None
        await wait_until(pilot, lambda: keeper.away_line is not None, "the away line")
        assert keeper.away_line == f"1 {SECOND} failed (press 1 to open)"
    assert on_the_loop == [False]


def test_the_away_items_are_newest_first_one_a_run_from_events_kept_ends_and_finds(
    state_dir: Path,
) -> None:
    keep_final_states(
        state_dir,
        {
            "a-20261201T000000Z-aaaaaa": (RunState.SUCCEEDED, 100.0),
            "b-20261201T000000Z-bbbbbb": (RunState.FAILED, 300.0),
        },
    )
    EventLog(state_dir).append(
        RunEvent(
            event_id="c:stalled",
            at=350.0,
            run_id="c-20261201T000000Z-cccccc",
            job="c",
            kind=EventKind.STALLED,
        )
    )
    EventLog(state_dir).append(
        RunEvent(
            event_id="forged",
            at=360.0,
            run_id="../../etc/passwd\x1b]52;c;x\x07",
            job="c",
            kind=EventKind.FAILED,
        )
    )
    found = [AwayItem("c-20261201T000000Z-cccccc", "failed", 400.0)]
    items = away_items(state_dir, 200.0, found=found)
    assert [(item.run_id[0], item.what) for item in items] == [("c", "failed"), ("b", "failed")]
    assert away_items(state_dir, 500.0) == []
    assert away_line([]) is None
    many = [AwayItem(f"r{n}", "succeeded", float(n)) for n in range(8)]
    line = away_line(many)
    assert line is not None
    assert line.startswith("1 r0 succeeded · 2 r1 succeeded")
    assert line.endswith("6 r5 succeeded and 2 earlier (press 1-6 to open)")
    # A run id is untrusted: the line holds no control sequence.
    assert away_line([AwayItem("evil\x1b[31m\nrun", "failed", 1.0)]) == (
        "1 evil run failed (press 1 to open)"
    )


def test_a_damaged_view_file_reopens_the_main_screen(state_dir: Path) -> None:
    write_view(
        state_dir,
        ViewState(screen="run", run_id="x", log_top=3, selected_run="y", seen_at=5.0),
    )
    path = view_path(state_dir)
    data = json.loads(path.read_text())
    data.update(
        screen="evil",
        log_top="3; rm",
        log_filter={"text": 7},
        pane=["runs"],
        runs_filter="z" * 5000,
        seen_at=float("nan"),
    )
    path.write_text(json.dumps(data))
    view = read_view(state_dir)
    assert view == ViewState(screen="main", selected_run="y", seen_at=0.0)
    path.write_bytes(b"\xff" * 100)
    assert read_view(state_dir) is None
    path.write_bytes(b"[" * 100_000)
    assert read_view(state_dir) is None
