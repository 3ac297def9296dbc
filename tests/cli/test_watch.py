"""``x-tui watch``: a detached watcher outlives its shell, announces each event once, one at a time.

Real processes throughout: the watcher is started by a shell that is then killed, the runs are
real local runs, and the hook is a real program that appends what it was given to a file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

HOOK = """\
import json, os, sys
keys = ("X_TUI_RUN_ID", "X_TUI_JOB", "X_TUI_STATE", "X_TUI_REASON", "X_TUI_COST")
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({key: os.environ.get(key) for key in keys}) + "\\n")
"""


def _configure(cli: Cli, tmp_path: Path, *, events: str) -> Path:
    calls = tmp_path / "calls.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    config = tmp_path / "config.toml"
    command = json.dumps([sys.executable, str(hook), str(calls)])
    config.write_text(
        f"[notify]\nevents = {events}\nsucceeded_after_minutes = 0\ncommand = {command}\n"
    )
    cli.env["X_TUI_CONFIG"] = str(config)
    return calls


def _calls(path: Path, count: int) -> list[dict[str, str]]:
    """The hook's calls once there are ``count`` of them (waiting a bounded while)."""
    for _ in range(1200):
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= count:
                return [json.loads(line) for line in lines]
        time.sleep(0.1)
    raise AssertionError(f"the hook was not called {count} times: {path.read_text()!r}")


def _log_with(path: Path, wanted: str) -> str:
    """The watcher's log once it holds ``wanted`` (waiting a bounded while)."""
    text = ""
    for _ in range(600):
        text = path.read_text() if path.exists() else ""
        if wanted in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{wanted!r} never reached the watcher's log: {text!r}")


@pytest.mark.slow
def test_a_detached_watcher_outlives_its_shell_and_runs_the_hook_once_per_event(
    cli: Cli, tmp_path: Path
) -> None:
    calls = _configure(cli, tmp_path, events='["failed", "succeeded"]')
    shell = subprocess.Popen(
        ["bash", "-c", f"{sys.executable} -m x_tui watch --detach; exec sleep 600"],
        cwd=cli.project,
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert shell.stdout is not None
        started = shell.stdout.readline()
        assert started.startswith("watching in the background (pid "), started
        pid = int(started.split("pid ")[1].split(")")[0])
        # The shell (and its whole process group) goes, as with a lost SSH link.
        os.killpg(shell.pid, signal.SIGHUP)
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait(timeout=60)
        status = cli.process("watch", "--status")
        assert status.returncode == 0, status
        assert f"pid {pid}" in status.stdout

        failing = cli.submitted_id(cli.process("run", "failing", "--detach").stdout)
        succeeding = cli.submitted_id(cli.process("run", "hello", "--detach").stdout)
        seen = _calls(calls, 2)
        by_run = {call["X_TUI_RUN_ID"]: call for call in seen}
        assert by_run[failing]["X_TUI_STATE"] == "failed"
        assert by_run[failing]["X_TUI_JOB"] == "failing"
        assert by_run[failing]["X_TUI_REASON"] == "task boom failed with exit status 3"
        assert by_run[succeeding]["X_TUI_STATE"] == "succeeded"
        assert by_run[succeeding]["X_TUI_JOB"] == "hello"
        assert all(call["X_TUI_COST"] == "" for call in seen)  # the local backend costs nothing

        wanted = (
            f"notified: x-tui: run {failing} (failing) failed: task boom failed with exit status 3"
        )
        log = _log_with(cli.state / "x-tui" / "watch.log", wanted)
        assert f"watching {cli.state} (pid {pid})" in log

        second = cli.process("watch")
        assert second.returncode == 2
        assert f"pid {pid}" in second.stderr

        stopped = cli.process("watch", "--stop")
        assert stopped.returncode == 0, stopped
        assert cli.process("watch", "--status").returncode == 1

        # A new watcher announces the next event, and none of the first two again.
        assert cli.process("watch", "--detach").returncode == 0
        third = cli.submitted_id(cli.process("run", "failing", "--detach").stdout)
        again = _calls(calls, 3)
        assert [call["X_TUI_RUN_ID"] for call in again].count(third) == 1
        assert sorted(call["X_TUI_RUN_ID"] for call in again) == sorted(
            [failing, succeeding, third]
        )
        events = [
            json.loads(line)
            for line in (cli.state / "x-tui" / "events.jsonl").read_text().splitlines()
        ]
        finals = [
            (event["run_id"], event["kind"])
            for event in events
            if event["kind"] in ("failed", "succeeded")
        ]
        assert sorted(finals) == sorted(
            [(failing, "failed"), (succeeding, "succeeded"), (third, "failed")]
        )
    finally:
        cli.process("watch", "--stop")
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()


def test_status_and_stop_without_a_watcher_exit_1(cli: Cli) -> None:
    assert cli.process("watch", "--status").returncode == 1
    stopped = cli.process("watch", "--stop")
    assert stopped.returncode == 1
    assert "no watcher runs" in stopped.stdout
