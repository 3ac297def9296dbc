"""The modal backend's settings: ``[tool.substrax.compute.backends.modal]``, checked strictly.

Unknown keys are refused, every value is checked against what Modal accepts for it (Volume and
environment names), and the checked table, defaults filled in, is what a run's handle freezes, so
a run is always followed with the settings it was submitted with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import NAME_PATTERN

TABLE: Final = "[tool.substrax.compute.backends.modal]"
"""The settings table, as messages name it."""

DEFAULT_IGNORE: Final = (
    ".git",
    ".venv",
    "**/__pycache__",
    "**/*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    "build",
    "dist",
    "site",
    "temp",
)
"""Project files left out of the image unless ``ignore`` says otherwise (substrax's list)."""

KEYS: Final = ("outputs_volume", "volumes", "environment", "ignore", "state_dir")
"""The settings this backend reads; any other key is refused."""

_OBJECT_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_APP_ID = re.compile(r"ap-[A-Za-z0-9]{22}")
_ENVIRONMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _check_volume_name(key: str, value: object) -> str:
    if not isinstance(value, str) or not _OBJECT_NAME.fullmatch(value) or _APP_ID.fullmatch(value):
        raise ConfigError(
            f"{TABLE} {key}: {value!r} is not a Modal Volume name (1 to 64 letters, digits,"
            " '.', '_' or '-')"
        )
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class ModalSettings:
    """The modal backend's settings.

    Attributes:
        outputs_volume: The Modal Volume the runs' outputs go to, created when missing.
        volumes: The Modal Volume behind each of a job's mounts, by mount name.
        environment: The Modal environment; the profile's default when ``None``.
        ignore: Project files left out of the image, ``.dockerignore`` style.
        state_dir: Where cancellations and the worker file are kept; the default state
            directory when ``None``.
    """

    outputs_volume: str
    volumes: Mapping[str, str] = field(default_factory=dict)
    environment: str | None = None
    ignore: tuple[str, ...] = DEFAULT_IGNORE
    state_dir: str | None = None

    def __post_init__(self) -> None:
        """Check every value against what Modal accepts.

        Raises:
            ConfigError: If a Volume, mount or environment name, a pattern or the state
                directory is not usable; the message names the table, the key and the value.
        """
        _check_volume_name("outputs_volume", self.outputs_volume)
        if not isinstance(self.volumes, Mapping):
            raise ConfigError(
                f"{TABLE} volumes: expected a table of mount name = Volume name,"
                f" got {self.volumes!r}"
            )
        for mount, volume in self.volumes.items():
            if not isinstance(mount, str) or not NAME_PATTERN.fullmatch(mount):
                raise ConfigError(f"{TABLE} volumes: {mount!r} is not a mount name")
            _check_volume_name(f"volumes.{mount}", volume)
        if self.environment is not None and (
            not isinstance(self.environment, str)
            or not _ENVIRONMENT_NAME.fullmatch(self.environment)
            or self.environment.lower().startswith("en-")
        ):
            raise ConfigError(
                f"{TABLE} environment: {self.environment!r} is not a Modal environment name"
                " (1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit)"
            )
        if not isinstance(self.ignore, tuple) or not all(
            isinstance(pattern, str) and pattern.strip() and pattern.strip() != "!"
            for pattern in self.ignore
        ):
            raise ConfigError(
                f"{TABLE} ignore: expected an array of .dockerignore patterns, got {self.ignore!r}"
            )
        if self.state_dir is not None and (
            not isinstance(self.state_dir, str) or not self.state_dir
        ):
            raise ConfigError(
                f"{TABLE} state_dir: expected a non-empty string or nothing, got {self.state_dir!r}"
            )

    @classmethod
    def read(cls, table: Mapping[str, JsonValue] | None) -> ModalSettings:
        """Read and check the settings table.

        Args:
            table: The table, as ``pyproject.toml`` or a run handle holds it.

        Returns:
            The settings.

        Raises:
            ConfigError: If ``outputs_volume`` is missing, a key is unknown, or a value is of the
                wrong type or not accepted by Modal; the message names the table, key and value.
        """
        table = dict(table or {})
        for key in table:
            if key not in KEYS:
                raise ConfigError(f"{TABLE} unknown key {key!r} (accepted: {', '.join(KEYS)})")
        if table.get("outputs_volume") is None:
            raise ConfigError(
                f"{TABLE} missing required key 'outputs_volume': the Modal Volume the runs'"
                ' outputs go to, such as outputs_volume = "my-runs"'
            )
        volumes = table.get("volumes")
        if volumes is None:
            volumes = {}
        if not isinstance(volumes, Mapping):
            raise ConfigError(
                f"{TABLE} volumes: expected a table of mount name = Volume name, got {volumes!r}"
            )
        ignore = table.get("ignore")
        if ignore is None:
            ignore = list(DEFAULT_IGNORE)
        if not isinstance(ignore, list):
            raise ConfigError(
                f"{TABLE} ignore: expected an array of .dockerignore patterns, got {ignore!r}"
            )
        return cls(
            outputs_volume=table["outputs_volume"],
            volumes=dict(volumes),
            environment=table.get("environment"),
            ignore=tuple(ignore),
            state_dir=table.get("state_dir"),
        )

    def table(self) -> dict[str, JsonValue]:
        """The settings as a table, every key present, to freeze into a run's handle."""
        return {
            "outputs_volume": self.outputs_volume,
            "volumes": dict(self.volumes),
            "environment": self.environment,
            "ignore": list(self.ignore),
            "state_dir": self.state_dir,
        }
