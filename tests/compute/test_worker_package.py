"""The worker subpackage is what ships, and what the import contract keeps standard library only.

The zipapp holds exactly ``x_tui/compute/worker/`` (and the two package markers above it), so a
module moved in or out of the subpackage changes what the remote machine receives; the
import-linter contract in ``pyproject.toml`` forbids the worker every other module of the domain,
so a module added to ``compute/`` must be named there.
"""

from __future__ import annotations

import io
import tomllib
import zipfile
from pathlib import Path

from x_tui.compute.worker_bundle import worker_zipapp_bytes

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
