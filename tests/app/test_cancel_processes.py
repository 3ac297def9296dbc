"""The TUI's cancel says "Cancelled" only once every process of the run has stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.backends.local import process as local_process
from x_tui.compute.backend import RunState
from x_tui.compute.worker import run_processes

from .app_support import make_app
from .screens_support import notices, submitted, write_project

FAMILY_JOB = """
[tool.substrax.compute.jobs.family]
timeout_seconds = 900
[tool.substrax.compute.jobs.family.commands]
family = ["python", "family.py"]
"""

FAMILY = """
import os, pathlib, signal, subprocess, sys, time
ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
escaped = subprocess.Popen([sys.executable, "-c", ignores], start_new_session=True)
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
(out / "pids").write_text(f"{os.getpid()} {escaped.pid}")
print("ready", flush=True)
time.sleep(600)
"""


def _is_running(pid: int) -> bool:
    info = local_process.process_info(pid)
    return info is not None and not info.zombie


@pytest.mark.skipif(not run_processes.has_proc(), reason="finding a run's processes needs /proc")
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_cancel_in_the_runs_table_stops_a_setsid_grandchild_before_saying_cancelled(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", FAMILY_JOB)
    (project / "family.py").write_text(FAMILY)
    handle = await submitted(project, "family")
    pids_file = Path(handle.details["run_dir"]) / "outputs" / "family" / "pids"
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        main = app.main_screen
        await wait_until(
            pilot,
            lambda: (
                main.runs.highlighted_handle() is not None
                and app.monitor.state_of(handle.run_id) is RunState.RUNNING
                and pids_file.exists()
                and len(pids_file.read_text().split()) == 2
            ),
            "the running run in the table",
        )
        pids = [int(pid) for pid in pids_file.read_text().split()]
        assert all(_is_running(pid) for pid in pids)
        main.runs.focus()
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_until(
            pilot, lambda: f"Cancelled {handle.run_id}" in notices(app), "the cancel to end"
        )
        # Said only once nothing of the run runs, the setsid grandchild included.
        assert [pid for pid in pids if _is_running(pid)] == []
        await wait_until(
            pilot,
            lambda: app.monitor.state_of(handle.run_id) is RunState.CANCELLED,
            "the run to read as cancelled",
        )
