"""Without ``nvidia-smi`` (or ``rocm-smi``) where a run runs: CPU and memory samples only, and no
error anywhere: not in the worker's log, not in ``x-tui metrics --json`` or ``status --json``, not
in the Devices tab (Pilot), which says there are no GPU figures and shows the processes' line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Sparkline, TabbedContent

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.compute.store import RunStore

from .app_support import make_app, pyproject_text, screen_text

WORK = """\
import pathlib, time
while not pathlib.Path("stop").exists():
    time.sleep(0.1)
"""

JOBS = """
[tool.substrax.compute.jobs.cpu]
timeout_seconds = 120
commands = { work = ["python", "work.py"] }

[tool.x-tui.jobs.cpu]
telemetry_seconds = 0.3
"""


@pytest.fixture
def project(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose job runs until ``stop`` exists, with no GPU tool on ``PATH``."""
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject_text(JOBS), encoding="utf-8")
    (root / "work.py").write_text(WORK, encoding="utf-8")
    kept = [
        entry
        for entry in os.environ["PATH"].split(os.pathsep)
        if entry
        and not shutil.which("nvidia-smi", path=entry)
        and not shutil.which("rocm-smi", path=entry)
    ]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    return root


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "x_tui", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@asynchronous
async def test_without_a_gpu_tool_there_are_process_samples_and_no_error_anywhere(
    project: Path,
) -> None:
    submitted = _cli("run", "cpu", "--project", str(project), "--detach")
    assert submitted.returncode == 0, submitted.stderr
    handle = next(h for h in RunStore().read_all().handles if h.job == "cpu")
    app = make_app(project)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = RunScreen(handle, tab="tab-devices")
            await app.push_screen(screen)
            await wait_until(pilot, lambda: "processes: 1" in screen_text(app), "the processes")
            text = screen_text(app)
            assert "No GPU figures" in text
            assert not screen.query(Sparkline).filter(".device-row *")
            assert screen.query_one("#run-tabs", TabbedContent).active == "tab-devices"
            assert isinstance(app.screen, RunScreen)  # no failure panel, no error screen

        shown = _cli("metrics", handle.run_id, "--json")
        assert shown.returncode == 0, shown.stderr
        document = json.loads(shown.stdout)
        assert document["devices"] == []
        assert document["process"]["processes"] == 1
        assert document["process"]["rss_mib"] > 0
        status = _cli("status", handle.run_id, "--json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["flags"] == []
    finally:
        (project / "stop").write_text("")
    finished = _cli("logs", handle.run_id, "--follow")
    assert finished.returncode == 0, finished.stderr
    for output in (finished.stdout, finished.stderr, shown.stderr, status.stderr):
        assert "Traceback" not in output
        assert "telemetry stopped" not in output
