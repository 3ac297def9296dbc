"""Which project files the image leaves out: ``.dockerignore`` patterns, as Modal reads them.

The project's ``.gitignore`` (translated), then the ``ignore`` setting, then ``.venv`` at any
depth, in that order: with ``.dockerignore`` semantics the last matching pattern wins, so
``!pattern`` in ``ignore`` brings back a file the ``.gitignore`` leaves out, and nothing brings a
local environment into the image. Only the top-level ``.gitignore`` is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

ALWAYS_IGNORED: Final = (".venv", "**/.venv")
"""Left out of the image whatever ``ignore`` says: a local environment never ships."""


def gitignore_patterns(text: str) -> list[str]:
    """A ``.gitignore``'s patterns in the ``.dockerignore`` form Modal reads.

    A pattern without a slash (but a trailing one) matches at any depth, so it gains ``**/``; a
    leading slash anchors it at the root, where every ``.dockerignore`` pattern already is; a
    trailing slash (directories only) is dropped; ``!`` keeps its meaning.
    """
    patterns: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        body = line[1:] if negate else line
        if body.startswith("\\"):
            body = body[1:]
        body = body.rstrip("/")
        if not body:
            continue
        anchored = "/" in body
        body = body.lstrip("/")
        if not body:
            continue
        if not anchored and not body.startswith("**/"):
            body = f"**/{body}"
        patterns.append(f"!{body}" if negate else body)
    return patterns


def ignore_patterns(project: Path, ignore: Sequence[str]) -> list[str]:
    """The patterns of project files left out of the image, in the order they apply.

    The project's ``.gitignore`` first, then the ``ignore`` setting (so ``!pattern`` there brings
    back a file the ``.gitignore`` leaves out), then ``.venv`` at any depth, which nothing
    brings back.
    """
    patterns: list[str] = []
    try:
        text = (project / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    patterns.extend(gitignore_patterns(text))
    patterns.extend(ignore)
    patterns.extend(ALWAYS_IGNORED)
    return patterns
