"""Installs the fake ``modal`` package for one test, and reads what it recorded.

The fake is importable only while a test uses it: its directory goes first on ``sys.path`` and
in ``PYTHONPATH`` (so child interpreters import it too), any ``modal`` already imported is set
aside and put back afterwards, and every container it started is killed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

FAKE_DIR = Path(__file__).resolve().parent
"""The directory holding the fake ``modal`` package."""

TOKEN = {"MODAL_TOKEN_ID": "ak-fake-token", "MODAL_TOKEN_SECRET": "as-fake-secret"}
"""A token the fake accepts."""

_MODAL_VARIABLES = (
    "MODAL_TOKEN_ID",
    "MODAL_TOKEN_SECRET",
    "MODAL_PROFILE",
    "MODAL_OAUTH_REFRESH_TOKEN",
    "MODAL_OAUTH_CLIENT_ID",
    "MODAL_OAUTH_CLIENT_SECRET",
    "MODAL_SERVER_URL",
    "MODAL_ENVIRONMENT",
    "FAKE_MODAL_UNREACHABLE",
    "FAKE_MODAL_BUILDER_VERSION",
    "FAKE_MODAL_APP_LINGERS",
    "FAKE_MODAL_BUILD_SECONDS",
)


@dataclass
class FakeModal:
    """The installed fake and its state directory."""

    root: Path
    module: ModuleType

    def api_calls(self) -> list[dict[str, Any]]:
        """Every recorded API call and RPC, in order."""
        path = self.root / "api.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def rpcs(self) -> list[str]:
        """The calls that reached the (fake) server."""
        return [record["rpc"] for record in self.api_calls() if "rpc" in record]

    def last(self) -> dict[str, Any]:
        """What was last built, as the fake recorded it (also across processes)."""
        data: dict[str, Any] = json.loads((self.root / "last.json").read_text())
        return data

    def volume(self, name: str) -> Path:
        """The directory of a Volume."""
        return self.root / "volumes" / name

    def app_log(self, app_id: str) -> str:
        """What the app's containers printed."""
        return (self.root / "apps" / f"{app_id}.log").read_text(errors="replace")

    def account(self) -> str:
        """Each call's container and result, and the end of each app's log: what a test that
        failed prints, so that a container that ended unasked for says how (bounded reads)."""
        lines: list[str] = []
        for record in sorted((self.root / "calls").glob("*.json")):
            data = json.loads(record.read_text())
            result = record.with_suffix(".result")
            settled = result.read_text()[:500] if result.exists() else "none yet"
            lines.append(f"call {record.stem}: pid {data['pid']}, result {settled}")
        for log in sorted((self.root / "apps").glob("*.log")):
            with log.open("rb") as file:
                file.seek(max(0, log.stat().st_size - 3000))
                tail = file.read().decode(errors="replace")
            lines.append(f"{log.name} ends:\n{tail}")
        return "\n".join(lines) or "no call was spawned"

    def kill_all(self) -> None:
        """Kill every container the fake started."""
        kill_container = self.module._fake.kill_container
        for record in (self.root / "calls").glob("*.json"):
            kill_container(int(json.loads(record.read_text())["pid"]))


def _forget_modal() -> dict[str, ModuleType]:
    found = {
        name: module
        for name, module in sys.modules.items()
        if name == "modal" or name.startswith("modal.")
    }
    for name in found:
        del sys.modules[name]
    return found


def install_fake_modal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModal]:
    """Make ``import modal`` give the fake, with a token configured, for one test.

    Yields:
        The fake.
    """
    saved = _forget_modal()
    root = tmp_path / "fake-modal"
    root.mkdir()
    for name in _MODAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in TOKEN.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "no-modal.toml"))
    monkeypatch.setenv("FAKE_MODAL_ROOT", str(root))
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "default-state"))
    existing = os.environ.get("PYTHONPATH")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(FAKE_DIR), *([existing] if existing else [])])
    )
    monkeypatch.syspath_prepend(str(FAKE_DIR))
    import modal

    assert Path(modal.__file__).resolve().is_relative_to(FAKE_DIR), modal.__file__
    fake = FakeModal(root=root, module=modal)
    try:
        yield fake
    finally:
        fake.kill_all()
        _forget_modal()
        sys.modules.update(saved)


PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = []

[project.optional-dependencies]
cuda12 = []

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
"""
"""A small packaged project's ``pyproject.toml``."""


def make_project(root: Path, scripts: dict[str, str], *, pyproject: str | None = PYPROJECT) -> Path:
    """A project with ``scripts/<name>.py`` for each script, and a ``pyproject.toml``.

    Args:
        root: The project's directory (created).
        scripts: Each script's text, by name.
        pyproject: The ``pyproject.toml``; none when ``None``.

    Returns:
        ``root``.
    """
    (root / "scripts").mkdir(parents=True)
    for name, text in scripts.items():
        (root / "scripts" / f"{name}.py").write_text(text, encoding="utf-8")
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return root
