"""Secrets a job's tasks need: captured from the submitting shell or named in a provider's store.

A job table may say (urun's ``Credentials``)::

    secrets = { env = ["WANDB_API_KEY"], optional_env = ["HF_TOKEN"],
                env_mapping = { HF_TOKEN = "HUGGING_FACE_HUB_TOKEN" }, platform = ["my-secret"] }

- ``env``: variables captured from the shell that submits the run; submit refuses if one is unset.
- ``optional_env``: the same, skipped when unset.
- ``env_mapping``: a source variable's name in the task (source name -> name in the task). A
  source named only here is required, as if listed in ``env``.
- ``platform``: secrets kept by the provider (a Modal Secret, a SkyPilot secret), by name.

:class:`SecretsRequest` holds names only and is safe to print, plan and write. The values are
captured once, at submit, into a :class:`SecretValues`, whose ``repr`` shows names only, and are
handed to the backend's ``submit`` (``Capability.EXTENSIONS``), which passes them through the
provider's secret mechanism (the local backend: the worker's environment at spawn). This module
never writes a value anywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from x_tui.compute.worker.errors import ConfigError, UserError
from x_tui.compute.worker.records import JsonValue, RecordError, read_record

KEY = "secrets"
"""The job table's key."""

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""An environment variable's name."""
PLATFORM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A provider secret's name (Modal's and SkyPilot's rules both admit these)."""
RESERVED_NAMES = ("AVITAI_OUTPUT_DIR",)
"""Names the worker sets for every task itself; a secret may not take them."""
RESERVED_PREFIXES = ("JAX_", "XLA_")
"""Prefixes the worker drops from its own environment; a secret so named would never arrive."""


class MissingSecretError(UserError, LookupError):
    """A variable ``secrets.env`` requires is not set in the submitting shell."""


def _check_env_name(where: str, name: str) -> None:
    if not ENV_NAME.fullmatch(name):
        raise ValueError(
            f"{where}: {name!r} is not an environment variable name such as 'HF_TOKEN'"
        )


def _check_task_name(where: str, name: str) -> None:
    _check_env_name(where, name)
    if name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES):
        raise ValueError(
            f"{where}: {name!r} cannot be a secret's name in the task: the worker sets"
            f" {', '.join(RESERVED_NAMES)} and drops"
            f" {', '.join(p + '*' for p in RESERVED_PREFIXES)}"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class SecretsRequest:
    """The secrets a job asks for, by name only.

    Attributes:
        env: Variables captured from the submitting shell; submit refuses if one is unset.
        optional_env: Variables captured when set, skipped when not.
        env_mapping: Source name to the name the task sees; a source not listed in ``env`` or
            ``optional_env`` is required.
        platform: Provider-side secrets (a Modal Secret, a SkyPilot secret), by name.
    """

    env: tuple[str, ...] = ()
    optional_env: tuple[str, ...] = ()
    env_mapping: Mapping[str, str] = field(default_factory=dict)
    platform: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Check the names.

        Raises:
            ValueError: If a name is not a variable (or provider secret) name, is listed twice,
                is both required and optional, or two sources land on one name in the task, or
                a name in the task is one the worker sets or drops.
        """
        seen: dict[str, str] = {}
        for key in ("env", "optional_env"):
            for index, name in enumerate(getattr(self, key)):
                where = f"{key}[{index}]"
                _check_env_name(where, name)
                if name in seen:
                    raise ValueError(f"{where}: {name!r} is already listed in {seen[name]}")
                seen[name] = key
        landed: dict[str, str] = {}
        for source in self.sources:
            target = self.task_name(source)
            where = f"env_mapping.{source}" if source in self.env_mapping else "env"
            _check_env_name(where, source)
            _check_task_name(where, target)
            if target in landed:
                raise ValueError(
                    f"{where}: {source!r} and {landed[target]!r} would both be {target!r}"
                    " in the task"
                )
            landed[target] = source
        for index, name in enumerate(self.platform):
            if not PLATFORM_NAME.fullmatch(name):
                raise ValueError(
                    f"platform[{index}]: {name!r} is not a secret name (letters, digits, '.', '_'"
                    " and '-', at most 64)"
                )
            if self.platform.index(name) != index:
                raise ValueError(f"platform[{index}]: {name!r} is listed twice")

    def __bool__(self) -> bool:
        """Whether any secret is asked for."""
        return bool(self.env or self.optional_env or self.env_mapping or self.platform)

    @property
    def sources(self) -> tuple[str, ...]:
        """Every variable captured from the shell, required ones first, each once."""
        listed = (*self.env, *self.optional_env)
        extra = tuple(name for name in self.env_mapping if name not in listed)
        return (*self.env, *extra, *self.optional_env)

    @property
    def required(self) -> tuple[str, ...]:
        """The variables submit refuses to go without."""
        return tuple(name for name in self.sources if name not in self.optional_env)

    def task_name(self, source: str) -> str:
        """The name a captured variable has in the task.

        Args:
            source: Its name in the submitting shell.

        Returns:
            ``env_mapping[source]``, or ``source`` itself.
        """
        return self.env_mapping.get(source, source)

    @property
    def task_names(self) -> tuple[str, ...]:
        """The names the captured variables have in the task."""
        return tuple(self.task_name(source) for source in self.sources)

    def describe(self, environ: Mapping[str, str] | None = None) -> dict[str, JsonValue]:
        """The request for a plan: names only, never a value.

        Args:
            environ: Where to look for which sources are unset; ``os.environ`` when ``None``.

        Returns:
            ``env``, ``optional_env``, ``env_mapping``, ``platform`` and ``unset`` (the sources
            not set now: a required one among them makes submit refuse).
        """
        source = os.environ if environ is None else environ
        return {
            "env": list(self.env),
            "optional_env": list(self.optional_env),
            "env_mapping": dict(self.env_mapping),
            "platform": list(self.platform),
            "unset": [name for name in self.sources if name not in source],
        }


class SecretValues(Mapping[str, str]):
    """Captured secret values by their name in the task; printing it shows names only."""

    __slots__ = ("_values", "skipped")

    def __init__(self, values: Mapping[str, str] | None = None, *, skipped: tuple[str, ...] = ()):
        """Hold captured values.

        Args:
            values: Each value, by its name in the task.
            skipped: The optional sources that were unset.
        """
        self._values = dict(values or {})
        self.skipped = skipped

    def __getitem__(self, name: str) -> str:
        """The value the task sees as ``name``."""
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        """The names, in capture order."""
        return iter(self._values)

    def __len__(self) -> int:
        """How many values were captured."""
        return len(self._values)

    def __repr__(self) -> str:
        """Names only: a value never reaches a log or a traceback through ``repr``."""
        return f"SecretValues(names={list(self._values)!r}, skipped={list(self.skipped)!r})"

    __str__ = __repr__


def capture(
    request: SecretsRequest, environ: Mapping[str, str] | None = None, *, job: str = ""
) -> SecretValues:
    """Capture a job's secrets from the submitting shell.

    Args:
        request: The job's secrets.
        environ: The shell's environment; ``os.environ`` when ``None``.
        job: The job's name, for the message.

    Returns:
        The values, by their name in the task; unset optional ones are skipped.

    Raises:
        MissingSecretError: If a required variable is unset; the message names every one.
    """
    source = os.environ if environ is None else environ
    missing = [name for name in request.required if name not in source]
    if missing:
        names = ", ".join(missing)
        owner = f"job '{job}'" if job else "the job"
        raise MissingSecretError(
            f"{owner} needs {names} from this shell (secrets.env), and "
            f"{'it is' if len(missing) == 1 else 'they are'} not set; export "
            f"{'it' if len(missing) == 1 else 'them'}, or list "
            f"{'it' if len(missing) == 1 else 'them'} in secrets.optional_env"
        )
    values = {request.task_name(name): source[name] for name in request.sources if name in source}
    skipped = tuple(name for name in request.optional_env if name not in source)
    return SecretValues(values, skipped=skipped)


def read_secrets(value: JsonValue, *, where: str) -> SecretsRequest:
    """Read a job table's ``secrets``.

    Args:
        value: The table's value, as TOML gave it.
        where: The file and table, for messages.

    Returns:
        The request.

    Raises:
        ConfigError: If it is not a table of ``env``, ``optional_env``, ``env_mapping`` and
            ``platform``, or a name is refused; the message names the file, table, key and value.
    """
    if not isinstance(value, dict):
        raise ConfigError(
            f'{where} {KEY}: expected a table such as {{ env = ["WANDB_API_KEY"] }}, got {value!r}'
        )
    try:
        return read_record(SecretsRequest, value, where=KEY)
    except RecordError as error:
        raise ConfigError(f"{where} {error}") from None
