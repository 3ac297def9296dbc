"""Hostile run output never reaches the terminal: the real app under a real pseudo-terminal.

A job prints what a compromised or careless task could print (a window title, a clipboard write,
a hyperlink, a screen clear, 8-bit C1 controls, a 1 MB line, Textual markup), writes a file whose
name holds the same, and its handle carries it in the provider's details. ``python -m x_tui`` runs
on an 80x24 pty with ``TERM=xterm-256color``; the keys open the run and visit every tab; then every
byte the app wrote is checked, against a baseline run of a harmless job for what Textual itself
emits (it clears the screen once). The app must still be running, and quit on ``q``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.support import DEADLINE
from x_tui.compute.store import RunHandle

from .app_support import pyproject_text
from .terminal_support import Terminal, run_to_the_end, start_in_terminal

HOSTILE_TASK = r"""
import os, pathlib, sys
ESC, BEL, ST = "\x1b", "\x07", "\x1b\\"
lines = [
    "title: " + ESC + "]0;pwned-title" + BEL + " after",
    "clipboard: " + ESC + "]52;c;cm0gLXJmIH4=" + BEL + " after",
    "link: " + ESC + "]8;;http://evil.example/" + ST + "click me" + ESC + "]8;;" + ST + " after",
    "clear: " + ESC + "[2J" + ESC + "[H" + " after",
    "c1: \u009b31m csi \u009d0;c1-title\u009c after",
    "markup: [/x] and [@click=app.quit]press[/] and [link=http://evil.example/]x[/link]",
    "long: " + "A" * 1_000_000,
    "the end of the hostile output",
]
for line in lines:
    print(line, flush=True)
    print(line, file=sys.stderr, flush=True)
name = "evil" + ESC + "]52;c;cm0=" + BEL + "[@click=app.quit]" + ESC + "[2J.txt"
(pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / name).write_text("x")
"""

HARMLESS_TASK = r"""
import os, pathlib
for line in ["title: plain", "clipboard: plain", "the end of the harmless output"]:
    print(line, flush=True)
(pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / "plain.txt").write_text("x")
"""

HOSTILE_DETAIL = "\x1b]52;c;cm0=\x07[/x][@click=app.quit]\x1b[2J\u009b31m"


def _project(root: Path, job: str, script: str) -> Path:
    root.mkdir(parents=True)
    (root / "task.py").write_text(script, encoding="utf-8")
    jobs = f"""
[tool.substrax.compute.jobs.{job}]
timeout_seconds = 120
[tool.substrax.compute.jobs.{job}.commands]
speaks = ["python", "task.py"]
"""
    (root / "pyproject.toml").write_text(pyproject_text(jobs), encoding="utf-8")
    return root


def _visit_the_run(terminal: Terminal, handle: RunHandle, last_line: str) -> None:
    """Open the run from the runs pane and show every tab, as a user would."""
    terminal.wait_for(handle.job)
    terminal.settle()
    terminal.press(b"\t")  # the runs pane
    terminal.settle()
    terminal.press(b"\r")  # open the highlighted (only) run
    terminal.wait_for("Manifest")
    terminal.wait_for(last_line)
    for marker in ("tasks ran", "requested", "No metrics", "Tasks (1)", "stdout"):
        terminal.press(b"]")
        terminal.wait_for(marker)
        terminal.settle()
    terminal.press(b"o")  # the task's stderr, which says it all again
    terminal.settle()


def _session(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, *, job: str, script: str, detail: str, last: str
) -> bytes:
    state = tmp / "state"
    project = _project(tmp / "project", job, script)
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(state))
    handle = run_to_the_end(project, job, detail=detail)
    terminal = start_in_terminal(project, state, tmp)
    try:
        _visit_the_run(terminal, handle, last)
        assert terminal.process.poll() is None, "the app exited on its own"
        terminal.press(b"q")
        assert terminal.process.wait(timeout=DEADLINE) == 0
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
            terminal.process.wait()
        time.sleep(0.1)
        os.close(terminal.master)
    return terminal.seen()


@pytest.mark.slow
def test_hostile_run_output_never_reaches_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = _session(
        tmp_path / "baseline",
        monkeypatch,
        job="harmless",
        script=HARMLESS_TASK,
        detail="plain",
        last="the end of the harmless output",
    )
    hostile = _session(
        tmp_path / "hostile",
        monkeypatch,
        job="hostile",
        script=HOSTILE_TASK,
        detail=HOSTILE_DETAIL,
        last="the end of the hostile output",
    )
    assert b"pwned-title" not in baseline  # the two sessions differ only in what the run says
    for sequence in (b"\x1b]52;", b"\x1b]0;", b"\x1b]8;;http"):
        assert sequence not in hostile, sequence
    assert hostile.count(b"\x1b[2J") <= baseline.count(b"\x1b[2J")
    text = hostile.decode("utf-8")  # a raw 8-bit control is not UTF-8: this would raise
    assert not re.search("[\x80-\x9f]", text), "a C1 control reached the terminal"
    assert "[/x]" in text or "markup:" in text  # shown as text, and the app did not crash on it
