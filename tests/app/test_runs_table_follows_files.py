"""The runs table follows a real running run's side files: its progress and GPU cells change as
the worker appends to ``metrics.jsonl`` and ``telemetry.jsonl``, and its state when it ends.

The run's worker has the stand-in ``nvidia-smi`` (``tests/fake_gpus``) on its ``PATH``; the
table reads the files every 0.2 s instead of every 5 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app import run_watch
from x_tui.compute.store import RunStore

from .app_support import make_app, pyproject_text

FAKE_GPUS = Path(__file__).resolve().parent.parent / "fake_gpus"

STEPS = """\
import pathlib, sys, time
def bar(n):
    sys.stderr.write(f"\\r{n}/40 [00:01<00:03, 4.00it/s]")
    sys.stderr.flush()
bar(10)
while not pathlib.Path("go").exists():
    time.sleep(0.05)
bar(30)
while not pathlib.Path("stop").exists():
    time.sleep(0.05)
"""

JOBS = """
[tool.substrax.compute.jobs.steps]
timeout_seconds = 300
commands = { steps = ["python", "steps.py"] }

[tool.x-tui.jobs.steps]
telemetry_seconds = 0.2
"""


@pytest.fixture
def steps_project(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject_text(JOBS), encoding="utf-8")
    (root / "steps.py").write_text(STEPS, encoding="utf-8")
    monkeypatch.setenv("PATH", f"{FAKE_GPUS}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPUS_SLEEP", "0.1")
    monkeypatch.setattr(run_watch, "WATCH_SECONDS", 0.2)  # (read when the watch starts)
    return root


def _submit(project: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", "run", "steps", "--project", str(project), "--detach"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return next(h.run_id for h in RunStore().read_all().handles if h.job == "steps")


@pytest.mark.slow
@asynchronous
async def test_the_runs_table_follows_a_running_runs_progress_gpu_use_and_end(
    steps_project: Path,
) -> None:
    run_id = _submit(steps_project)
    work = steps_project
    app = make_app(steps_project)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            table = app.main_screen.runs

            def cell(column: str) -> str:
                return table.get_cell(run_id, column).plain if column in table.columns else ""

            await wait_until(pilot, lambda: cell("progress").startswith("25%"), "25% done")
            await wait_until(pilot, lambda: cell("gpu").endswith("%"), "the GPU use")
            first_gpu = cell("gpu")
            await wait_until(pilot, lambda: cell("gpu") != first_gpu, "newer GPU samples")

            (work / "go").write_text("")
            await wait_until(pilot, lambda: cell("progress").startswith("75%"), "75% done")

            (work / "stop").write_text("")
            await wait_until(pilot, lambda: "succeeded" in cell("state"), "the run's end")
    finally:
        (work / "stop").write_text("")
