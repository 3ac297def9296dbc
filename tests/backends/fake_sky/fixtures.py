"""Pytest fixtures of the skypilot tests, registered for the whole suite by ``tests/conftest.py``.

``sky_tool`` is the fake SkyPilot's tool environment; ``fake_sky`` a fresh fake SkyPilot state
for one test (``fake_sky_over_ssh``: its clusters reached over ``sshd``); ``s3`` moto's
server and ``sshd`` a real sshd, both on 127.0.0.1 for the session,
skipped with the reason when their programs are missing; ``outside_tmp`` a directory not under
/tmp, for fake clusters whose worker runs in a sandbox with a /tmp of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import (
    FakeSky,
    S3Server,
    SkyTool,
    SshServer,
    install_fake_sky,
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


@pytest.fixture
def fake_sky(
    sky_tool: SkyTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeSky]:
    """A fresh fake SkyPilot (its API server state) for one test."""
    yield from install_fake_sky(sky_tool, tmp_path / "fake-sky", monkeypatch)


@pytest.fixture
def fake_sky_over_ssh(
    sky_tool: SkyTool, sshd: SshServer, outside_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeSky]:
    """A fresh fake SkyPilot whose clusters are reached over the real ``sshd`` (the copy
    transport), their homes outside /tmp; a module using it also binds ``sshd`` and
    ``outside_tmp``."""
    for found in install_fake_sky(sky_tool, outside_tmp / "sky", monkeypatch):
        sshd.configure(found)
        yield found


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, for the session."""
    missing = s3_missing()
    if missing:
        pytest.skip(f"the bucket transport's tests need an S3 server here: {missing}")
    yield from start_moto(tmp_path_factory.mktemp("moto"))


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real sshd on 127.0.0.1, for the session."""
    missing = ssh_missing()
    if missing:
        pytest.skip(f"the copy transport's tests need sshd, rsync and bubblewrap: {missing}")
    yield from start_sshd(tmp_path_factory.mktemp("sshd"))


@pytest.fixture
def outside_tmp(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory that is not under /tmp, removed afterwards.

    The copy transport's sandbox mounts a fresh /tmp, which would hide a fake cluster's home
    under it; a real cluster's home is never there.
    """
    yield from outside_tmp_dir(tmp_path.name)
