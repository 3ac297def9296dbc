"""Launch intent and reconciliation: an interrupted x-tui never launches a run twice or leaves one
running that nobody holds; a launch that fails says why; cancel attempts every step.

x-tui runs as a real process (``python -m x_tui``) and is killed with SIGKILL where the tests say;
the fake SkyPilot's "API server" (a detached runner per launch) goes on as SkyPilot's does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import wait_for
from x_tui.backends.skypilot.backend import CancelFailed, SkyPilotBackend
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, RunStore, read_handle
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.spec import JobSpec, Task
from x_tui.testing.contract import wait_until_final

from .fake_sky.harness import (
    FakeSky,
    S3Server,
    make_locked_project,
    run_cli,
    sky_pyproject,
)

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test: real processes, sshd or S3


JOB = """\
[tool.substrax.compute.jobs.hello]
commands = { hi = ["python", "-c", "print('hi from the cluster', flush=True)"] }
timeout_seconds = 120

"""

WAIT_SECONDS = 120.0


@pytest.fixture
def bucket(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    return s3.make_bucket(f"launch-{tmp_path.name.lower().replace('_', '-')[-40:]}")


@pytest.fixture
def project(fake_sky: FakeSky, bucket: str, tmp_path: Path) -> Path:
    root = make_locked_project(tmp_path / "project", {})
    (root / "pyproject.toml").write_text(
        sky_pyproject(fake_sky.tool.link, "bucket", {"outputs_bucket": bucket}, JOB)
    )
    return root


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """x-tui's environment: a state directory of its own (this process's too)."""
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    return dict(os.environ)


@pytest.fixture
def xtui() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``x-tui`` as a process of its own session; each one is killed afterwards."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "x_tui", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        kill(process)


def kill(process: subprocess.Popen[str]) -> None:
    """SIGKILL x-tui and everything in its session, as closing its terminal could."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_dirs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state" / "compute" / "skypilot").glob("hello-*"))


def test_killing_xtui_between_the_launch_request_and_its_answer_finds_the_same_run(
    fake_sky: FakeSky,
    project: Path,
    env: dict[str, str],
    tmp_path: Path,
    xtui: Callable[..., subprocess.Popen[str]],
) -> None:
    fake_sky.hold("hold-launch")  # SkyPilot has the request; provisioning has not answered
    process = xtui("run", "hello", cwd=project, env=env)
    assert process.stdout is not None
    submitted = process.stdout.readline()
    assert submitted.startswith("Submitted hello-"), submitted + (process.stderr.read() or "")
    run_id = submitted.split()[1]
    wait_for(lambda: fake_sky.requests("launch")[0]["status"] == "RUNNING", "the launch")
    assert process.poll() is None  # x-tui is waiting for the launch's answer
    kill(process)
    fake_sky.release("hold-launch")

    handle = RunStore(tmp_path / "state" / "compute" / "runs").load(run_id)
    backend = SkyPilotBackend(handle.settings)  # rebuilt from the handle, as every verb does
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    launched = json.loads((run_dirs(tmp_path)[0] / "launched.json").read_text())
    assert launched == {"request_id": handle.details["request_id"], "job_id": 1}
    assert fake_sky.launches() == [f"{handle.details['cluster']} {handle.details['request_id']}"]
    assert len(fake_sky.requests("launch")) == 1
    shown = run_cli(["logs", run_id], cwd=tmp_path, env=env)
    assert "[hi] hi from the cluster" in shown.stdout.splitlines()
    status = run_cli(["status", run_id], cwd=tmp_path, env=env)
    assert status.returncode == 0
    assert "succeeded" in status.stdout
    assert len(fake_sky.launches()) == 1


def test_a_submit_killed_before_skypilot_names_the_request_leaves_nothing_running(
    fake_sky: FakeSky,
    project: Path,
    env: dict[str, str],
    tmp_path: Path,
    xtui: Callable[..., subprocess.Popen[str]],
) -> None:
    fake_sky.hold("hold-request-id")  # the request exists; sky.launch has not returned its id
    process = xtui("run", "hello", cwd=project, env=env)
    wait_for(lambda: fake_sky.requests("launch"), "the launch request")
    kill(process)
    fake_sky.release("hold-request-id")

    def abandoned() -> bool:
        found = run_dirs(tmp_path)
        record = found[0] / "request.json" if found else None
        return bool(record and record.exists() and json.loads(record.read_text())["abandoned"])

    wait_for(abandoned, "the bridge undoing the launch x-tui never heard of")
    wait_for(lambda: fake_sky.clusters() == [], "the cluster's teardown")
    wait_for(
        lambda: fake_sky.requests("launch")[0]["status"] in ("CANCELLED", "SUCCEEDED"),
        "the launch request's end",
    )
    # The intent names the run that was never handed back; looked at, it failed, and says why.
    intent = json.loads((run_dirs(tmp_path)[0] / "launch.json").read_text())
    handle = read_handle(intent["handle"])
    backend = SkyPilotBackend(handle.settings)
    assert backend.status(handle) is RunState.FAILED
    assert list(backend.logs(handle, follow=False)) == [
        f"x-tui: run {handle.run_id} did not start:"
        " x-tui stopped before it recorded the launch, which was undone"
    ]
    assert RunStore(tmp_path / "state" / "compute" / "runs").read_all().handles == ()


def spec(name: str, code: str) -> JobSpec:
    return JobSpec(
        name=name,
        tasks=(Task(name="main", argv=("python", "-c", code), timeout_seconds=600.0),),
        timeout_seconds=900.0,
    )


@pytest.fixture
def backend(fake_sky: FakeSky, bucket: str, tmp_path: Path) -> SkyPilotBackend:
    return SkyPilotBackend(
        {
            "sky": str(fake_sky.tool.link),
            "state_dir": str(tmp_path / "state"),
            "bucket": {"outputs_bucket": bucket},
        }
    )


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    return make_locked_project(tmp_path / "bare", {})


def test_a_launch_skypilot_refuses_fails_the_run_and_its_log_says_why(
    fake_sky: FakeSky, backend: SkyPilotBackend, bare_project: Path
) -> None:
    fake_sky.fail("provision", "Failed to acquire resources in all zones in us-central1 for L4:1")
    handle = backend.submit(spec("refused", "print(1)"), project=bare_project)
    assert wait_until_final(backend, handle) is RunState.FAILED
    lines = list(backend.logs(handle, follow=True))
    assert lines == [
        f"x-tui: run {handle.run_id} did not start: the launch failed: ResourcesUnavailableError:"
        " Failed to acquire resources in all zones in us-central1 for L4:1"
    ]
    assert fake_sky.clusters() == []


def test_following_a_pending_launch_shows_provisioning_then_the_job(
    fake_sky: FakeSky, backend: SkyPilotBackend, bare_project: Path
) -> None:
    fake_sky.hold("hold-launch")
    handle = backend.submit(
        spec("follow", "print('the job ran', flush=True)"), project=bare_project
    )
    assert backend.status(handle) is RunState.PENDING
    lines = []
    for line in backend.logs(handle, follow=True):
        lines.append(line)
        if line.startswith("Launching a new cluster"):
            fake_sky.release("hold-launch")  # provisioning goes on once we saw it waiting
    assert lines[0] == f"Launching a new cluster '{handle.details['cluster']}'."
    assert "[main] the job ran" in lines
    assert lines.index(lines[0]) < lines.index("[main] the job ran")
    assert backend.status(handle).is_final


def test_a_run_whose_launch_is_still_going_is_not_peeked_at_until_it_launched(
    fake_sky: FakeSky, backend: SkyPilotBackend, bare_project: Path
) -> None:
    reads: list[str] = []
    read = backend.transport.peek

    def counted(handle: RunHandle, relative: str) -> bytes | None:
        reads.append(relative)
        return read(handle, relative) if not reads[0].startswith("ended") else b"{}"

    backend.transport.peek = counted  # type: ignore[method-assign]
    fake_sky.hold("hold-launch")
    handle = backend.submit(spec("peeked", "print('ran', flush=True)"), project=bare_project)
    assert backend.statuses([handle]) == {handle.run_id: RunState.PENDING}
    # Telemetry and the manifest are asked for every few seconds: nothing is read for them yet.
    for _ in range(5):
        assert backend.peek(handle, "telemetry.jsonl") is None
        assert backend.peek(handle, "manifest.json") is None
    assert reads == []
    fake_sky.release("hold-launch")
    final = wait_until_final(backend, handle, timeout=WAIT_SECONDS)
    assert final is RunState.SUCCEEDED
    reads[:] = ["ended"]  # from here the transport answers without reading the bucket
    assert backend.peek(handle, "manifest.json") == b"{}"  # launched: read as before
    assert reads == ["ended", "manifest.json"]


def test_cancelling_a_pending_launch_cancels_the_request_and_nothing_is_left(
    fake_sky: FakeSky, backend: SkyPilotBackend, bare_project: Path
) -> None:
    fake_sky.hold("hold-launch")
    handle = backend.submit(spec("pending", "print(1)"), project=bare_project)
    wait_for(lambda: fake_sky.requests("launch")[0]["status"] == "RUNNING", "the launch")
    backend.cancel(handle)
    fake_sky.release("hold-launch")
    assert backend.status(handle) is RunState.CANCELLED
    assert fake_sky.requests("launch")[0]["status"] == "CANCELLED"
    assert fake_sky.clusters() == []


def running(backend: SkyPilotBackend, bare_project: Path) -> RunHandle:
    handle = backend.submit(
        spec("slow", "import time; print('sleeping', flush=True); time.sleep(600)"),
        project=bare_project,
    )
    wait_for(lambda: backend.status(handle) is RunState.RUNNING, "the run starting")
    return handle


def test_cancel_attempts_every_step_and_reports_each_failure_together(
    fake_sky: FakeSky, backend: SkyPilotBackend, bare_project: Path
) -> None:
    handle = running(backend, bare_project)
    fake_sky.fail("cancel", "ssh: connect to host 10.0.0.2 port 22: Connection timed out")
    fake_sky.fail("down", "Failed to terminate the instances: PermissionDenied")
    with pytest.raises(CancelFailed) as failed:
        backend.cancel(handle)
    assert isinstance(failed.value, UserError)
    assert isinstance(failed.value, ExceptionGroup)
    assert len(failed.value.exceptions) == 2
    message = str(failed.value)
    assert message.startswith(f"cancelling run {handle.run_id}: 2 of 2 steps failed: ")
    assert "while cancelling the job: CommandError: ssh: connect to host 10.0.0.2" in message
    cluster = handle.details["cluster"]
    assert f"while tearing down {cluster}: CommandError: Failed to terminate" in message
    # Neither the job nor its cluster could be stopped: the run is not called cancelled.
    assert backend.status(handle) is RunState.RUNNING


def test_a_cancel_whose_teardown_failed_still_cancels_the_job_and_says_what_failed(
    fake_sky: FakeSky, backend: SkyPilotBackend, bare_project: Path
) -> None:
    handle = running(backend, bare_project)
    fake_sky.fail("down", "Failed to terminate the instances: PermissionDenied")
    with pytest.raises(CancelFailed) as failed:
        backend.cancel(handle)
    assert (
        f"1 of 2 steps failed: SkyPilot failed while tearing down {handle.details['cluster']}"
        in str(failed.value)
    )
    assert backend.status(handle) is RunState.CANCELLED
    assert fake_sky.clusters() == [handle.details["cluster"]]
    fake_sky.release("fail-down")
    backend.teardown(handle)
    assert fake_sky.clusters() == []
