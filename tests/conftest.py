"""What every test gets: files of its own.

The suite runs in parallel (``pytest-xdist``, see ``addopts`` in pyproject.toml), so no test may
touch a file another test (or the user) also uses: each test's run store, settings file and demo
copy are under its own ``tmp_path``, whatever the test itself sets. Session fixtures that start a
server (sshd, moto) or make an environment (the fake SkyPilot) run once per worker, on a free port
and under that worker's own temporary directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def own_user_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run store, settings file and demo directory of this test alone."""
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))
    monkeypatch.setenv("X_TUI_DEMO_DIR", str(tmp_path / "demo"))
