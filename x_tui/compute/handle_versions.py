"""Which run handle version x-tui writes for a project, and why.

substrax 0.1.x writes and reads version 1 handles (no ``settings``) and refuses version 2 ones,
so one version 2 handle in a shared store stops ``substrax-compute status`` from listing anything.
x-tui therefore writes version 1 where the project's substrax is 0.1.x:

1. ``handle_version = 1`` or ``= 2`` in x-tui's own settings file (``$X_TUI_CONFIG``, else
   ``<user config dir>/x-tui/config.toml``) decides when it is set;
2. otherwise, when the project's ``uv.lock`` locks substrax 0.1.x (the first ``substrax``
   package entry, as substrax reads it), version 1;
3. otherwise the seed's version 2.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.store import HANDLE_VERSION, SUBSTRAX_01_HANDLE_VERSION

SETTING = "handle_version"
"""The key of x-tui's settings file that chooses the version."""

CONFIG_ENV = "X_TUI_CONFIG"
"""Names x-tui's settings file instead of the default one."""

LOCK_LIMIT = 32 << 20
"""The most bytes of a ``uv.lock`` read."""

_SUBSTRAX_01 = re.compile(r"0\.1(\.|$)")


@dataclass(frozen=True, kw_only=True, slots=True)
class HandleChoice:
    """The handle version a submit writes, and the reason, for ``plan`` and the submit screen.

    Attributes:
        version: 1 (substrax 0.1.x's layout, settings in a side record) or 2 (the seed's).
        reason: Why, in a few words, such as ``the project locks substrax 0.1.22``.
    """

    version: int
    reason: str

    def describe(self) -> str:
        """``version 1 (substrax 0.1.x's): the project locks substrax 0.1.22``."""
        what = " (substrax 0.1.x's)" if self.version == SUBSTRAX_01_HANDLE_VERSION else ""
        return f"version {self.version}{what}: {self.reason}"


def settings_file() -> Path:
    """x-tui's settings file: ``$X_TUI_CONFIG``, else ``<user config dir>/x-tui/config.toml``.

    The one place it is named: the TUI's settings (``app/settings.py``) and the handle version
    read the same file.
    """
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_config_dir("x-tui")) / "config.toml"


def configured_version(path: Path | None = None) -> tuple[int | None, str]:
    """The ``handle_version`` of x-tui's settings file, and a problem with it (or ``""``).

    A missing file, key, or an unusable value gives ``None`` (the problem names the file and the
    key), so a bad setting never stops a submit: the project's lock decides then.
    """
    import tomllib  # (loaded with the first file read: the TUI's start-up reads none here)

    path = path if path is not None else settings_file()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, ""
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        return None, f"{path}: cannot be read: {error}"
    value = data.get(SETTING)
    if value is None:
        return None, ""
    if value not in (SUBSTRAX_01_HANDLE_VERSION, HANDLE_VERSION) or isinstance(value, bool):
        return None, f"{path}: {SETTING} = {value!r} is not 1 or 2; ignored"
    return int(value), ""


def locked_substrax(project: Path) -> str | None:
    """The substrax version the project's ``uv.lock`` locks, as substrax reads the lock.

    Returns:
        The first ``substrax`` package entry's version (``"editable"`` when it is installed from
        a path or has no version); ``None`` when there is no readable lock or no such entry.
    """
    import tomllib

    lock = project / "uv.lock"
    try:
        with lock.open("rb") as file:
            raw = file.read(LOCK_LIMIT)
        document = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    packages = document.get("package", [])
    if not isinstance(packages, list):
        return None
    for package in packages:
        if isinstance(package, dict) and package.get("name") == "substrax":
            source = package.get("source", {})
            if isinstance(source, dict) and {"editable", "directory", "path"} & set(source):
                return "editable"
            version = package.get("version", "editable")
            return version if isinstance(version, str) else None
    return None


def choose_handle_version(project: Path, *, config: Path | None = None) -> HandleChoice:
    """The handle version a run submitted from ``project`` is written with, and why.

    Args:
        project: The project root.
        config: x-tui's settings file; :func:`settings_file` when ``None``.
    """
    version, problem = configured_version(config)
    if version is not None:
        where = config if config is not None else settings_file()
        return HandleChoice(version=version, reason=f"{SETTING} = {version} in {where}")
    locked = locked_substrax(project)
    suffix = f" ({problem})" if problem else ""
    if locked is not None and _SUBSTRAX_01.match(locked):
        return HandleChoice(
            version=SUBSTRAX_01_HANDLE_VERSION,
            reason=f"the project locks substrax {locked}{suffix}",
        )
    if locked is not None:
        return HandleChoice(
            version=HANDLE_VERSION, reason=f"the project locks substrax {locked}{suffix}"
        )
    return HandleChoice(
        version=HANDLE_VERSION, reason=f"the project does not lock substrax{suffix}"
    )
