"""The BackendContract, passed by the skypilot backend with each transport, on the fake SkyPilot.

The fake ``sky`` runs in an interpreter of its own, found beside a fake ``sky`` command as the
real one is; it launches each task on this machine (workdir, ``uv sync --frozen``, the worker).
The bucket transport writes to a real S3-compatible server (moto) on 127.0.0.1 and fetches with
the ``aws`` CLI; the copy transport runs the worker under bubblewrap and fetches over a real
``sshd`` on 127.0.0.1 with rsync.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from x_tui.backends.skypilot import SkyPilotBackend
from x_tui.compute.backend import ComputeBackend
from x_tui.testing import SCRIPTS, BackendContract

from .fake_sky.harness import (
    FakeSky,
    S3Server,
    SkyTool,
    SshServer,
    install_fake_sky,
    make_locked_project,
    make_sky_tool,
    outside_tmp_dir,
    s3_missing,
    ssh_missing,
    start_moto,
    start_sshd,
)


@pytest.fixture(scope="session")
def sky_tool(tmp_path_factory: pytest.TempPathFactory) -> SkyTool:
    """The fake SkyPilot's tool environment, made once."""
    return make_sky_tool(tmp_path_factory.mktemp("sky-tool"))


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, for the session."""
    missing = s3_missing()
    if missing:
        pytest.skip(f"the bucket transport's contract needs an S3 server here: {missing}")
    yield from start_moto(tmp_path_factory.mktemp("moto"))


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real sshd on 127.0.0.1, for the session."""
    missing = ssh_missing()
    if missing:
        pytest.skip(f"the copy transport's contract needs sshd, rsync and bubblewrap: {missing}")
    yield from start_sshd(tmp_path_factory.mktemp("sshd"))


@pytest.fixture
def outside_tmp(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A fresh directory that is not under /tmp, for fake clusters whose worker gets its own /tmp.

    The copy transport's sandbox mounts a fresh /tmp, which would hide a cluster home under it;
    a real cluster's home is never there.
    """
    yield from outside_tmp_dir(request, tmp_path.name)


class TestSkyPilotBucketTransport(BackendContract):
    """Every contract test, outputs on an s3:// bucket SkyPilot mounts."""

    settings: dict[str, object]

    @pytest.fixture(autouse=True)
    def fake_sky(
        self,
        sky_tool: SkyTool,
        s3: S3Server,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> Iterator[FakeSky]:
        """A fresh fake SkyPilot and bucket for each test."""
        for name, value in s3.environment.items():
            monkeypatch.setenv(name, value)
        bucket = s3.make_bucket(f"runs-{tmp_path.name.lower().replace('_', '-')[-40:]}")
        self.settings = {"sky": str(sky_tool.link), "bucket": {"outputs_bucket": bucket}}
        yield from install_fake_sky(sky_tool, tmp_path / "fake-sky", monkeypatch)

    @pytest.fixture
    def project(self, tmp_path: Path) -> Path:
        """The contract's scripts in a project with a uv.lock, as the backend requires."""
        return make_locked_project(tmp_path / "project", SCRIPTS)

    def make_backend(self, state_dir: Path) -> ComputeBackend:
        """A skypilot backend keeping its state under ``state_dir``."""
        return SkyPilotBackend({**self.settings, "state_dir": str(state_dir)})


class TestSkyPilotCopyTransport(BackendContract):
    """Every contract test, inputs copied and outputs fetched over SSH, the worker in bwrap."""

    settings: dict[str, object]

    @pytest.fixture(autouse=True)
    def fake_sky(
        self,
        sky_tool: SkyTool,
        sshd: SshServer,
        outside_tmp: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> Iterator[FakeSky]:
        """A fresh fake SkyPilot whose clusters are reached through the test sshd."""
        self.settings = {"sky": str(sky_tool.link), "copy": {"lifetime_minutes": 30}}
        for fake in install_fake_sky(sky_tool, outside_tmp, monkeypatch):
            sshd.configure(fake)
            yield fake

    @pytest.fixture
    def project(self, tmp_path: Path) -> Path:
        """The contract's scripts in a project with a uv.lock, as the backend requires."""
        return make_locked_project(tmp_path / "project", SCRIPTS)

    def make_backend(self, state_dir: Path) -> ComputeBackend:
        """A skypilot backend keeping its state under ``state_dir``."""
        return SkyPilotBackend({**self.settings, "state_dir": str(state_dir)})
