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

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.compute.backend import ComputeBackend
from x_tui.testing.contract import SCRIPTS, BackendContract

from .fake_sky.harness import (
    FakeSky,
    S3Server,
    SkyTool,
    SshServer,
    install_fake_sky,
    make_locked_project,
)

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test: real processes, sshd or S3


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
