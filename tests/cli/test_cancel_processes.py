"""``x-tui status`` and ``cancel`` on a run whose worker was killed, and two cancels at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import wait_for
from x_tui.backends.local import process as local_process
from x_tui.cli import main
from x_tui.compute.worker import run_processes

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

pytestmark = pytest.mark.skipif(
    not run_processes.has_proc(), reason="finding a run's processes needs /proc"
)

FAMILY = """
import os, pathlib, signal, subprocess, sys, time
ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
stubborn = subprocess.Popen([sys.executable, "-c", ignores])
escaped = subprocess.Popen([sys.executable, "-c", ignores], start_new_session=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
(out / "pids").write_text(f"{os.getpid()} {stubborn.pid} {escaped.pid}")
print("ready", flush=True)
time.sleep(600)
"""

JOB = """
[tool.substrax.compute.jobs.family]
timeout_seconds = 600
commands = { family = ["python", "family.py"] }
"""


def _is_running(pid: int) -> bool:
    info = local_process.process_info(pid)
    return info is not None and not info.zombie


def _start_family(cli: Cli) -> tuple[str, int, list[int]]:
    """Submit the family job; its run id, its worker's pid and its task's processes."""
    (cli.project / "family.py").write_text(FAMILY)
    cli.write_pyproject(jobs=JOB, top='backend = "local"')
    submitted = cli("run", "family", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    run_id = cli.submitted_id(submitted.stdout)
    handle = json.loads((cli.runs / f"{run_id}.json").read_text())
    pids_file = Path(handle["details"]["run_dir"]) / "outputs" / "family" / "pids"
    wait_for(lambda: pids_file.exists() and pids_file.read_text(), "the tasks' pids")
    tasks = [int(pid) for pid in pids_file.read_text().split()]
    return run_id, int(handle["details"]["pid"]), tasks


def _wait_gone(pid: int) -> None:
    wait_for(lambda: not _is_running(pid), f"pid {pid} to end")


@pytest.mark.slow
def test_a_killed_workers_tasks_read_as_running_and_two_cancels_at_once_stop_them(
    cli: Cli,
) -> None:
    run_id, worker, tasks = _start_family(cli)
    os.kill(worker, signal.SIGKILL)
    _wait_gone(worker)
    assert all(_is_running(pid) for pid in tasks)
    assert cli("status", run_id).stdout == f"{run_id}  local  family  running\n"

    cancels = [cli.start("cancel", run_id) for _ in range(2)]
    results = [(process.wait(timeout=120), *process.communicate()) for process in cancels]

    assert [pid for pid in tasks if _is_running(pid)] == []
    for code, stdout, stderr in results:
        assert (code, stderr) == (0, "")
        # Whichever came second either stopped what was left with the first, or found the
        # run over; neither says so while a process of the run still runs.
        assert stdout in (
            f"Cancelled {run_id}.\n",
            f"{run_id} already ended (cancelled); nothing to cancel.\n",
        )
    assert cli("status", run_id).stdout == f"{run_id}  local  family  cancelled\n"


def test_cancel_exits_1_with_one_line_naming_what_it_could_not_stop(
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id, _worker, tasks = _start_family(cli)
    run_dir = Path(json.loads((cli.runs / f"{run_id}.json").read_text())["details"]["run_dir"])
    marker = (run_dir / run_processes.MARKER_FILE).read_text()
    # One of the run's (it carries the marker) outside the worker's tree, which only cancel's
    # signals reach; spared below, as if the system would not let it go.
    ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    process = subprocess.Popen(
        [sys.executable, "-c", ignores],
        env={**os.environ, run_processes.MARKER_VARIABLE: marker},
        start_new_session=True,
    )
    stuck = process.pid
    tasks.append(stuck)
    real_signal = run_processes.signal_proven

    def spare_one(pid: int, signum: int, proof: object) -> bool:
        return pid != stuck and real_signal(pid, signum, proof)  # type: ignore[arg-type]

    monkeypatch.setattr(run_processes, "signal_proven", spare_one)
    real_stop = local_process.stop  # one second after each signal, not the default five

    def stop_sooner(run: local_process.RunProcesses, *, grace: float) -> list[int]:
        return real_stop(run, grace=min(grace, 1.0))

    monkeypatch.setattr(local_process, "stop", stop_sooner)
    monkeypatch.chdir(cli.project)
    for name in [key for key in os.environ if key.startswith("SUBSTRAX_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(cli.state))
    try:
        assert main(["cancel", run_id]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.splitlines() == [
            f"x-tui: cancel {run_id}: 1 process of the run still runs after SIGKILL (pid {stuck})"
        ]
        assert [pid for pid in tasks if _is_running(pid)] == [stuck]
        assert cli("status", run_id).stdout == f"{run_id}  local  family  running\n"
    finally:
        monkeypatch.undo()
        process.kill()
        process.wait()
