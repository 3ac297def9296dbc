"""The BackendContract, passed by the modal backend against the fake ``modal`` package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from x_tui.backends.modal import ModalBackend
from x_tui.compute.backend import ComputeBackend
from x_tui.testing import BackendContract

from .fake_modal.harness import FakeModal, install_fake_modal


@pytest.fixture(autouse=True)
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModal]:
    """The fake ``modal``, installed for each test."""
    yield from install_fake_modal(tmp_path, monkeypatch)


class TestModalBackendOnTheFake(BackendContract):
    """Every contract test, on Modal as the fake stands in for it."""

    def make_backend(self, state_dir: Path) -> ComputeBackend:
        """A modal backend keeping its state under ``state_dir``."""
        backend = ModalBackend({"outputs_volume": "contract-runs", "state_dir": str(state_dir)})
        backend.poll_seconds = 0.2
        backend.drain_seconds = 0.5
        return backend
