"""The headless CLI with ``backend = "skypilot"``: plan, run, status, logs, cancel, for real.

The subprocess finds the backend through x-tui's own ``skypilot`` entry point.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from x_tui.compute.store import RunStore

from .fake_sky.harness import (
    FakeSky,
    S3Server,
    make_locked_project,
    run_cli,
    sky_pyproject,
)

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test: real processes, sshd or S3


JOBS = """\
[tool.substrax.compute.jobs.hello]
commands = { hi = ["python", "-c", "print('hi from the cluster', flush=True)"] }
timeout_seconds = 120
resources = { accelerator = ["H100:8", "A100-80GB:8"], cpu = 16, memory = "64Gi" }

[tool.substrax.compute.jobs.slow]
timeout_seconds = 900

[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
"""


@pytest.fixture
def bucket(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    return s3.make_bucket(f"cli-{tmp_path.name.lower().replace('_', '-')[-40:]}")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    return dict(os.environ)


@pytest.fixture
def project(fake_sky: FakeSky, bucket: str, tmp_path: Path) -> Path:
    root = make_locked_project(tmp_path / "project", {})
    (root / "pyproject.toml").write_text(
        sky_pyproject(fake_sky.tool.link, "bucket", {"outputs_bucket": bucket}, JOBS)
    )
    return root


def test_plan_prints_the_skypilot_task_submit_would_launch_and_launches_nothing(
    fake_sky: FakeSky, project: Path, env: dict[str, str], bucket: str
) -> None:
    done = run_cli(["plan", "hello", "--backend", "skypilot", "--json"], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    planned = json.loads(done.stdout)
    request = planned["provider_request"]
    task = request["task"]
    assert task["name"] == request["cluster"]
    assert task["name"].startswith("sx-hello-")
    assert task["workdir"] == str(project.resolve())
    assert task["resources"] == {
        "use_spot": False,
        "accelerators": ["H100:8", "A100-80GB:8"],
        "cpus": "16+",
        "memory": "65536MB+",
    }
    assert task["file_mounts"]["/outputs"] == {"source": bucket, "mode": "MOUNT"}
    assert "uv sync --frozen" in task["setup"].split("\n")
    assert "worker.pyz" in task["run"]
    assert request["transport"] == "bucket"
    assert request["cost"].startswith("no estimate: SkyPilot's catalog cache has no price")
    assert fake_sky.requests("launch") == []
    assert fake_sky.launches() == []


def test_run_submits_follows_and_fetches(
    fake_sky: FakeSky, project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(["run", "hello", "--into", str(tmp_path / "runs")], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    run_id = lines[0].split()[1]
    assert lines[0] == f"Submitted {run_id} to skypilot."
    assert "[hi] hi from the cluster" in lines
    assert lines[-1] == f"{run_id} succeeded; outputs in {tmp_path / 'runs' / run_id}."
    assert (tmp_path / "runs" / run_id / "hi" / "stdout.log").read_text() == "hi from the cluster\n"
    assert len(fake_sky.launches()) == 1


def test_cancel_stops_a_running_run_and_status_says_cancelled(
    fake_sky: FakeSky, project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(["run", "slow", "--detach"], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.split()[1]
    deadline = time.monotonic() + 120
    while "sleeping" not in "".join(run_cli(["logs", run_id], cwd=project, env=env).stdout):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.2)
    cancelled = run_cli(["cancel", run_id], cwd=project, env=env)
    assert cancelled.returncode == 0, cancelled.stderr
    status = run_cli(["status", run_id], cwd=project, env=env)
    assert "cancelled" in status.stdout
    assert fake_sky.clusters() == []
    handle = RunStore(tmp_path / "state" / "compute" / "runs").load(run_id)
    assert handle.details["transport"] == "bucket"


def test_a_cancel_whose_steps_fail_names_each_failure_and_exits_1(
    fake_sky: FakeSky, project: Path, env: dict[str, str]
) -> None:
    done = run_cli(["run", "slow", "--detach"], cwd=project, env=env)
    run_id = done.stdout.split()[1]
    deadline = time.monotonic() + 120
    while "running" not in run_cli(["status", run_id], cwd=project, env=env).stdout:
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.2)
    fake_sky.fail("cancel", "ssh: connect to host 10.0.0.2 port 22: Connection timed out")
    fake_sky.fail("down", "Failed to terminate the instances: PermissionDenied")
    cancelled = run_cli(["cancel", run_id], cwd=project, env=env)
    assert cancelled.returncode == 1
    job, teardown = cancelled.stderr.splitlines()
    assert job.startswith(f"x-tui: cancel {run_id}: SkyPilot failed while cancelling the job:")
    assert job.endswith("CommandError: ssh: connect to host 10.0.0.2 port 22: Connection timed out")
    assert teardown.startswith(f"x-tui: cancel {run_id}: SkyPilot failed while tearing down sx-")
    assert teardown.endswith("Failed to terminate the instances: PermissionDenied")
    fake_sky.release("fail-cancel")
    fake_sky.release("fail-down")
    assert run_cli(["cancel", run_id], cwd=project, env=env).returncode == 0


EXTENDED = """\
[tool.substrax.compute.jobs.extended]
timeout_seconds = 300
secrets = { env = ["API_TOKEN"], env_mapping = { STAGE_NAME = "STAGE" } }
retries = { tasks = { flaky = 1 } }

[tool.substrax.compute.jobs.extended.commands]
flaky = ["python", "-c", "import os, sys; first = not os.path.exists('tried'); open('tried', 'w'); print('attempt', flush=True); sys.exit(1 if first else 0)"]
secret = ["python", "-c", "import os, pathlib; pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'], 'seen.txt').write_text(os.environ['API_TOKEN'] + ' ' + os.environ['STAGE'])"]
"""  # noqa: E501


def test_secrets_reach_the_tasks_without_touching_a_file_and_failed_tasks_are_retried(
    fake_sky: FakeSky, bucket: str, env: dict[str, str], tmp_path: Path
) -> None:
    project = make_locked_project(tmp_path / "extended", {})
    (project / "pyproject.toml").write_text(
        sky_pyproject(fake_sky.tool.link, "bucket", {"outputs_bucket": bucket}, EXTENDED)
    )
    token = "tok-5f1e2d3c-not-in-any-file"
    secret_env = {**env, "API_TOKEN": token, "STAGE_NAME": "staging"}
    planned = run_cli(["plan", "extended", "--json"], cwd=project, env=secret_env)
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["provider_request"]["secrets"] == ["API_TOKEN", "STAGE"]
    assert token not in planned.stdout
    done = run_cli(
        ["run", "extended", "--into", str(tmp_path / "runs")], cwd=project, env=secret_env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = done.stdout.split()[1]
    fetched = tmp_path / "runs" / run_id
    assert (fetched / "secret" / "seen.txt").read_text() == f"{token} staging"
    attempts = json.loads((fetched / "attempts.json").read_text())
    flaky = [entry for entry in attempts if entry["task"] == "flaky"]
    assert [entry["status"] for entry in flaky] == ["failed", "succeeded"]
    kept = tmp_path / "state"
    leaked = [
        path for path in kept.rglob("*") if path.is_file() and token.encode() in path.read_bytes()
    ]
    assert leaked == []
    assert token not in done.stdout + done.stderr
