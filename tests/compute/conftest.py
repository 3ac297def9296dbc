"""Fixtures for the compute layer's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.compute.store import RunStore


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    """An empty run store, where a state directory keeps it (``state/compute/runs``)."""
    runs = tmp_path / "state" / "compute" / "runs"
    runs.mkdir(parents=True)
    return RunStore(runs)
