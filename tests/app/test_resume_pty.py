"""Resume after SIGHUP, for real: the app on a pty is hung up on, and the next one reopens it.

``python -m x_tui`` runs on an 80x24 pty; the keys open the run and go to its Manifest tab; the
app is killed with SIGHUP (what a dropped SSH link sends). The view file it kept as it went must
name that run and tab, and a new app on a new pty must come up on the same tab by itself.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from x_tui.app.view_state import ViewState, read_view

from .test_pty_security import DEADLINE, HARMLESS_TASK, Terminal, _project, _run_to_the_end, _start


def _view_becomes(state: Path, *, run_id: str, tab: str) -> ViewState:
    give_up = time.monotonic() + DEADLINE
    while True:
        view = read_view(state)
        if view is not None and view.run_id == run_id and view.tab == tab:
            return view
        assert time.monotonic() < give_up, f"the view file never named {run_id} on {tab}: {view}"
        time.sleep(0.05)


def _close(terminal: Terminal) -> None:
    if terminal.process.poll() is None:
        terminal.process.kill()
        terminal.process.wait()
    os.close(terminal.master)


@pytest.mark.slow
def test_an_app_hung_up_on_is_reopened_on_the_same_run_and_tab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    project = _project(tmp_path / "project", "harmless", HARMLESS_TASK)
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(state))
    handle = _run_to_the_end(project, "harmless", detail="plain")

    first = _start(project, state, tmp_path)
    try:
        first.wait_for(handle.job)
        first.settle()
        first.press(b"\t")  # the runs pane
        first.settle()
        first.press(b"\r")  # open the run
        first.wait_for("Manifest")
        first.settle()
        first.press(b"]")  # the Manifest tab
        first.wait_for("tasks ran")
        _view_becomes(state, run_id=handle.run_id, tab="tab-manifest")
        os.killpg(first.process.pid, signal.SIGHUP)
        assert first.process.wait(timeout=DEADLINE) != 0  # killed, not a clean quit
    finally:
        _close(first)
    left = read_view(state)
    assert left is not None
    assert (left.screen, left.run_id, left.tab) == ("run", handle.run_id, "tab-manifest")

    second = _start(project, state, tmp_path)
    try:
        second.wait_for("tasks ran")  # the manifest, with no key pressed
        second.settle()
        view = _view_becomes(state, run_id=handle.run_id, tab="tab-manifest")
        assert view.seen_at >= left.seen_at
        second.press(b"q")
        assert second.process.wait(timeout=DEADLINE) == 0
    finally:
        _close(second)
