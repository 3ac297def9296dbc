"""The BackendContract, passed by the modal backend against the fake ``modal`` package."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.compute.backend import ComputeBackend
from x_tui.testing.contract import BackendContract

from .fake_modal import fixtures as modal_fixtures

fake = modal_fixtures.fake_modal
pytestmark = pytest.mark.usefixtures("fake")


class TestModalBackendOnTheFake(BackendContract):
    """Every contract test, on Modal as the fake stands in for it."""

    def make_backend(self, state_dir: Path) -> ComputeBackend:
        """A modal backend keeping its state under ``state_dir``."""
        backend = ModalBackend({"outputs_volume": "contract-runs", "state_dir": str(state_dir)})
        backend.poll_seconds = 0.2
        backend.drain_seconds = 0.5
        return backend
