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

Compiling the modules takes about 50 ms, which every ``x-tui run`` and every app's first local
submit would pay: :func:`cached_worker_zipapp` keeps the compiled archive in a directory of
x-tui's state between processes, named by the sources and this interpreter.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import marshal
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from x_tui.compute.worker.record_files import UnreadableRecordError, read_regular_file
from x_tui.compute.worker.records import write_atomic

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


CACHE_LIMIT = 16 * 1024 * 1024
"""The largest cached archive read (the archive is about 200 KB)."""

_CACHE_PREFIX = "worker-"

_PARTIAL_SECONDS = 600.0
"""How old a partial cache file must be to be taken for one a killed process left."""

_OTHER_SOURCES_SECONDS = 7 * 24 * 3600.0
"""How old the archive of other sources (or another Python) must be to be removed: two Pythons
or two installed versions sharing a state directory each keep theirs, and rebuild it at most
once a week, rather than each removing the other's at every write."""


@functools.cache
def _cache_key() -> str:
    """A hash of the shipped sources, their names, this module's own source (which writes the
    archive's ``__main__.py`` and its layout) and this interpreter's bytecode version.

    Taken once per process, as :func:`worker_zipapp_bytes` builds once: a worker module edited
    while an app runs must not have that app's earlier build kept under the edited sources'
    name, where the next process would take it for theirs."""
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    for module in (_PACKAGE / "compute" / "worker_bundle.py", *_modules()):
        digest.update(module.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        source = module.read_bytes()
        digest.update(len(source).to_bytes(8, "little") + source)
    return digest.hexdigest()[:24]


def cached_worker_zipapp(cache_dir: Path) -> bytes:
    """The zipapp with this interpreter's bytecode (``worker_zipapp_bytes(compiled=True)``),
    kept in ``cache_dir`` between processes.

    The file is named by a hash of the sources and this interpreter's magic number, and holds
    the archive's own SHA-256 before it. A file that is missing, not a regular file, too large,
    short or damaged is not used: the archive is built and the file written again (through a
    partial file and a rename). A directory that cannot be read or written costs only the build.
    Archives of other sources, or of another Python, are removed by a write once they are a week
    old.

    Args:
        cache_dir: Where the archive is kept (made when missing).

    Returns:
        The archive's bytes.
    """
    path = cache_dir / f"{_CACHE_PREFIX}{_cache_key()}.pyz"
    try:
        kept = read_regular_file(path, max_bytes=CACHE_LIMIT)
    except (OSError, UnreadableRecordError):
        kept = b""
    digest, archive = kept[:32], kept[32:]
    if archive and hashlib.sha256(archive).digest() == digest:
        return archive
    archive = worker_zipapp_bytes(compiled=True)
    with contextlib.suppress(OSError):  # no cache: the next process builds it again
        _keep(path, hashlib.sha256(archive).digest() + archive)
    return archive


def _keep(path: Path, data: bytes) -> None:
    """Write ``path`` through a partial file and a rename (``write_atomic``); remove the archives
    of other sources written over a week ago and the partial files of writers killed midway."""
    write_atomic(path, data)
    now = time.time()
    for other in path.parent.glob(f"{_CACHE_PREFIX}*.pyz"):
        with contextlib.suppress(OSError):
            if other.name != path.name and other.lstat().st_mtime < now - _OTHER_SOURCES_SECONDS:
                other.unlink()
    stale = now - _PARTIAL_SECONDS  # a writer killed midway; a live one's is younger
    for partial_left in path.parent.glob(f".{_CACHE_PREFIX}*"):
        with contextlib.suppress(OSError):
            if partial_left.lstat().st_mtime < stale:
                partial_left.unlink()


def worker_digest() -> str:
    """A short content hash of the zipapp, for image layers and caches keyed on it."""
    return hashlib.sha256(worker_zipapp_bytes()).hexdigest()[:16]


def write_worker_zipapp(
    directory: Path,
    name: str = WORKER_NAME,
    *,
    compiled: bool = False,
    cache_dir: Path | None = None,
    step: Callable[[str], None] | None = None,
) -> Path:
    """Write the worker zipapp into ``directory``, atomically (a partial file, then a rename).

    Args:
        directory: Where to put it (created if missing).
        name: Its file name.
        compiled: Whether it holds this interpreter's bytecode too (for a worker started on
            this machine; see the module documentation).
        cache_dir: With ``compiled``, where the compiled archive is kept between processes
            (:func:`cached_worker_zipapp`).
        step: Called after each step (see ``records.write_atomic``).

    Returns:
        The zipapp's path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    partial = directory / f".{name}.partial"
    if compiled and cache_dir is not None:
        partial.write_bytes(cached_worker_zipapp(cache_dir))
    else:
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
