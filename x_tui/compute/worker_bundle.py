"""The worker as one zipapp that any Python 3.10+ starts, wherever x-tui is not installed.

Every backend ships the same bytes: ``python worker.pyz --spec spec.json --project . --outputs
DIR``. The archive holds only the standard-library modules the worker needs, so it runs inside
the user's project environment without x-tui or any of its dependencies.
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
_MODULES = (
    "__init__.py",
    "compute/__init__.py",
    "compute/records.py",
    "compute/errors.py",
    "compute/record_files.py",
    "compute/spec.py",
    "compute/manifest.py",
    "compute/worker.py",
    "compute/probe.py",
    "compute/children.py",
    "compute/environment.py",
    "compute/run_processes.py",
    "compute/attempts.py",
    "compute/echo.py",
    "compute/line_assembly.py",
    "compute/log_times.py",
    "compute/log_metrics.py",
    "compute/telemetry.py",
)
_MAIN = b"""import sys
from x_tui.compute.run_processes import become_subreaper
from x_tui.compute.worker import main
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
        for relative in _MODULES:
            info = zipfile.ZipInfo(f"x_tui/{relative}", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (_PACKAGE / relative).read_bytes())
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
