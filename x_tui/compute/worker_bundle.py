"""The worker as one zipapp that any Python 3.10+ starts, wherever x-tui is not installed.

Every backend ships the same bytes: ``python worker.pyz --spec spec.json --project . --outputs
DIR``. The archive holds the :mod:`x_tui.compute.worker` subpackage, standard library only, so it
runs inside the user's project environment without x-tui or any of its dependencies.
"""

from __future__ import annotations

import functools
import hashlib
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

WORKER_NAME = "worker.pyz"
"""The file name the worker zipapp is given beside a staged run."""

_PACKAGE = Path(__file__).resolve().parent.parent
_SHIPPED = Path(__file__).resolve().parent / "worker"
"""The worker subpackage: every module in it ships, and nothing else of x-tui."""


def _modules() -> list[Path]:
    """The files the zipapp holds: the package markers above the worker and the subpackage."""
    return [
        _PACKAGE / "__init__.py",
        _PACKAGE / "compute" / "__init__.py",
        *sorted(_SHIPPED.glob("*.py")),
    ]


_MAIN = b"""import sys
from x_tui.compute.worker.run_processes import become_subreaper
from x_tui.compute.worker.main import main
# Whatever a task leaves behind, setsid grandchildren included, stays below the worker. Only here,
# where the worker is a program of its own: main() called inside another process must not make
# that process the subreaper of everything it starts.
become_subreaper()
sys.exit(main())
"""


@functools.cache
def worker_zipapp_bytes() -> bytes:
    """The zipapp's bytes, built once per process from the installed modules."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for module in _modules():
            relative = module.relative_to(_PACKAGE).as_posix()
            info = zipfile.ZipInfo(f"x_tui/{relative}", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, module.read_bytes())
        main = zipfile.ZipInfo("__main__.py", date_time=(2020, 1, 1, 0, 0, 0))
        archive.writestr(main, _MAIN)
    return b"#!/usr/bin/env python3\n" + buffer.getvalue()


def worker_digest() -> str:
    """A short content hash of the zipapp, for image layers and caches keyed on it."""
    return hashlib.sha256(worker_zipapp_bytes()).hexdigest()[:16]


def write_worker_zipapp(
    directory: Path, name: str = WORKER_NAME, *, step: Callable[[str], None] | None = None
) -> Path:
    """Write the worker zipapp into ``directory``, atomically (a partial file, then a rename).

    Args:
        directory: Where to put it (created if missing).
        name: Its file name.
        step: Called after each step (see ``records.write_atomic``).

    Returns:
        The zipapp's path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    partial = directory / f".{name}.partial"
    partial.write_bytes(worker_zipapp_bytes())
    if step is not None:
        step(f"{name}: partial file written")
    partial.chmod(0o755)
    if step is not None:
        step(f"{name}: made executable")
    partial.replace(path)
    if step is not None:
        step(f"{name}: renamed into place")
    return path
