"""The errors a user can fix: bad configuration, unknown names, missing tools or credentials.

The CLI prints these messages as they are (exit 2) and the TUI shows them in a panel or toast;
anything else is a bug and keeps its traceback. Each message names the file, key and value, and
what would be accepted (:func:`did_you_mean` writes that part).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class UserError(Exception):
    """A problem the user can fix; its message is shown as it is, without a traceback."""


class ConfigError(UserError, ValueError):
    """A ``pyproject.toml`` table, key or value that cannot be used."""


class NoComputeTable(UserError, LookupError):
    """The project's ``pyproject.toml`` has no ``[tool.substrax.compute]`` table."""


class UnknownJobError(UserError, LookupError):
    """No job of that name is configured; the message lists the configured ones."""


class UnknownBackendError(UserError, LookupError):
    """No backend of that name is registered; the message lists the registered ones."""


class RunNotFoundError(UserError, LookupError):
    """No stored handle has that run id."""


class BadRecordError(UserError, ValueError):
    """A stored record (handle, spec, manifest) that cannot be read; the message names the file."""


class BackendUnavailableError(UserError, RuntimeError):
    """A backend that cannot be used here: its tool or extra is missing, or no credentials."""


class ProviderError(UserError, RuntimeError):
    """A provider that answered with an error or did not answer within its deadline."""


def close_name(name: str, names: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when one of ``names`` is close to ``name``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def did_you_mean(key: str, accepted: Sequence[str]) -> str:
    """``"; did you mean 'x'? (accepted: ...)"`` for a refused key or name."""
    return f"{close_name(key, accepted)} (accepted: {', '.join(accepted) or 'none'})"
