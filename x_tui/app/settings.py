"""The user's x-tui settings: ``<user config dir>/x-tui/config.toml``, typed, with env overrides.

```toml
theme = "textual-dark"      # any Textual theme ("textual-ansi" uses the terminal's palette)
low_bandwidth = false       # fewer frames per second, batched log updates, no animation
wrap = true                 # wrap long log lines (written by the log view's `w`; unset: wrap
                            # below 100 columns)

handle_version = 1          # run handles substrax 0.1.x reads (default: by the project's uv.lock)

[keys]                      # binding id = key(s), comma separated
"main.submit" = "enter"
"app.quit" = "q,ctrl+q"
```

A key this file does not know, or a value of the wrong type, never stops the app: the setting
keeps its default and the problem is reported (as a toast naming the file and the key). The file
is read before Textual is imported, because ``low_bandwidth`` sets ``TEXTUAL_FPS``, which Textual
reads once at import; so this module imports no Textual.

Environment overrides: ``X_TUI_CONFIG`` names another settings file; ``X_TUI_LOW_BANDWIDTH=1``
turns the low-bandwidth profile on; ``NO_COLOR`` (any value) makes the app monochrome.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from x_tui.app.notify_settings import NotifySettings, read_notify
from x_tui.compute.handle_versions import settings_file
from x_tui.compute.worker.errors import did_you_mean

LOW_BANDWIDTH_ENV = "X_TUI_LOW_BANDWIDTH"
"""``1``/``true``/``yes`` turns the low-bandwidth profile on, whatever the file says."""

LOW_BANDWIDTH_FPS = 10
"""Frames per second under the low-bandwidth profile (Textual's default is 60)."""

LOW_BANDWIDTH_SLOWDOWN = 3.0
"""How many times less often, under the low-bandwidth profile, the run monitor asks backends for
states and the runs table and run screen redraw and re-read what they show."""

_KNOWN = ("theme", "low_bandwidth", "wrap", "keys", "handle_version", "notify")

NARROW_COLUMNS = 100
"""Below this many columns, log lines wrap unless the user chose otherwise (``wrap``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """What the user chose; every field has a default, so an empty file is valid.

    Attributes:
        theme: The Textual theme's name; ``None`` keeps Textual's default.
        low_bandwidth: Fewer frames per second, batched log updates and no animation, for slow
            SSH links.
        wrap: Whether log views wrap long lines; ``None`` (not chosen yet) wraps on terminals
            narrower than :data:`NARROW_COLUMNS`. The log view's ``w`` writes it.
        keys: Keys by binding id (``"main.submit"``, ``"app.quit"``...), each a comma-separated
            list of Textual key names; applied with ``App.set_keymap``.
        notify: Which run events to announce, and how (the ``[notify]`` table).
        path: The file these were read from (whether or not it exists).
        problems: What in the file could not be used, each naming the file and the key.
    """

    theme: str | None = None
    low_bandwidth: bool = False
    wrap: bool | None = None
    keys: Mapping[str, str] = field(default_factory=dict)
    notify: NotifySettings = field(default_factory=NotifySettings)
    path: Path | None = None
    problems: tuple[str, ...] = ()

    @property
    def refresh_scale(self) -> float:
        """How many times longer the app's refresh intervals are: see
        :data:`LOW_BANDWIDTH_SLOWDOWN`."""
        return LOW_BANDWIDTH_SLOWDOWN if self.low_bandwidth else 1.0


def wraps_logs(settings: Settings | None, columns: int) -> bool:
    """Whether a new log view wraps: the user's choice, else whether the terminal is narrow.

    Args:
        settings: The user's settings, if any.
        columns: The terminal's width.
    """
    if settings is not None and settings.wrap is not None:
        return settings.wrap
    return columns < NARROW_COLUMNS


def save_setting(path: Path, key: str, value: bool | str) -> None:
    """Set one top-level setting in the settings file, keeping the rest (comments included).

    The file is rewritten through a temporary file and a rename, so a failure leaves it as it
    was; a file that is not valid TOML is left alone.

    Args:
        path: The settings file (created, with its directory, when missing).
        key: The setting, one of the top-level keys this module knows.
        value: Its new value.

    Raises:
        OSError: If the file cannot be written, or cannot be read back as TOML.
    """
    import tempfile

    import tomlkit
    import tomlkit.exceptions

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.TOMLKitError as error:  # (a redefined table is no ParseError)
        raise OSError(f"{path}: not valid TOML, left as it is: {error}") from error
    document[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(tomlkit.dumps(document))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_settings(path: Path | None = None) -> Settings:
    """Read the settings file, keeping the default of whatever cannot be used.

    Args:
        path: The file; :func:`~x_tui.compute.handle_versions.settings_file` when ``None``. A
        missing file is all defaults.

    Returns:
        The settings; ``problems`` lists each unusable key or value, naming the file.
    """
    path = path if path is not None else settings_file()
    problems: list[str] = []
    document = _read(path, problems)
    theme: str | None = None
    low_bandwidth = False
    wrap: bool | None = None
    keys: dict[str, str] = {}
    notify = NotifySettings()
    for key, value in document.items():
        if key == "theme":
            if isinstance(value, str) and value.strip():
                theme = value.strip()
            else:
                problems.append(f"{path}: theme: expected a theme name, got {value!r}")
        elif key == "low_bandwidth":
            if isinstance(value, bool):
                low_bandwidth = value
            else:
                problems.append(f"{path}: low_bandwidth: expected true or false, got {value!r}")
        elif key == "wrap":
            if isinstance(value, bool):
                wrap = value
            else:
                problems.append(f"{path}: wrap: expected true or false, got {value!r}")
        elif key == "keys":
            keys = _keys(path, value, problems)
        elif key == "notify":
            notify = read_notify(path, value, problems)
        elif key == "handle_version":
            # Read where runs are submitted (x_tui.compute.handle_versions); checked here too.
            if value not in (1, 2) or isinstance(value, bool):
                problems.append(f"{path}: handle_version: expected 1 or 2, got {value!r}")
        else:
            problems.append(f"{path}: unknown key {key!r}{did_you_mean(key, _KNOWN)}")
    if _env_true(os.environ.get(LOW_BANDWIDTH_ENV)):
        low_bandwidth = True
    return Settings(
        theme=theme,
        low_bandwidth=low_bandwidth,
        wrap=wrap,
        keys=keys,
        notify=notify,
        path=path,
        problems=tuple(problems),
    )


def apply_low_bandwidth_environment(settings: Settings) -> None:
    """Set ``TEXTUAL_FPS`` and ``TEXTUAL_ANIMATIONS`` for the low-bandwidth profile.

    Takes effect only when called before Textual is first imported (Textual reads them once);
    an explicit ``TEXTUAL_FPS`` in the environment is left as the user set it.

    Args:
        settings: The settings; nothing is set unless ``low_bandwidth`` is on.
    """
    if not settings.low_bandwidth:
        return
    os.environ.setdefault("TEXTUAL_FPS", str(LOW_BANDWIDTH_FPS))
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


def _read(path: Path, problems: list[str]) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        problems.append(f"{path}: cannot be read: {error}")
        return {}
    import tomlkit
    import tomlkit.exceptions

    try:
        document: dict[str, object] = tomlkit.parse(text).unwrap()
    except tomlkit.exceptions.TOMLKitError as error:  # (a redefined table is no ParseError)
        problems.append(f"{path}: not valid TOML: {error}")
        return {}
    return document


def _keys(path: Path, value: object, problems: list[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        problems.append(f"{path}: [keys]: expected a table of binding id = key, got {value!r}")
        return {}
    keys: dict[str, str] = {}
    for binding_id, key in value.items():
        if isinstance(key, str) and key.strip():
            keys[str(binding_id)] = key.strip()
        else:
            problems.append(
                f"{path}: [keys] {binding_id}: expected a key such as 'ctrl+r', got {key!r}"
            )
    return keys


def _env_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")
