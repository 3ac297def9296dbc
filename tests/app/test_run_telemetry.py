"""The run screen's live Devices and Metrics, and its flags, from a real local run.

The run's worker has a stand-in ``nvidia-smi`` (``tests/fake_gpus``: 8 GPUs whose figures change
each loop, honouring ``-l``) on its ``PATH``; the job's watch settings come from x-tui's overlay
table so samples come every fraction of a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Sparkline, TabbedContent

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunStore
from x_tui.widgets.metrics_view import MetricsView

from .app_support import make_app, pyproject_text, screen_text
from .screens_support import notices

FAKE_GPUS = Path(__file__).resolve().parent.parent / "fake_gpus"

TRAIN = """\
import json, pathlib, sys, time
for i in range(40):
    print(json.dumps({"step": i, "loss": 2 / (i + 1)}), flush=True)
    print(f"step={i} acc={i / 40:.3f}", flush=True)
    sys.stderr.write(f"\\r{i + 1}/40 [00:{i // 4:02d}<00:{(39 - i) // 4:02d}, 4.00it/s]")
    sys.stderr.flush()
    time.sleep(0.25)
while not pathlib.Path("stop").exists():
    time.sleep(0.1)
"""

JOBS = """
[tool.substrax.compute.jobs.train]
timeout_seconds = 300
commands = { train = ["python", "train.py"] }

[tool.substrax.compute.jobs.quiet]
timeout_seconds = 300
commands = { quiet = ["python", "-c", "import time; time.sleep(120)"] }

[tool.x-tui.jobs.train]
telemetry_seconds = 0.3

[tool.x-tui.jobs.quiet]
telemetry_seconds = 0.2
stall_seconds = 2
"""


@pytest.fixture
def gpu_project(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with the ``train`` and ``quiet`` jobs; 8 fake GPUs on ``PATH``."""
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject_text(JOBS), encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.setenv("PATH", f"{FAKE_GPUS}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPUS_SLEEP", "0.1")
    return root


def _submit(project: Path, job: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", "run", job, "--project", str(project), "--detach"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return next(h.run_id for h in RunStore().read_all().handles if h.job == job)


def _sparklines(screen: RunScreen) -> dict[str, tuple[float, ...]]:
    return {
        str(spark.id): tuple(spark.data or ())
        for spark in screen.query("#live-devices Sparkline").results(Sparkline)
    }


@pytest.mark.slow
@asynchronous
async def test_the_devices_tab_shows_eight_sparklines_that_change_and_metrics_plot(
    gpu_project: Path,
) -> None:
    run_id = _submit(gpu_project, "train")
    handle = RunStore().load(run_id)
    app = make_app(gpu_project)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = RunScreen(handle)
            await app.push_screen(screen)
            await wait_until(pilot, lambda: screen.loaded, "the run's files")
            screen.query_one("#run-tabs", TabbedContent).active = "tab-devices"
            await wait_until(
                pilot,
                lambda: len([k for k in _sparklines(screen) if k.startswith("util-")]) == 8,
                "eight utilisation sparklines",
            )
            first = _sparklines(screen)
            assert len(first) == 24  # utilisation, memory and power for each of 8 GPUs
            await wait_until(
                pilot,
                lambda: (
                    _sparklines(screen)["memory-7"] != first["memory-7"]
                    and _sparklines(screen)["util-0"] != first["util-0"]
                ),
                "the sparklines to change",
            )
            text = screen_text(app)
            assert "8x NVIDIA H100 80GB HBM3" in text
            assert "processes: " in text

            # The Metrics tab: the series, a table of latest values, the header's progress.
            screen.query_one("#run-tabs", TabbedContent).active = "tab-metrics"
            view = screen.query_one("#metrics", MetricsView)
            await wait_until(
                pilot, lambda: len(view.metrics.series.get("loss", ())) >= 5, "the loss series"
            )
            assert view.chosen == "loss"
            await wait_until(pilot, lambda: "ETA" in screen_text(app), "the progress")
            view.query_one("#metrics-table").focus()
            await pilot.press("m")
            assert view.chosen == "acc"
            await pilot.press("l")
            assert view.log_scale
            assert "log scale" in screen_text(app)

            # The same figures as x-tui metrics --json.
            done = subprocess.run(
                [sys.executable, "-m", "x_tui", "metrics", run_id, "--json"],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            )
            document = json.loads(done.stdout)
            assert len(document["devices"]) == 8
            assert document["metrics"]["loss"][0] == [0, 2.0]
    finally:
        (gpu_project / "stop").write_text("")


@asynchronous
async def test_a_silent_run_with_idle_gpus_is_flagged_in_the_header(
    gpu_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GPUS_IDLE", "1")
    run_id = _submit(gpu_project, "quiet")
    handle = RunStore().load(run_id)
    app = make_app(gpu_project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = RunScreen(handle)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        await wait_until(pilot, lambda: "⚠ silent " in screen_text(app), "the stall flag")
        assert "GPUs 0%" in screen_text(app)
        await pilot.press("c")
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.state is RunState.CANCELLED, "the cancel")
        await wait_until(
            pilot, lambda: f"Cancelled {handle.run_id}" in notices(app), "the cancel to end"
        )


@pytest.mark.slow
@asynchronous
async def test_the_runs_table_shows_a_running_runs_progress_and_gpu_use(gpu_project: Path) -> None:
    run_id = _submit(gpu_project, "train")
    app = make_app(gpu_project)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            table = app.main_screen.runs
            await wait_until(pilot, lambda: "progress" in table.columns, "the progress column")
            await wait_until(
                pilot,
                lambda: "ETA" in table.get_cell(run_id, "progress").plain,
                "the run's progress and ETA",
            )
            assert "gpu" in table.columns
            assert table.get_cell(run_id, "gpu").plain.endswith("%")
            assert table.get_cell(run_id, "cost").plain == "—"  # the local backend bills nothing
            text = screen_text(app)
            assert "Progress" in text
            assert "ETA" in text
    finally:
        (gpu_project / "stop").write_text("")
