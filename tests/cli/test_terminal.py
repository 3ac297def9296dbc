"""What reaches a terminal: log lines without their control sequences; piped, lines as they are."""

from __future__ import annotations

import errno
import json
import os
import pty
import re
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

# Retitles the window, clears the screen, then prints "visible red" with "red" in red.
PRINTS_ESCAPES = (
    "E = chr(27); print(E + ']0;owned' + chr(7) + E + '[2Jvisible' + E + '[31m red' + E + '[0m')"
)
ESCAPES_JOB = f"""
[tool.substrax.compute.jobs.escapes]
timeout_seconds = 120

[tool.substrax.compute.jobs.escapes.commands]
esc = ["python", "-c", {json.dumps(PRINTS_ESCAPES)}]
"""


def _on_a_terminal(cli: Cli, *args: str) -> str:
    """Run ``x-tui ARGS`` with its stdout on a pseudo-terminal and return what it wrote there."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "x_tui", *args],
        cwd=cli.project,
        env=cli.env,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError as error:  # EIO: the other end closed
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=600) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _run_escapes(cli: Cli) -> str:
    cli.write_pyproject(top='backend = "local"', jobs=ESCAPES_JOB)
    result = cli("run", "escapes")
    assert result.returncode == 0, result.stderr
    return cli.submitted_id(result.stdout)


def test_log_lines_reach_a_terminal_without_their_control_sequences(cli: Cli) -> None:
    run_id = _run_escapes(cli)

    shown = _on_a_terminal(cli, "logs", run_id)

    assert shown == "[esc] visible red\n"


def test_piped_log_lines_are_written_as_they_are(cli: Cli) -> None:
    run_id = _run_escapes(cli)

    result = cli("logs", run_id)

    assert result.stdout == "[esc] \x1b]0;owned\x07\x1b[2Jvisible\x1b[31m red\x1b[0m\n"


def test_status_on_a_terminal_adds_how_long_ago_each_run_was_submitted(cli: Cli) -> None:
    run_id = _run_escapes(cli)

    shown = _on_a_terminal(cli, "status")

    assert re.fullmatch(rf"{run_id}  local  escapes  succeeded  \d+[smhd]\n", shown)
