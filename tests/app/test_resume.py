"""Resume after a dropped link: the view file as a killed session left it reopens the same place.

The first session is driven with keys to a run's log (filtered, scrolled), then to another tab;
what it has written to ``view.json`` by then is what a SIGHUP would leave, and is put back after
the session's own orderly exit. The second session must reopen that run, tab, filter and line,
and say what happened while the user was away.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from textual.widgets import TabbedContent

from x_tui.app.run_screen import RunScreen
from x_tui.app.view_keeper import ViewKeeper, away_line
from x_tui.app.view_state import ViewState, read_view, view_path, write_view
from x_tui.app.watch_events import EventKind, EventLog, RunEvent
from x_tui.compute.backend import RunState
from x_tui.compute.logindex_search import SearchQuery
from x_tui.widgets.log_view import LogView

from .conftest import (
    asynchronous,
    keep_final_states,
    make_app,
    pyproject_text,
    submit_with_cli,
    wait_until,
)

COUNTING_JOB = """
[tool.substrax.compute.jobs.counting]
timeout_seconds = 120
[tool.substrax.compute.jobs.counting.commands]
count = ["python", "-c", "for i in range(400): print('line', i, ('odd', 'even')[i % 2 == 0])"]
"""


@asynchronous
async def test_a_new_session_reopens_the_run_tab_filter_and_line_and_says_what_changed(
    state_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "sample"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject_text(COUNTING_JOB), encoding="utf-8")
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
    assert kept_view.run_id == run_id
    assert kept_view.log_top == place.top_line

    # While the user was away, a watcher recorded that another run failed.
    EventLog(state_dir).append(
        RunEvent(
            event_id="other:failed",
            at=time.time(),
            run_id="train-20261201-000000-abcdef",
            job="train",
            kind=EventKind.FAILED,
        )
    )

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
        assert isinstance(keeper, ViewKeeper)
        assert keeper.away_line == "train-20261201-000000-abcdef failed"


def test_with_no_watcher_the_away_line_comes_from_the_kept_final_states(
    state_dir: Path,
) -> None:
    keep_final_states(
        state_dir,
        {
            "a-20261201T000000Z-aaaaaa": (RunState.SUCCEEDED, 100.0),
            "b-20261201T000000Z-bbbbbb": (RunState.FAILED, 300.0),
        },
    )
    assert away_line(state_dir, 200.0) == "b-20261201T000000Z-bbbbbb failed"
    assert away_line(state_dir, 400.0) is None


def test_a_damaged_view_file_reopens_the_main_screen(state_dir: Path) -> None:
    write_view(state_dir, ViewState(screen="run", run_id="x", log_top=3, seen_at=5.0))
    path = view_path(state_dir)
    data = json.loads(path.read_text())
    data.update(screen="evil", log_top="3; rm", log_filter={"text": 7})
    path.write_text(json.dumps(data))
    view = read_view(state_dir)
    assert view == ViewState(screen="main", run_id="x", seen_at=5.0)
    path.write_bytes(b"\xff" * 100)
    assert read_view(state_dir) is None
