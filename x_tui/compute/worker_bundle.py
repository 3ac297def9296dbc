"""The worker as one zipapp that any Python 3.10+ starts, wherever x-tui is not installed.

Every backend ships the same bytes: ``python worker.pyz --spec spec.json --project . --outputs
DIR``. The archive holds the :mod:`x_tui.compute.worker` subpackage, standard library only, so it
runs inside the user's project environment without x-tui or any of its dependencies.

A zipapp's modules cannot have their bytecode cached beside them, so each start compiles the
worker's source again (about 0.1 CPU s). The local backend's zipapp therefore also holds each
module compiled by this interpreter (``name.pyc`` beside ``name.py``, unchecked-hash). zipimport
takes the ``.pyc`` when the Python running the worker has this one's magic number, and passes
over it to the source otherwise, so the same archive still runs on any Python 3.10+. The zipapp
the remote backends ship holds source only: its bytes, and so its digest, are the same whatever
Python built it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import marshal
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


_UNCHECKED_HASH = (1).to_bytes(4, "little")
"""The flags of a hash-based ``.pyc`` whose source is never checked (PEP 552)."""


def _bytecode(source: bytes, name: str) -> bytes:
    """``source`` compiled by this interpreter, as an unchecked-hash ``.pyc`` file's bytes."""
    code = compile(source, name, "exec", dont_inherit=True)
    return (
        importlib.util.MAGIC_NUMBER
        + _UNCHECKED_HASH
        + importlib.util.source_hash(source)
        + marshal.dumps(code)
    )


@functools.cache
def worker_zipapp_bytes(*, compiled: bool = False) -> bytes:
    """The zipapp's bytes, built once per process from the installed modules.

    Args:
        compiled: Whether it also holds each module's bytecode for this interpreter (see the
            module documentation).
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def add(name: str, data: bytes) -> None:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)

        for module in _modules():
            name = f"x_tui/{module.relative_to(_PACKAGE).as_posix()}"
            source = module.read_bytes()
            add(name, source)
            if compiled:
                add(f"{name}c", _bytecode(source, name))
        add("__main__.py", _MAIN)
    return b"#!/usr/bin/env python3\n" + buffer.getvalue()


def worker_digest() -> str:
    """A short content hash of the zipapp, for image layers and caches keyed on it."""
    return hashlib.sha256(worker_zipapp_bytes()).hexdigest()[:16]


def write_worker_zipapp(
    directory: Path,
    name: str = WORKER_NAME,
    *,
    compiled: bool = False,
    step: Callable[[str], None] | None = None,
) -> Path:
    """Write the worker zipapp into ``directory``, atomically (a partial file, then a rename).

    Args:
        directory: Where to put it (created if missing).
        name: Its file name.
        compiled: Whether it holds this interpreter's bytecode too (for a worker started on
            this machine; see the module documentation).
        step: Called after each step (see ``records.write_atomic``).

    Returns:
        The zipapp's path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    partial = directory / f".{name}.partial"
    partial.write_bytes(worker_zipapp_bytes(compiled=compiled))
    if step is not None:
        step(f"{name}: partial file written")
    partial.chmod(0o755)
    if step is not None:
        step(f"{name}: made executable")
    partial.replace(path)
    if step is not None:
        step(f"{name}: renamed into place")
    return path
