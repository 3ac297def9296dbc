"""A spot cluster the cloud takes away: the run reads ``preempted`` with SkyPilot's word on its
cluster, not ``failed``; the watcher resubmits it once when the job says so, and ``status`` and
the guard side files link the two runs (the fake SkyPilot, its outputs in moto's S3)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.support import wait_for
from x_tui.app.notify_settings import NotifySettings
from x_tui.app.service import Service
from x_tui.app.watch_budgets import BudgetCheck
from x_tui.app.watch_events import EventKind
from x_tui.app.watch_resubmits import Resubmitter
from x_tui.app.watcher import Watcher
from x_tui.compute.backend import RunState
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.operations import backend_for, open_project, plan_run, submit_run
from x_tui.compute.run_endings import EndingBook
from x_tui.compute.store import RunHandle, default_state_dir

from .fake_sky.harness import FakeSky, S3Server, make_locked_project, run_cli

pytestmark = pytest.mark.slow  # fake SkyPilot clusters: real processes and S3


JOB = """\
[tool.substrax.compute.jobs.long]
timeout_seconds = 900

[tool.substrax.compute.jobs.long.commands]
train = ["python", "-c", "import time; print('training', flush=True); time.sleep(600)"]

[tool.x-tui.jobs.long]
preemption_retries = 1

[tool.substrax.compute.jobs.quick]
timeout_seconds = 300
commands = { hello = ["python", "-c", "print('hello', flush=True)"] }
"""


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private state directory and no user settings."""
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))


def _project(tmp_path: Path, fake: FakeSky, s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    bucket = s3.make_bucket(f"spot-{tmp_path.name.lower().replace('_', '-')[-40:]}")
    root = make_locked_project(tmp_path / "sample", {})
    table = (
        '[tool.substrax.compute]\nbackend = "skypilot"\n\n'
        f"[tool.substrax.compute.backends.skypilot]\nsky = {json.dumps(str(fake.tool.link))}\n"
        "use_spot = true\n\n"
        f"[tool.substrax.compute.backends.skypilot.bucket]\noutputs_bucket = {json.dumps(bucket)}\n"
    )
    with (root / "pyproject.toml").open("a") as stream:
        stream.write("\n" + table + "\n" + JOB)
    return root


def _watcher(service: Service, log_path: Path) -> Watcher:
    budgets = BudgetCheck(service)
    return Watcher(
        service,
        NotifySettings(events=frozenset({EventKind.PREEMPTED}), terminal=False),
        checks=[budgets],
        cost_of=budgets.cost_of,
        resubmit=Resubmitter(service),
        first_interval=0.2,
        max_interval=0.5,
        log=log_path.open("a"),
    )


def _stored(service: Service) -> list[RunHandle]:
    return list(service.store.read_all().handles)


def test_a_preempted_spot_run_reads_preempted_and_is_resubmitted_once_linked(
    fake_sky: FakeSky, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, fake_sky, s3, monkeypatch)
    first = submit_run(plan_run(open_project(project), "long"))
    state_dir = default_state_dir()
    service = Service(state_dir=state_dir)
    assert GuardBook(state_dir).load(first.run_id).preemption_retries == 1
    watcher = _watcher(service, tmp_path / "watch.log")
    watcher.start()
    try:
        wait_for(lambda: watcher.state_of(first.run_id) is RunState.RUNNING, "the run to run")
        fake_sky.preempt(first.details["cluster"])
        wait_for(lambda: len(_stored(service)) == 2, "the resubmitted run", deadline=120)
        (second,) = [h for h in _stored(service) if h.run_id != first.run_id]
        wait_for(lambda: watcher.state_of(second.run_id) is RunState.RUNNING, "it to run")
        # The second is preempted too: no retries left, so it stays preempted, alone.
        fake_sky.preempt(second.details["cluster"])
        wait_for(lambda: watcher.state_of(second.run_id) is RunState.PREEMPTED, "its end")
        time.sleep(1.0)
    finally:
        watcher.stop()
    assert len(_stored(service)) == 2
    assert backend_for(first).status(first) is RunState.PREEMPTED

    guards = GuardBook(state_dir)
    assert guards.load(first.run_id).resubmitted_as == second.run_id
    assert guards.load(second.run_id).resubmitted_from == first.run_id
    assert guards.load(second.run_id).preemption_retries == 0
    assert guards.load(second.run_id).resubmitted_as is None

    ending = EndingBook(state_dir).load(first.run_id)
    assert ending is not None
    assert ending.by == "provider"
    cluster = first.details["cluster"]
    assert ending.reason == (
        f"spot cluster {cluster} was taken away by its provider before the job ended"
        " (SkyPilot reads it STOPPED)"
    )
    events = [(e.run_id, e.kind) for e in watcher.events.read() if e.kind.is_final]
    assert events == [(first.run_id, EventKind.PREEMPTED), (second.run_id, EventKind.PREEMPTED)]
    assert watcher.events.read()[-1].reason.startswith(f"spot cluster {second.details['cluster']}")

    shown = run_cli(["status", first.run_id], cwd=project, env=dict(os.environ))
    assert shown.returncode == 0, shown.stderr
    assert f"{first.run_id}  skypilot  long  preempted" in shown.stdout
    assert f"({ending.reason})" in shown.stdout
    assert f"resubmitted as {second.run_id}" in shown.stdout
    listed = json.loads(run_cli(["status", "--json"], cwd=project, env=dict(os.environ)).stdout)
    by_id = {run["run_id"]: run for run in listed["runs"]}
    assert by_id[second.run_id]["resubmitted_from"] == first.run_id
    assert by_id[second.run_id]["state"] == "preempted"


def test_a_spot_run_that_ended_before_its_cluster_went_is_not_preempted(
    fake_sky: FakeSky, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its cluster is gone (autodown) once its job ended: its finished manifest says succeeded."""
    project = _project(tmp_path, fake_sky, s3, monkeypatch)
    handle = submit_run(plan_run(open_project(project), "quick"))
    wait_for(
        lambda: fake_sky.launches() and handle.details["cluster"] not in fake_sky.clusters(),
        "the cluster to go with its job",
        deadline=120,
    )
    assert backend_for(handle).status(handle) is RunState.SUCCEEDED
    assert EndingBook(default_state_dir()).load(handle.run_id) is None
