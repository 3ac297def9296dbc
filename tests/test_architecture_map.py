"""``docs/architecture.md`` names every module of x-tui, and only files that exist, so the map
stays whole and true as the code changes.

A module is on the map when the page names its file (``run_follower.py``, or a pattern such as
``_log_*.py``); a backend's modules may instead be named by their stem in that backend's entry of
the package listing under "Backends" (``local/   backend, process, plan, ...``). Package
``__init__`` files and the demo project's own job scripts are not modules of the map.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "x_tui"
MAP = ROOT / "docs" / "architecture.md"

NOT_MAPPED = ("demo/project/",)
"""Files under these folders of ``x_tui`` are data of the demo, not x-tui's modules."""


def files_named(text: str) -> set[str]:
    """Every ``name.py`` (or ``pattern*.py``) the page names, without its folders."""
    return {match.rsplit("/", 1)[-1] for match in re.findall(r"[\w*/]+\.py\b", text)}


def backend_listing(text: str) -> dict[str, set[str]]:
    """Each backend package's words in the listing under "Backends": ``{"local": {...}}``."""
    section = text.split("## Backends", 1)[1]
    block = section.split("```", 2)[1]
    listing: dict[str, set[str]] = {}
    words: set[str] = set()
    for line in block.splitlines():
        start = re.match(r"^(\w+)/\s", line)
        if start:
            words = listing.setdefault(start.group(1), set())
        words.update(re.findall(r"\w+", line))
    return listing


def modules() -> list[Path]:
    """x-tui's modules, as paths relative to the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or "__pycache__" in relative.parts:
            continue
        if relative.as_posix().startswith(NOT_MAPPED):
            continue
        found.append(relative)
    return found


def on_the_map(module: Path, named: set[str], listing: dict[str, set[str]]) -> bool:
    """Whether ``module`` (relative to the package) is named by the page."""
    if any(fnmatch.fnmatchcase(module.name, pattern) for pattern in named):
        return True
    parts = module.parts
    return len(parts) == 3 and parts[0] == "backends" and module.stem in listing.get(parts[1], ())


def test_every_module_is_on_the_architecture_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    named = files_named(text)
    listing = backend_listing(text)
    assert {"local", "modal", "skypilot"} <= listing.keys()
    missing = [str(module) for module in modules() if not on_the_map(module, named, listing)]
    assert not missing, f"{MAP.relative_to(ROOT)} does not name: {', '.join(missing)}"


def test_a_module_left_off_the_map_is_named() -> None:
    text = MAP.read_text(encoding="utf-8")
    listing = backend_listing(text)
    unmapped = Path("app") / "a_module_nobody_described.py"
    assert not on_the_map(unmapped, files_named(text), listing)
    # A backend's module is on the map only in its own package's entry of the listing.
    assert on_the_map(Path("backends/local/process.py"), set(), listing)
    assert not on_the_map(Path("backends/modal/process.py"), set(), listing)
    assert on_the_map(Path("widgets/_log_lines.py"), files_named(text), listing)


def test_every_file_the_map_names_exists() -> None:
    text = MAP.read_text(encoding="utf-8")
    files = [
        path.name
        for folder in ("x_tui", "tests", "bench", "scripts")
        for path in (ROOT / folder).rglob("*.py")
    ]
    gone = sorted(
        name
        for name in files_named(text)
        if not any(fnmatch.fnmatchcase(file, name) for file in files)
    )
    assert not gone, f"{MAP.relative_to(ROOT)} names files that do not exist: {', '.join(gone)}"
