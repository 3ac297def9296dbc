"""The bucket transport against a real S3-compatible server (moto) on 127.0.0.1 and the aws CLI.

SkyPilot mounts the bucket on the cluster (the fake syncs a directory to it while the job runs);
x-tui fetches it with ``aws s3``, and ``gcloud storage`` for ``gs://``, and peeks through the
bridge's interpreter where SkyPilot's environment has the cloud's SDK (else with the tool). The
outputs outlive the cluster, which SkyPilot removes as soon as the job ends.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.bridge import bridge_pids, close_bridges
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import BackendUnavailableError, ProviderError
from x_tui.compute.worker.spec import JobSpec, Task
from x_tui.testing.contract import wait_until_final

from .fake_sky.harness import (
    FakeSky,
    S3Server,
    SkyTool,
    install_fake_sky,
    make_locked_project,
    make_sky_tool,
)

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test: real processes, sshd or S3


PROGRESS = (
    "import os, pathlib, sys, time\n"
    "out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'])\n"
    "(out / 'progress.txt').write_text('epoch 2')\n"
    "print('trained', flush=True)\n"
    "print('a warning', file=sys.stderr, flush=True)\n"
    "while not pathlib.Path('stop').exists() and len(sys.argv) > 1:\n"
    "    time.sleep(0.1)\n"
)


@pytest.fixture
def bucket(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    return s3.make_bucket(f"bucket-{tmp_path.name.lower().replace('_', '-')[-40:]}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_locked_project(tmp_path / "project", {"progress": PROGRESS})


def make_backend(fake: FakeSky, tmp_path: Path, outputs: str) -> SkyPilotBackend:
    return SkyPilotBackend(
        {
            "sky": str(fake.tool.link),
            "state_dir": str(tmp_path / "state"),
            "bucket": {"outputs_bucket": outputs},
        }
    )


def job(*argv: str) -> JobSpec:
    return JobSpec(
        name="trained",
        tasks=(Task(name="train", argv=argv, timeout_seconds=120.0),),
        timeout_seconds=180.0,
    )


def gone(fake: FakeSky, handle: RunHandle) -> None:
    """Wait until SkyPilot removed the cluster after its job (autodown)."""
    deadline = time.monotonic() + 60
    while not fake.launches() or handle.details["cluster"] in fake.clusters():
        assert time.monotonic() < deadline, "the cluster was never removed"
        time.sleep(0.1)


def test_peek_reads_a_running_runs_file_from_the_bucket(
    fake_sky: FakeSky, bucket: str, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake_sky, tmp_path, bucket)
    handle = backend.submit(job("python", "scripts/progress.py", "wait"), project=project)
    deadline = time.monotonic() + 120
    while (found := backend.peek(handle, "train/progress.txt")) is None:
        assert time.monotonic() < deadline, "progress.txt never reached the bucket"
        time.sleep(0.2)
    assert found == b"epoch 2"
    assert backend.status(handle) is RunState.RUNNING
    assert backend.peek(handle, "train/nothing.txt") is None
    with pytest.raises(ValueError, match="not a path inside"):
        backend.peek(handle, "../other-run/manifest.json")
    backend.cancel(handle)


def test_once_the_cluster_is_gone_the_bucket_answers_for_the_run_and_its_lines(
    fake_sky: FakeSky, bucket: str, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake_sky, tmp_path, bucket)
    handle = backend.submit(job("python", "scripts/progress.py"), project=project)
    gone(fake_sky, handle)
    fresh = make_backend(fake_sky, tmp_path, bucket)
    assert fresh.status(handle) is RunState.SUCCEEDED
    assert list(fresh.logs(handle, follow=False)) == ["[train] trained", "[train] a warning"]
    final = json.loads((fresh.runs / handle.run_id / "final.json").read_text())
    assert final == {"state": "succeeded", "seen": "outputs"}


def test_a_run_that_left_nothing_in_the_bucket_fails_and_cannot_be_fetched(
    fake_sky: FakeSky, bucket: str, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake_sky, tmp_path, bucket)
    fake_sky.fail("provision", "Failed to acquire resources")
    handle = backend.submit(job("python", "scripts/progress.py"), project=project)
    assert wait_until_final(backend, handle) is RunState.FAILED
    with pytest.raises(ProviderError, match=rf"{bucket}/{handle.run_id} holds no outputs"):
        backend.fetch(handle, tmp_path / "fetched")


def test_fetching_without_the_aws_cli_says_how_to_get_it(
    fake_sky: FakeSky, bucket: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = make_backend(fake_sky, tmp_path, bucket)
    handle = backend.submit(job("python", "scripts/progress.py"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BackendUnavailableError) as refused:
        backend.fetch(handle, tmp_path / "fetched")
    message = str(refused.value)
    assert f"downloading {bucket}/{handle.run_id} needs the 'aws' command" in message
    assert "uv tool install awscli" in message


def test_a_gs_bucket_is_fetched_with_gcloud_storage_rsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    gcloud = tmp_path / "bin" / "gcloud"
    gcloud.parent.mkdir()
    # The network boundary: a gcloud that records its command and "downloads" one manifest.
    gcloud.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {calls}\n'
        'for last in "$@"; do :; done\n'
        'mkdir -p "$last" && echo "{}" > "$last/manifest.json"\n'
    )
    gcloud.chmod(0o755)
    monkeypatch.setenv("PATH", f"{gcloud.parent}{os.pathsep}{os.environ['PATH']}")
    backend = SkyPilotBackend({"bucket": {"outputs_bucket": "gs://team-runs/x-tui/"}})
    handle = RunHandle(
        run_id="trained-20260101T000000Z-abcdef",
        backend="skypilot",
        job="trained",
        project=str(tmp_path),
        submitted_at=dt.datetime.now(dt.UTC),
        settings={},
        details={"cluster": "sx-trained-20260101t000000z-abcdef"},
    )
    target = backend.fetch(handle, tmp_path / "fetched")
    assert calls.read_text().split() == [
        "storage",
        "rsync",
        "--recursive",
        "gs://team-runs/x-tui/trained-20260101T000000Z-abcdef",
        str(target),
    ]
    assert (target / "manifest.json").exists()


@pytest.fixture(scope="module")
def sky_tool_without_sdk(tmp_path_factory: pytest.TempPathFactory) -> SkyTool:
    """The fake SkyPilot installed without a cloud extra: no boto3 in its environment."""
    return make_sky_tool(tmp_path_factory.mktemp("sky-bare"), aws_sdk=False)


@pytest.fixture
def fake_sky_without_sdk(
    sky_tool_without_sdk: SkyTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeSky]:
    """A fresh fake SkyPilot without boto3."""
    yield from install_fake_sky(sky_tool_without_sdk, tmp_path / "fake-sky", monkeypatch)


def counted_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put an ``aws`` first on ``PATH`` that notes each start in the returned file."""
    started = tmp_path / "aws-started"
    aws = tmp_path / "bin" / "aws"
    aws.parent.mkdir()
    aws.write_text(f'#!/bin/sh\necho x >> {started}\nexec {shutil.which("aws")} "$@"\n')
    aws.chmod(0o755)
    monkeypatch.setenv("PATH", f"{aws.parent}{os.pathsep}{os.environ['PATH']}")
    return started


def test_peeks_read_through_the_bridge_and_start_no_tool_per_read(
    sky_tool: SkyTool, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SKY_ROOT", str(tmp_path / "fake-sky"))
    close_bridges()
    started = counted_aws(tmp_path, monkeypatch)  # counts every aws the peeks would start
    backend = SkyPilotBackend(
        {
            "sky": str(sky_tool.link),
            "state_dir": str(tmp_path / "state"),
            "bucket": {"outputs_bucket": bucket},
        }
    )
    handle = RunHandle(
        run_id="peeked-20260101T000000Z-abcdef",
        backend="skypilot",
        job="peeked",
        project=str(tmp_path),
        submitted_at=dt.datetime.now(dt.UTC),
        settings={},
        details={"cluster": "sx-peeked-20260101t000000z-abcdef"},
    )
    boto3.client("s3").put_object(
        Bucket=bucket.removeprefix("s3://"), Key=f"{handle.run_id}/manifest.json", Body=b"{}"
    )
    for _ in range(10):  # the manifest, devices and attempts of a run, read again and again
        assert backend.peek(handle, "manifest.json") == b"{}"
        assert backend.peek(handle, "devices.log") is None
    assert not started.exists()  # no aws command was started for any read
    assert len(bridge_pids()) == 1  # all came through one interpreter


def test_without_the_clouds_sdk_in_skypilots_environment_peeks_use_the_cli(
    fake_sky_without_sdk: FakeSky, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    close_bridges()
    started = counted_aws(tmp_path, monkeypatch)
    backend = make_backend(fake_sky_without_sdk, tmp_path, bucket)
    handle = RunHandle(
        run_id="peeked-20260101T000000Z-abcdef",
        backend="skypilot",
        job="peeked",
        project=str(tmp_path),
        submitted_at=dt.datetime.now(dt.UTC),
        settings={},
        details={"cluster": "sx-peeked-20260101t000000z-abcdef"},
    )
    boto3.client("s3").put_object(
        Bucket=bucket.removeprefix("s3://"), Key=f"{handle.run_id}/manifest.json", Body=b"[]"
    )
    assert backend.peek(handle, "manifest.json") == b"[]"
    assert backend.peek(handle, "devices.log") is None
    assert len(started.read_text().split()) == 2  # one aws per read
