"""The TUI tests' fixtures: a private state directory, a project whose local backend runs this
interpreter, and ``leftovers``, which cancels the runs a test left going. The app on them, and the
helpers that write runs, are ``tests.app.app_support``'s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.app_support import pyproject_text
from x_tui.compute import operations
from x_tui.compute.store import RunStore


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state directory (``SUBSTRAX_STATE_DIR``) and no user settings file."""
    state = tmp_path / "state"
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(state))
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))
    monkeypatch.setenv("X_TUI_DEMO_DIR", str(tmp_path / "demo"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return state


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project named ``sample`` with the jobs ``quick`` and ``second``."""
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject_text(), encoding="utf-8")
    return root


@pytest.fixture
def leftovers(state_dir: Path) -> Iterator[None]:
    """Cancel every run still going once the test is over, so no sleeper outlives it."""
    yield
    for handle in RunStore(state_dir / "compute" / "runs").read_all().handles:
        try:
            backend = operations.backend_for(handle)
            if not backend.status(handle).is_final:
                backend.cancel(handle)
        except Exception as error:  # leave the test's own failure in front
            print(f"could not cancel {handle.run_id}: {error}", file=sys.stderr)
