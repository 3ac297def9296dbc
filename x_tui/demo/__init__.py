"""The bundled demo project (``x_tui/demo/project``), copied to a writable place to be run.

``x-tui demo`` opens it: jobs that run on this machine in seconds with the standard library only
(``hello`` succeeds and writes outputs, ``flaky`` fails one task among passing ones, ``long``
prints a line a second for two minutes to be cancelled, ``progress`` draws a ``\\r`` progress bar
in colour). The package's copy is never run in place (it may be read-only, and runs write next
to the project); it is copied once, and the copy's local backend is pointed at the interpreter
running x-tui, since the scripts need nothing else.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

BUNDLED = Path(__file__).resolve().parent / "project"
"""The demo project as shipped in the package."""

DEMO_DIR_ENV = "X_TUI_DEMO_DIR"
"""Overrides where the demo project is copied to (tests point it at a temporary directory)."""


def demo_dir() -> Path:
    """Where the demo is copied: ``$X_TUI_DEMO_DIR``, else ``<user data dir>/x-tui/demo``."""
    explicit = os.environ.get(DEMO_DIR_ENV)
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_data_dir("x-tui")) / "demo"


def prepare_demo_project() -> Path:
    """Copy the demo project to :func:`demo_dir` unless it is there, and return the copy.

    A copy made earlier is kept as the user left it, except that its local backend's ``python``
    is set to the interpreter running x-tui now (a new virtual environment moves it).

    Returns:
        The copy's root, which holds its ``pyproject.toml``.

    Raises:
        OSError: If the copy cannot be written.
    """
    target = demo_dir()
    if not (target / "pyproject.toml").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".demo-", dir=target.parent))
        try:
            shutil.copytree(
                BUNDLED,
                staging / "project",
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )
            if target.exists():
                shutil.rmtree(target)
            (staging / "project").rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _point_at_this_python(target / "pyproject.toml")
    return target


def _point_at_this_python(pyproject: Path) -> None:
    import tomlkit

    document = tomlkit.parse(pyproject.read_text(encoding="utf-8"))
    compute = (
        document.setdefault("tool", tomlkit.table())
        .setdefault("substrax", tomlkit.table())
        .setdefault("compute", tomlkit.table())
    )
    backends = compute.setdefault("backends", tomlkit.table())
    local = backends.setdefault("local", tomlkit.table())
    if local.get("python") == sys.executable:
        return
    local["python"] = sys.executable
    pyproject.write_text(tomlkit.dumps(document), encoding="utf-8")
