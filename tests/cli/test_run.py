"""``x-tui run``, ``status``, ``logs``, ``fetch`` and ``cancel`` end to end on the local backend."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import wait_for

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli


def _read_until(process: subprocess.Popen[str], wanted: str) -> list[str]:
    """Read the process's stdout line by line up to and including the line ``wanted``."""
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line.rstrip("\n"))
        if seen[-1] == wanted:
            return seen
    raise AssertionError(f"x-tui ended without printing {wanted!r}; it printed {seen!r}")


STATUS_EVERY = 0.1
"""Seconds between two ``status`` or ``logs`` calls while a test waits on a run."""


def _wait_for_state(cli: Cli, run_id: str, wanted: str) -> str:
    """Ask ``status RUN_ID`` until the run is final."""

    def final_line() -> str:
        line = cli("status", run_id).stdout.strip()
        return line if line.split()[-1] in ("succeeded", "failed", "cancelled") else ""

    line = wait_for(final_line, f"{run_id} to end", every=STATUS_EVERY)
    assert line == f"{run_id}  local  {line.split()[2]}  {wanted}"
    return line


def _wait_for_log_line(cli: Cli, run_id: str, wanted: str) -> None:
    wait_for(
        lambda: wanted in cli("logs", run_id).stdout.splitlines(),
        f"{wanted!r} in the logs of {run_id}",
        every=STATUS_EVERY,
    )


def test_run_prints_each_line_as_it_comes_then_the_state_and_where_the_outputs_went(
    cli: Cli, tmp_path: Path
) -> None:
    (cli.project / "gate.wanted").touch()
    into = tmp_path / "runs"
    process = cli.start("run", "hello", "--backend", "local", "--into", str(into))
    # The first task waits for the gate until this test has seen its first line, so the line
    # must have reached us while the task was still running.
    seen = _read_until(process, "[examples.01_first] hello from the first example")
    (cli.project / "gate").touch()
    rest, errors = process.communicate(timeout=600)
    lines = [*seen, *(line for line in rest.splitlines() if line)]

    assert process.returncode == 0, errors
    run_id = cli.submitted_id("\n".join(lines))
    assert lines[0] == f"Submitted {run_id} to local."
    assert "[examples.01_first] the gate opened" in lines
    assert "[examples.02_second] the second example wrote 42" in lines
    assert lines[-1] == f"{run_id} succeeded; outputs in {into / run_id}."
    assert (into / run_id / "examples.02_second" / "result" / "value.txt").read_text() == "42"
    manifest = json.loads((into / run_id / "manifest.json").read_text())
    assert [task["name"] for task in manifest["tasks"]] == [
        "examples.01_first",
        "examples.02_second",
    ]
    assert errors == ""
    assert not (cli.project / run_id).exists(), "outputs must never land in the project"


def test_a_failing_job_exits_1_and_still_fetches_its_outputs(cli: Cli) -> None:
    result = cli("run", "failing", "--backend", "local")

    assert result.returncode == 1
    run_id = cli.submitted_id(result.stdout)
    assert "[boom] about to fail" in result.stdout.splitlines()
    fetched = cli.state / "compute" / "fetched" / run_id
    assert result.stdout.splitlines()[-1] == f"{run_id} failed; outputs in {fetched}."
    assert (fetched / "boom" / "stdout.log").read_text() == "about to fail\n"


def test_a_detached_run_is_followed_checked_and_fetched_from_other_processes(
    cli: Cli, tmp_path: Path
) -> None:
    submitted = cli.process("run", "hello", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    run_id = cli.submitted_id(submitted.stdout)
    assert submitted.stdout == f"Submitted {run_id} to local.\n"

    followed = cli.process("logs", run_id, "--follow", cwd=tmp_path)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.splitlines() == [
        "[examples.01_first] hello from the first example",
        "[examples.02_second] the second example wrote 42",
    ]
    # From any directory: the handle, not the current project, says where the run is.
    assert (
        cli.process("status", run_id, cwd=tmp_path).stdout == f"{run_id}  local  hello  succeeded\n"
    )
    fetched = cli.process("fetch", run_id, "--into", str(tmp_path / "copies"), cwd=tmp_path)
    assert fetched.stdout == f"Fetched {run_id} to {tmp_path / 'copies' / run_id}.\n"
    value = tmp_path / "copies" / run_id / "examples.02_second" / "result" / "value.txt"
    assert value.read_text() == "42"
    assert cli.process("status").stdout == f"{run_id}  local  hello  succeeded\n"


def test_a_detached_run_outlives_the_process_that_started_it_and_cancels(cli: Cli) -> None:
    submitted = cli.process("run", "slow", "--detach")
    run_id = cli.submitted_id(submitted.stdout)
    # That process has exited; the task still prints and the run is still running.
    _wait_for_log_line(cli, run_id, "[sleeps] sleeping")
    assert cli("status", run_id).stdout == f"{run_id}  local  slow  running\n"

    cancelled = cli("cancel", run_id)

    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout == f"Cancelled {run_id}.\n"
    _wait_for_state(cli, run_id, "cancelled")
    again = cli("cancel", run_id)
    assert again.returncode == 0
    assert again.stdout == f"{run_id} already ended (cancelled); nothing to cancel.\n"


def test_ctrl_c_while_following_detaches_without_cancelling(cli: Cli) -> None:
    process = cli.start("run", "slow")
    seen = _read_until(process, "[sleeps] sleeping")
    run_id = cli.submitted_id("\n".join(seen))

    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=600)

    assert process.returncode == 130
    assert f"x-tui logs {run_id} --follow" in errors
    assert "Traceback" not in errors
    assert cli("status", run_id).stdout == f"{run_id}  local  slow  running\n"
    cli("cancel", run_id)
    _wait_for_state(cli, run_id, "cancelled")


def test_status_lists_every_readable_run_and_names_each_unreadable_record(cli: Cli) -> None:
    good = cli.submitted_id(cli("run", "hello", "--backend", "local").stdout)
    broken = cli.runs / "hello-20260101T000000Z-abcdef.json"
    broken.write_text('{"schema_version": 2, "run_id": "hello-2026')

    result = cli("status")

    assert result.returncode == 1
    assert result.stdout == f"{good}  local  hello  succeeded\n"
    (complaint,) = result.stderr.splitlines()
    assert complaint.startswith(f"x-tui: {broken}: not JSON")


def test_status_json_is_one_document_with_runs_and_unreadable_records(cli: Cli) -> None:
    good = cli.submitted_id(cli("run", "hello").stdout)
    (cli.runs / "hello-20260101T000000Z-abcdef.json").write_text("[]")

    result = cli("status", "--json")

    document = json.loads(result.stdout)
    assert result.returncode == 1
    assert [(run["run_id"], run["state"]) for run in document["runs"]] == [(good, "succeeded")]
    assert [entry["path"] for entry in document["unreadable"]] == [
        str(cli.runs / "hello-20260101T000000Z-abcdef.json")
    ]
    single = json.loads(cli("status", good, "--json").stdout)
    assert single["state"] == "succeeded"
    assert single["job"] == "hello"


@pytest.mark.parametrize("verb", ["logs", "fetch", "cancel", "status"])
def test_a_run_id_that_is_not_stored_is_refused_on_one_line(cli: Cli, verb: str) -> None:
    result = cli(verb, "hello-20260101T000000Z-abcdef")

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (f"x-tui: no run 'hello-20260101T000000Z-abcdef' in {cli.runs}\n")


def test_status_names_a_run_whose_backend_is_not_installed_here_and_exits_1(cli: Cli) -> None:
    good = cli.submitted_id(cli("run", "hello").stdout)
    stranger = "hello-20260101T000000Z-abcdef"
    handle = {
        "schema_version": 2,
        "run_id": stranger,
        "backend": "nosuch",
        "job": "hello",
        "project": str(cli.project),
        "submitted_at": "2026-01-01T00:00:00Z",
        "settings": {},
        "details": {},
    }
    (cli.runs / f"{stranger}.json").write_text(json.dumps(handle))

    listed = cli("status")
    single = cli("status", stranger)

    assert listed.returncode == 1
    assert listed.stdout.splitlines() == [
        f"{good}  local  hello  succeeded",
        f"{stranger}  nosuch  hello  unknown",
    ]
    (complaint,) = listed.stderr.splitlines()
    assert complaint.startswith(
        f"x-tui: {stranger}: state unknown: no compute backend named 'nosuch'; registered: "
    )
    assert "local" in complaint
    assert single.returncode == 2
    assert single.stderr.startswith("x-tui: no compute backend named 'nosuch'")
