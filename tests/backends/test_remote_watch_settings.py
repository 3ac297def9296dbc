"""A job's ``telemetry_seconds``, ``stall_seconds`` and ``metric_patterns`` reach the worker on
Modal and on SkyPilot (through their fakes), as they do on the local backend.

Each run's worker samples at the job's pace (several samples in a run shorter than the default
5 s), records the job's stall time in its telemetry header, and extracts the metric only the
job's own pattern finds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from x_tui.compute.backend import RunState
from x_tui.compute.operations import backend_for, open_project, plan_run, submit_run
from x_tui.compute.store import RunStore
from x_tui.compute.telemetry_read import read_metrics, read_telemetry
from x_tui.compute.worker.log_metrics import METRICS_NAME
from x_tui.compute.worker.telemetry import TELEMETRY_NAME
from x_tui.testing.contract import wait_until_final

from .fake_modal import fixtures as modal_fixtures
from .fake_modal.harness import PYPROJECT, FakeModal
from .fake_sky.harness import FakeSky, S3Server, make_locked_project, sky_pyproject

fake = modal_fixtures.fake_modal

TRAIN = (
    "import time\n"
    "for epoch in range(6):\n"
    "    print(f'epoch {epoch} accuracy {50 + epoch}%', flush=True)\n"
    "    time.sleep(0.5)\n"
)
"""A task whose one metric only the job's own pattern finds (no ``key=value``, no JSON)."""

JOB = f"""
[tool.substrax.compute.jobs.watched]
timeout_seconds = 300
telemetry_seconds = 0.5
stall_seconds = 7
metric_patterns = ['accuracy (?P<accuracy>[0-9.]+)%']
commands = {{ train = ["python", "-c", {json.dumps(TRAIN)}] }}
"""


def _assert_the_job_settings_were_used(outputs: Path) -> None:
    telemetry = read_telemetry((outputs / TELEMETRY_NAME).read_bytes())
    assert telemetry is not None
    assert telemetry.interval == 0.5
    assert telemetry.stall_seconds == 7.0
    # 3 s of task at one sample every 0.5 s (the default pace would give none at all).
    assert len(telemetry.samples) >= 3
    metrics = read_metrics((outputs / METRICS_NAME).read_bytes())
    assert [value for _step, value in metrics.series["accuracy"]] == [
        50.0,
        51.0,
        52.0,
        53.0,
        54.0,
        55.0,
    ]


def test_a_modal_worker_runs_with_the_jobs_watch_settings(fake: FakeModal, tmp_path: Path) -> None:
    """The settings go to the container function and on to the worker's arguments."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        PYPROJECT
        + '\n[tool.substrax.compute]\nbackend = "modal"\n\n'
        + '[tool.substrax.compute.backends.modal]\noutputs_volume = "runs"\n'
        + f'state_dir = "{tmp_path / "modal-state"}"\n'
        + JOB
    )
    plan = plan_run(open_project(root), "watched")
    assert plan.provider_request is not None
    watch = plan.provider_request["watch"]
    assert isinstance(watch, dict)
    assert watch["arguments"] == [
        "--telemetry-seconds",
        "0.5",
        "--stall-seconds",
        "7",
        "--metric-pattern",
        "accuracy (?P<accuracy>[0-9.]+)%",
    ]
    handle = submit_run(plan, store=RunStore(tmp_path / "handles"))
    backend = backend_for(handle)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    _assert_the_job_settings_were_used(backend.fetch(handle, tmp_path / "fetched"))


@pytest.mark.slow  # a fake SkyPilot cluster: real processes and a local S3 server
def test_a_skypilot_worker_runs_with_the_jobs_watch_settings(
    fake_sky: FakeSky, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings go into the task's ``run`` script, each argument quoted for the shell."""
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    bucket = s3.make_bucket(f"watch-{tmp_path.name.lower().replace('_', '-')[-40:]}")
    root = make_locked_project(tmp_path / "project", {})
    (root / "pyproject.toml").write_text(
        sky_pyproject(fake_sky.tool.link, "bucket", {"outputs_bucket": bucket}, JOB)
    )
    plan = plan_run(open_project(root), "watched")
    handle = submit_run(plan, store=RunStore(tmp_path / "handles"))
    backend = backend_for(handle)
    assert wait_until_final(backend, handle, timeout=120) is RunState.SUCCEEDED
    _assert_the_job_settings_were_used(backend.fetch(handle, tmp_path / "fetched"))
