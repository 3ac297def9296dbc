"""No escape sequence from a record, a name, a configuration value or a log reaches a terminal.

A real run of a job whose task prints what a hostile or careless task could print (a window
title, a clipboard write, a hyperlink, a screen clear, 8-bit C1 controls, bidi overrides and
isolates, zero-width characters, a ``\\r`` that would write another task's prefix over its own),
a run handle rewritten with the same in its job name, a file in the run store with the same in its
name, and a configuration whose values and job names hold the same: ``x-tui status``, ``logs``,
``jobs`` and ``plan`` run with stdout and stderr on a real pseudo-terminal, and every byte they
wrote there is checked. What they show of the hostile text is escaped (``\\x1b``, ``\\u202e``)
or, in log lines, removed, and each log line keeps its ``[task]`` prefix in front.
"""

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

ESC, BEL, ST = "\x1b", "\x07", "\x1b\\"
HOSTILE = (
    f"{ESC}]0;pwned-title{BEL}"  # OSC 0: window title
    f"{ESC}]52;c;cm0gLXJmIH4={BEL}"  # OSC 52: clipboard
    f"{ESC}]8;;http://evil.example/{ST}click{ESC}]8;;{ST}"  # OSC 8: hyperlink
    f"{ESC}[2J{ESC}[H"  # CSI 2J: clear the screen, cursor home
    "\u009b31m\u009d0;c1-title\u009c"  # C1: 8-bit CSI, OSC, ST
    "\u202eevil\u202c\u2066iso\u2069"  # bidi override, pop, isolate
    "zero\u200bwidth\u200djoin\ufeffbom\u2028sep"  # zero-width, BOM, line separator
)
"""Everything at once; each piece on its own line too, in the task's output."""

FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u2028\u2029]"
)
"""What must never reach the terminal: controls but tab and newline, C1, bidi and zero-width."""

TASK = f"""
import sys
hostile = {HOSTILE!r}
print("whole: " + hostile, flush=True)
print("bar 10%\\r[other] forged line", flush=True)
print("rtl: \\u202e[other] reversed", flush=True)
print("end", flush=True)
sys.stderr.write("err: " + hostile + "\\n")
"""

JOBS = f"""
[tool.substrax.compute.jobs.hostile]
timeout_seconds = 120

[tool.substrax.compute.jobs.hostile.commands]
speaks = ["python", "task.py", {json.dumps(HOSTILE)}]

[tool.substrax.compute.jobs.hostile.env]
NOTE = {json.dumps(HOSTILE)}

[tool.substrax.compute.jobs.{json.dumps("bad" + HOSTILE)}]
timeout_seconds = 60
commands = {{ x = ["true"] }}
"""


def _on_a_terminal(cli: Cli, *args: str) -> tuple[int, str]:
    """Run ``x-tui ARGS`` with stdout and stderr on a pseudo-terminal: its status and the text."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "x_tui", *args],
        cwd=cli.project,
        env=cli.env,
        stdout=follower,
        stderr=follower,
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
    code = process.wait(timeout=600)
    # The terminal's own line discipline turns each "\n" into "\r\n".
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def _hostile_run(cli: Cli) -> str:
    cli.write_pyproject(top='backend = "local"', jobs=JOBS)
    (cli.project / "task.py").write_text(TASK, encoding="utf-8")
    result = cli("run", "hostile")
    assert result.returncode == 0, result.stderr
    run_id = cli.submitted_id(result.stdout)
    handle_path = cli.runs / f"{run_id}.json"
    handle = json.loads(handle_path.read_text(encoding="utf-8"))
    handle["job"] = "job" + HOSTILE
    handle_path.write_text(json.dumps(handle), encoding="utf-8")
    (cli.runs / f"evil{HOSTILE.replace('/', '_')}.json").write_text("{", encoding="utf-8")
    return run_id


def _assert_nothing_unescaped(shown: str) -> None:
    found = sorted({f"U+{ord(char):04X}" for char in FORBIDDEN.findall(shown)})
    assert not found, f"reached the terminal: {found} in {shown!r}"


def test_status_logs_jobs_and_plan_show_hostile_text_only_escaped(cli: Cli) -> None:
    run_id = _hostile_run(cli)

    status_code, status = _on_a_terminal(cli, "status")
    one_code, one = _on_a_terminal(cli, "status", run_id)
    logs_code, logs = _on_a_terminal(cli, "logs", run_id)
    jobs_code, jobs = _on_a_terminal(cli, "jobs")
    plan_code, plan = _on_a_terminal(cli, "plan", "hostile")

    for shown in (status, one, logs, jobs, plan):
        _assert_nothing_unescaped(shown)
    # status: the job name and the unreadable record's name are there, escaped.
    assert status_code == 1
    assert f"{run_id}  local  job\\x1b]0;pwned-title\\x07" in status
    assert "\\u202eevil\\u202c\\u2066iso\\u2069zero\\u200bwidth\\u200djoin\\ufeff" in status
    assert "x-tui: " in status
    assert "evil\\x1b]0;pwned-title\\x07" in status
    assert one_code == 0
    assert one.startswith(f"{run_id}  local  job\\x1b]0;pwned-title\\x07")
    # logs: the sequences are gone, invisible characters escaped, every line prefixed in front.
    assert logs_code == 0
    visible = "\\u202eevil\\u202c\\u2066iso\\u2069zero\\u200bwidth\\u200djoin\\ufeffbom\\u2028sep"
    assert sorted(logs.splitlines()) == sorted(
        [
            f"[speaks] whole: click{visible}",
            "[speaks] [other] forged line",
            "[speaks] rtl: \\u202e[other] reversed",
            "[speaks] end",
            f"[speaks] err: click{visible}",
        ]
    )
    # jobs and plan: the values escaped, the job whose name is hostile named escaped.
    assert jobs_code == 2  # a job that does not resolve: named, the others still listed
    assert "  env         NOTE=\\x1b]0;pwned-title\\x07" in jobs
    assert "\\u202eevil" in jobs
    assert "x-tui: job " in jobs
    assert plan_code == 0
    assert "  env         NOTE=\\x1b]0;pwned-title\\x07" in plan
    assert "task.py '\\x1b]0;pwned-title\\x07" in plan


def test_a_line_of_megabytes_is_shown_cut_on_a_terminal_and_written_whole_when_piped(
    cli: Cli,
) -> None:
    run_id = _hostile_run(cli)
    (worker_log,) = cli.state.rglob("worker.log")
    states = "".join(f"\r[speaks] step {n:07d}" for n in range(200_000))
    worker_log.write_bytes(f"[speaks] start{states}\n[speaks] after\n".encode())

    code, shown = _on_a_terminal(cli, "logs", run_id)
    piped = cli("logs", run_id)

    assert code == 0
    assert shown.splitlines() == ["[speaks] step 0199999", "[speaks] after"]
    assert piped.returncode == 0
    # (read back in text mode, where each "\r" reads as a newline)
    assert piped.stdout == worker_log.read_text().replace("\r", "\n")
