"""The BackendContract against the real Modal service, for a user with a Modal account.

Skipped unless a Modal token is configured (``modal token new``, or ``MODAL_TOKEN_ID`` and
``MODAL_TOKEN_SECRET``). Run it with::

    uv run pytest -m modal tests/backends/test_modal_real.py

The runs' outputs go to the Volume ``$X_TUI_MODAL_TEST_VOLUME`` (``x-tui-contract`` by default),
created when missing. Each test starts a small CPU-only app; the first one builds the image.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.backends.modal.credentials import require_credentials
from x_tui.compute.backend import ComputeBackend
from x_tui.compute.worker.errors import BackendUnavailableError
from x_tui.testing.contract import BackendContract

pytestmark = pytest.mark.modal


def _token_problem() -> str | None:
    try:
        require_credentials()
    except BackendUnavailableError as error:
        return str(error)
    return None


@pytest.fixture(autouse=True)
def needs_a_token() -> None:
    """Skip, saying why, when no Modal token is configured here."""
    problem = _token_problem()
    if problem is not None:
        pytest.skip(problem)


class TestModalBackendOnModal(BackendContract):
    """Every contract test, on Modal itself."""

    def make_backend(self, state_dir: Path) -> ComputeBackend:
        """A modal backend writing to the test Volume, keeping its state under ``state_dir``."""
        volume = os.environ.get("X_TUI_MODAL_TEST_VOLUME", "x-tui-contract")
        return ModalBackend({"outputs_volume": volume, "state_dir": str(state_dir)})
