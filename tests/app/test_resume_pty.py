"""Resume after SIGHUP, for real: the app on a pty is hung up on, and the next one reopens it.

``python -m x_tui`` runs on an 80x24 pty; the keys open a run, filter its log and scroll it, then
go to its Manifest tab; the app is killed with SIGHUP (what a dropped SSH link sends). The view
file it kept as it went must name that run, tab, filter and line. While the user is away another
run fails, with no watcher and no TUI running. A new app on a new pty must come up on the same
tab by itself, keep the same filter and line, say on screen that the other run failed, and open
that run on the key the line gives it.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import DEADLINE
from x_tui.app.view_state import ViewState, read_view
from x_tui.compute.logindex_search import SearchQuery
from x_tui.compute.store import RunHandle

from .app_support import pyproject_text
from .terminal_support import Terminal, run_to_the_end, start_in_terminal

JOBS = """
[tool.substrax.compute.jobs.counting]
timeout_seconds = 120
[tool.substrax.compute.jobs.counting.commands]
count = ["python", "-c", "for i in range(400): print('line', i, ('odd', 'even')[i % 2 == 0])"]

[tool.substrax.compute.jobs.failing]
timeout_seconds = 60
commands = { fail = ["python", "-c", "raise SystemExit(3)"] }
"""

CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\r\n]")
"""A cursor move or style, or a line end: what lies between the pieces of a drawn line."""

EVEN = SearchQuery(text="even")

HOME = b"\x1b[H"
DOWN = b"\x1b[B"


def _view_becomes(state: Path, wanted: Callable[[ViewState], bool], what: str) -> ViewState:
    give_up = time.monotonic() + DEADLINE
    while True:
        view = read_view(state)
        if view is not None and wanted(view):
            return view
        assert time.monotonic() < give_up, f"the view file never showed {what}: {view}"
        time.sleep(0.05)


def _wait_for_drawn(terminal: Terminal, text: str) -> None:
    """Wait until ``text`` has been drawn, maybe in pieces with cursor moves and styles between
    (as Textual draws a toast over other widgets)."""
    give_up = time.monotonic() + DEADLINE
    while text not in CONTROL.sub("", terminal.seen().decode("utf-8", "replace")):
        assert terminal.process.poll() is None, f"the app exited while waiting for {text!r}"
        assert time.monotonic() < give_up, f"gave up waiting for {text!r} on the terminal"
        time.sleep(0.05)


def _close(terminal: Terminal) -> None:
    if terminal.process.poll() is None:
        terminal.process.kill()
        terminal.process.wait()
    os.close(terminal.master)


def _filter_scroll_and_hang_up(first: Terminal, state: Path, handle: RunHandle) -> ViewState:
    """Open the run, filter its log, scroll it, go to the Manifest tab, then SIGHUP the app.

    Returns:
        The view kept once the log was filtered and scrolled.
    """
    try:
        first.wait_for(handle.job)
        first.settle()
        first.press(b"\t")  # the runs pane
        first.settle()
        first.press(b"\r")  # open the run
        first.wait_for("Manifest")
        _wait_for_drawn(first, "line 399 odd")  # the log, read to its end
        first.settle()
        first.press(b"&")  # filter the log
        _wait_for_drawn(first, "how lines matching")  # the placeholder, after the cursor
        first.press(b"even\r")
        first.settle()
        first.press(HOME)
        first.settle()
        for _ in range(7):
            first.press(DOWN)
        first.settle()
        scrolled = _view_becomes(
            state,
            lambda view: view.log_filter == EVEN and (view.log_top or 0) > 0,
            "the filtered log scrolled down",
        )
        first.press(b"]")  # the Manifest tab
        first.wait_for("tasks ran")
        _view_becomes(state, lambda view: view.tab == "tab-manifest", "the Manifest tab")
        os.killpg(first.process.pid, signal.SIGHUP)
        assert first.process.wait(timeout=DEADLINE) != 0  # killed, not a clean quit
    finally:
        _close(first)
    return scrolled


@pytest.mark.slow
def test_an_app_hung_up_on_is_reopened_on_the_same_run_tab_filter_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject_text(JOBS), encoding="utf-8")
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(state))
    handle = run_to_the_end(project, "counting", detail="plain")

    scrolled = _filter_scroll_and_hang_up(
        start_in_terminal(project, state, tmp_path), state, handle
    )
    left = read_view(state)
    assert left is not None
    assert (left.screen, left.run_id, left.tab) == ("run", handle.run_id, "tab-manifest")
    assert (left.log_filter, left.log_top) == (EVEN, scrolled.log_top)

    # While the user is away, with no TUI and no watcher, another run fails.
    failed = run_to_the_end(project, "failing", detail="plain")

    second = start_in_terminal(project, state, tmp_path)
    try:
        # The away line, in a toast over the run screen reopened with no key pressed.
        second.wait_for("While you were away")
        _wait_for_drawn(second, failed.run_id)
        second.settle()
        view = _view_becomes(
            state, lambda view: view.seen_at > left.seen_at, "the view written again"
        )
        assert (view.screen, view.run_id, view.tab) == ("run", handle.run_id, "tab-manifest")
        assert (view.log_filter, view.log_top) == (EVEN, left.log_top)
        second.press(b"1")  # the away line's first run
        _view_becomes(state, lambda view: view.run_id == failed.run_id, "the failed run opened")
        second.press(b"q")
        assert second.process.wait(timeout=DEADLINE) == 0
    finally:
        _close(second)
