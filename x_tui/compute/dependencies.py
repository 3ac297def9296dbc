"""What a job installs beyond its locked environment: Python packages, apt packages, commands.

A job table may say (urun's ``Dependencies``)::

    dependencies = { python = ["torch==2.7.1"], apt = ["ffmpeg"], post_install = ["make data"] }

:func:`read_dependencies` reads it into a :class:`Dependencies` record, which travels beside the
``JobSpec`` in a run's plan and never goes into ``spec.json`` (substrax's readers refuse unknown
keys). A backend that provisions machines maps it (Modal: image steps after the locked
dependencies; SkyPilot: setup commands); the local backend provisions nothing and its plan says so.

This module only reads and checks the declaration; it never installs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue, RecordError, read_record

KEY = "dependencies"
"""The job table's key."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A PEP 508 requirement's start: a distribution name, then extras, a version, a URL or a marker.
_REQUIREMENT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\s*[\[(<>=!~@;].*)?")
# A Debian package name, optionally pinned: ``ffmpeg``, ``libgl1-mesa-glx``, ``curl=7.88.1-10``.
_APT = re.compile(r"[a-z0-9][a-z0-9+.-]+(?:=[A-Za-z0-9.+:~-]+)?")


@dataclass(frozen=True, kw_only=True, slots=True)
class Dependencies:
    """What a job needs installed beyond the project's locked dependencies and extras.

    Attributes:
        python: PEP 508 requirements, such as ``"torch==2.7.1"``, installed after the locked ones.
        apt: Debian packages, such as ``"ffmpeg"`` or ``"curl=7.88.1-10"``, installed first.
        post_install: Shell commands run, in order, after both.
    """

    python: tuple[str, ...] = ()
    apt: tuple[str, ...] = ()
    post_install: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Check every entry.

        Raises:
            ValueError: If an entry is empty, holds a control character (a newline included),
                is not a requirement or package name, or is listed twice.
        """
        for key, pattern, form in (
            ("python", _REQUIREMENT, "a PEP 508 requirement such as 'torch==2.7.1'"),
            ("apt", _APT, "a Debian package name such as 'ffmpeg' or 'curl=7.88.1-10'"),
            ("post_install", None, "a shell command on one line"),
        ):
            seen: set[str] = set()
            for index, entry in enumerate(getattr(self, key)):
                where = f"{key}[{index}]"
                if not entry.strip() or _CONTROL.search(entry):
                    raise ValueError(f"{where}: {entry!r} is not {form}")
                if pattern is not None and not pattern.fullmatch(entry.strip()):
                    raise ValueError(f"{where}: {entry!r} is not {form}")
                if entry in seen:
                    raise ValueError(f"{where}: {entry!r} is listed twice")
                seen.add(entry)

    def __bool__(self) -> bool:
        """Whether anything is declared."""
        return bool(self.python or self.apt or self.post_install)

    def summary(self) -> str:
        """One line for a plan, such as ``python torch==2.7.1; apt ffmpeg; 1 post_install``."""
        parts = []
        if self.python:
            parts.append("python " + " ".join(self.python))
        if self.apt:
            parts.append("apt " + " ".join(self.apt))
        if self.post_install:
            count = len(self.post_install)
            parts.append(f"{count} post_install command" + ("" if count == 1 else "s"))
        return "; ".join(parts) if parts else "none"


def read_dependencies(value: JsonValue, *, where: str) -> Dependencies:
    """Read a job table's ``dependencies``.

    Args:
        value: The table's value, as TOML gave it.
        where: The file and table, for messages (``"pyproject.toml: [tool...jobs.train]"``).

    Returns:
        The declaration.

    Raises:
        ConfigError: If it is not a table of ``python``, ``apt`` and ``post_install`` arrays of
            strings, or an entry is refused; the message names the file, table, key and value.
    """
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where} {KEY}: expected a table such as"
            f' {{ python = ["torch==2.7.1"], apt = ["ffmpeg"] }}, got {value!r}'
        )
    try:
        return read_record(Dependencies, value, where=KEY)
    except RecordError as error:
        raise ConfigError(f"{where} {error}") from None
