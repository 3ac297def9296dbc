"""``x-tui delete RUN_ID [--yes]``: a finished run's record and files go; a running run stays."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli


def _finished_run(cli: Cli) -> tuple[str, Path]:
    result = cli("run", "failing", "--detach")
    run_id = cli.submitted_id(result.stdout)
    for _ in range(600):
        if cli("status", run_id).stdout.split()[-1] == "failed":
            break
        time.sleep(0.05)
    run_dir = cli.state / "compute" / "local" / run_id
    assert run_dir.is_dir()
    return run_id, run_dir


def test_delete_yes_removes_the_record_and_the_run_directory(cli: Cli) -> None:
    run_id, run_dir = _finished_run(cli)

    result = cli("delete", run_id, "--yes")

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Deleted {run_id}.\n"
    assert not run_dir.exists()
    assert not (cli.runs / f"{run_id}.json").exists()
    assert run_id not in cli("status").stdout
    again = cli("delete", run_id, "--yes")
    assert again.returncode == 2
    assert f"no run '{run_id}'" in again.stderr


def test_delete_without_a_terminal_and_without_yes_refuses_in_one_line(cli: Cli) -> None:
    run_id, run_dir = _finished_run(cli)

    result = cli("delete", run_id)

    assert result.returncode == 2
    assert result.stderr == (
        f"x-tui: delete {run_id}: no terminal to ask on; add --yes to delete it\n"
    )
    assert run_dir.is_dir()
    assert (cli.runs / f"{run_id}.json").is_file()


def _on_a_terminal(cli: Cli, answer: bytes, *args: str) -> tuple[int, str]:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "x_tui", *args],
        cwd=cli.project,
        env=cli.env,
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    seen = b""
    while b"[y/N]" not in seen:
        chunk = os.read(leader, 4096)
        assert chunk, seen
        seen += chunk
    os.write(leader, answer)
    code = process.wait(timeout=600)
    try:
        while chunk := os.read(leader, 4096):
            seen += chunk
    except OSError:  # EIO: the other end closed
        pass
    os.close(leader)
    return code, seen.decode().replace("\r\n", "\n")


def test_delete_asks_on_a_terminal_and_no_leaves_the_run(cli: Cli) -> None:
    run_id, run_dir = _finished_run(cli)

    code, shown = _on_a_terminal(cli, b"n\n", "delete", run_id)

    assert code == 1
    assert f"Delete run {run_id} (failed): its record and {run_dir}? [y/N]" in shown
    assert f"Left {run_id} as it is." in shown
    assert run_dir.is_dir()

    code, shown = _on_a_terminal(cli, b"y\n", "delete", run_id)

    assert code == 0
    assert f"Deleted {run_id}." in shown
    assert not run_dir.exists()


def test_delete_refuses_a_running_run_with_exit_2(cli: Cli) -> None:
    run_id = cli.submitted_id(cli("run", "slow", "--detach").stdout)
    try:
        result = cli("delete", run_id, "--yes")

        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert line == (
            f"x-tui: {run_id} is running: a run is deleted only once it has ended"
            f" (x-tui cancel {run_id} stops it)"
        )
        assert (cli.runs / f"{run_id}.json").is_file()
        assert (cli.state / "compute" / "local" / run_id).is_dir()
    finally:
        cli("cancel", run_id)


def test_delete_never_removes_a_directory_the_record_points_elsewhere(
    cli: Cli, tmp_path: Path
) -> None:
    run_id, run_dir = _finished_run(cli)
    record = cli.runs / f"{run_id}.json"
    victim = tmp_path / "precious"
    (victim / "outputs").mkdir(parents=True)
    (victim / "worker.log").write_text("keep me")
    record.write_text(record.read_text().replace(str(run_dir), str(victim)))

    result = cli("delete", run_id, "--yes")

    assert result.returncode == 2
    assert "nothing was deleted" in result.stderr
    assert (victim / "worker.log").read_text() == "keep me"
    assert record.is_file()
