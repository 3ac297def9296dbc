"""Retries end to end: a task that fails twice then succeeds, every attempt visible in ``logs``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from x_tui.compute.worker.manifest import load_manifest

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

FLAKY = """\
import pathlib
import sys

counter = pathlib.Path("flaky.count")
number = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(number))
print(f"attempt number {number}", flush=True)
if number < 3:
    print(f"failing on attempt {number}", file=sys.stderr, flush=True)
    sys.exit(7)
print("finally worked", flush=True)
"""

JOBS = """
[tool.substrax.compute.jobs.flaky]
timeout_seconds = 300
retries = 2
commands = { flaky = ["python", "flaky.py"] }

[tool.substrax.compute.jobs.typo]
timeout_seconds = 300
retries = { tasks = { flakey = 1 } }
commands = { flaky = ["python", "flaky.py"] }
"""


def test_a_task_that_fails_twice_then_succeeds_ends_succeeded_with_three_attempts_in_logs(
    cli: Cli, tmp_path: Path
) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    (cli.project / "flaky.py").write_text(FLAKY)
    into = tmp_path / "fetched"

    result = cli("run", "flaky", "--into", str(into))

    assert result.returncode == 0, result.stderr
    run_id = cli.submitted_id(result.stdout)
    assert result.stdout.splitlines()[-1] == f"{run_id} succeeded; outputs in {into / run_id}."
    assert cli("status", run_id).stdout == f"{run_id}  local  flaky  succeeded\n"

    # The run's log holds every attempt, each new one announced.
    log = cli("logs", run_id).stdout.splitlines()
    assert [line for line in log if "attempt" in line] == [
        "[flaky] attempt number 1",
        "[flaky] failing on attempt 1",
        "[flaky] x-tui: attempt 2 of 3",
        "[flaky] attempt number 2",
        "[flaky] failing on attempt 2",
        "[flaky] x-tui: attempt 3 of 3",
        "[flaky] attempt number 3",
    ]

    # --attempts: a header per attempt, how it ended, then its own logs.
    attempts = cli("logs", run_id, "--attempts")
    assert attempts.returncode == 0, attempts.stderr
    lines = attempts.stdout.splitlines()
    headers = [line for line in lines if line.startswith("== ")]
    assert len(headers) == 3
    assert re.fullmatch(r"== flaky: attempt 1 of 3, failed \(exit 7, \d+\.\d\d s\) ==", headers[0])
    assert re.fullmatch(r"== flaky: attempt 2 of 3, failed \(exit 7, \d+\.\d\d s\) ==", headers[1])
    assert re.fullmatch(
        r"== flaky: attempt 3 of 3, succeeded \(exit 0, \d+\.\d\d s\) ==", headers[2]
    )
    first = lines[lines.index(headers[0]) : lines.index(headers[1])]
    assert first[1:] == [
        "-- stdout --",
        "attempt number 1",
        "-- stderr --",
        "failing on attempt 1",
    ]
    last = lines[lines.index(headers[2]) :]
    assert last[1:] == ["-- stdout --", "attempt number 3", "finally worked"]

    # The manifest stays substrax's (read strictly); the attempts are a file of their own.
    manifest = load_manifest(into / run_id / "manifest.json")
    assert manifest is not None
    assert manifest.succeeded
    recorded = json.loads((into / run_id / "attempts.json").read_text())
    assert [(a["attempt"], a["status"]) for a in recorded] == [
        (1, "failed"),
        (2, "failed"),
        (3, "succeeded"),
    ]
    staged = cli.state / "compute" / "local" / run_id
    assert json.loads((staged / "retries.json").read_text()) == {"flaky": 2}
    assert "retries" not in json.loads((staged / "spec.json").read_text())


def test_attempts_are_shown_from_any_directory(cli: Cli, tmp_path: Path) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    (cli.project / "flaky.py").write_text(FLAKY)
    run_id = cli.submitted_id(cli("run", "flaky").stdout)

    shown = cli("logs", run_id, "--attempts", cwd=tmp_path)

    assert shown.returncode == 0, shown.stderr
    assert sum(line.startswith("== flaky: attempt") for line in shown.stdout.splitlines()) == 3


def test_logs_attempts_of_a_run_without_retries_says_so(cli: Cli) -> None:
    run_id = cli.submitted_id(cli("run", "failing").stdout)

    result = cli("logs", run_id, "--attempts")

    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr == (
        f"x-tui: {run_id}: no task was retried (it has no attempts.json); its log is"
        f" x-tui logs {run_id}\n"
    )


def test_retries_naming_a_task_the_job_lacks_are_refused_before_anything_runs(cli: Cli) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')

    result = cli("run", "typo", "--detach")

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"x-tui: {cli.project / 'pyproject.toml'}: [tool.substrax.compute.jobs")
    assert "retries.tasks: the job has no task 'flakey'; did you mean 'flaky'?" in line
    assert not cli.runs.exists()


def test_follow_and_attempts_are_not_asked_together(cli: Cli) -> None:
    result = cli("logs", "flaky-20260101T000000Z-abcdef", "--follow", "--attempts")
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr
