"""The worker subpackage is what ships, and what the import contract keeps standard library only.

A local run's zipapp also holds this Python's bytecode, which only this Python uses.

The zipapp holds exactly ``x_tui/compute/worker/`` (and the two package markers above it), so a
module moved in or out of the subpackage changes what the remote machine receives; the
import-linter contract in ``pyproject.toml`` forbids the worker every other module of the domain,
so a module added to ``compute/`` must be named there.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from tests.support import oldest_python
from x_tui.compute.worker_bundle import worker_zipapp_bytes, write_worker_zipapp

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "x_tui"


def _archive_names() -> set[str]:
    data = worker_zipapp_bytes()
    archive = zipfile.ZipFile(io.BytesIO(data[data.index(b"PK") :]))
    return set(archive.namelist())


def test_the_zipapp_holds_the_worker_subpackage_and_nothing_else_of_x_tui() -> None:
    expected = {
        "__main__.py",
        "x_tui/__init__.py",
        "x_tui/compute/__init__.py",
        *(
            f"x_tui/compute/worker/{path.name}"
            for path in (PACKAGE / "compute/worker").glob("*.py")
        ),
    }
    assert _archive_names() == expected


def test_the_worker_contract_forbids_every_other_module_of_the_domain() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (worker,) = [c for c in contracts if c.get("source_modules") == ["x_tui.compute.worker"]]
    domain = {
        f"x_tui.compute.{path.stem}"
        for path in (PACKAGE / "compute").glob("*.py")
        if path.stem != "__init__"
    }
    assert domain - set(worker["forbidden_modules"]) == set()


LOAD_MAIN = (
    "import sys; sys.path.insert(0, sys.argv[1]);"
    " import x_tui.compute.worker.main as main; print(main.__file__)"
)


def test_a_local_runs_zipapp_starts_from_this_pythons_bytecode_and_any_other_from_source(
    tmp_path: Path,
) -> None:
    worker = write_worker_zipapp(tmp_path, compiled=True)
    data = worker.read_bytes()
    names = set(zipfile.ZipFile(io.BytesIO(data[data.index(b"PK") :])).namelist())
    sources = {name for name in names if name.startswith("x_tui/") and name.endswith(".py")}
    assert names == {"__main__.py", *sources, *(f"{name}c" for name in sources)}

    def loaded_by(python: str) -> str:
        done = subprocess.run(
            [python, "-I", "-c", LOAD_MAIN, str(worker)], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert loaded_by(sys.executable).endswith("worker.pyz/x_tui/compute/worker/main.pyc")
    oldest = oldest_python()
    if oldest is not None:  # another Python's magic number: the same archive, from source
        assert loaded_by(oldest).endswith("worker.pyz/x_tui/compute/worker/main.py")
        usage = subprocess.run(
            [oldest, "-I", str(worker), "--help"], capture_output=True, text=True, check=True
        )
        assert usage.stdout.startswith("usage: worker.pyz")


def test_the_zipapp_remote_backends_ship_holds_source_only_and_is_the_same_each_build(
    tmp_path: Path,
) -> None:
    assert not any(name.endswith(".pyc") for name in _archive_names())
    shipped = write_worker_zipapp(tmp_path).read_bytes()
    assert shipped != worker_zipapp_bytes(compiled=True)
    # Built again by another process (and another Python): the same bytes, so the same digest,
    # which keys Modal's image layer.
    build = (
        "import sys; from x_tui.compute.worker_bundle import worker_digest; print(worker_digest())"
    )
    here = hashlib.sha256(shipped).hexdigest()[:16]
    pythons = [sys.executable, *([oldest] if (oldest := oldest_python()) else [])]
    for python in pythons:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [python, "-c", build], capture_output=True, text=True, check=True, env=env
        )
        assert done.stdout.strip() == here, python
