"""Whether Modal credentials are configured here, found without importing ``modal`` or any RPC.

Modal resolves each setting from ``MODAL_<KEY>`` first, then from the active profile of
``~/.modal.toml`` (``MODAL_CONFIG_PATH`` moves the file; ``MODAL_PROFILE`` picks the profile,
else the one marked ``active = true``, else ``default``). With no token, every Modal call fails
with ``AuthError("Token missing...")``; checking first lets x-tui say how to fix it in one line,
at once, before anything is built or sent.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from x_tui.compute.worker.errors import BackendUnavailableError

SETUP: Final = (
    "run `modal token new` (or `uv run modal token new`) once, or set MODAL_TOKEN_ID and"
    " MODAL_TOKEN_SECRET"
)
"""How to configure Modal, as the messages say it."""

_TOKEN_KEYS: Final = ("token_id", "token_secret")
_OAUTH_KEYS: Final = ("oauth_refresh_token", "oauth_client_id")


def config_path(environ: Mapping[str, str]) -> Path:
    """The Modal configuration file: ``$MODAL_CONFIG_PATH``, else ``~/.modal.toml``."""
    explicit = environ.get("MODAL_CONFIG_PATH")
    return Path(explicit) if explicit else Path(os.path.expanduser("~/.modal.toml"))


def _profile_table(path: Path, environ: Mapping[str, str]) -> Mapping[str, object]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise BackendUnavailableError(
            f"the Modal configuration {path} cannot be read ({error}); fix it, or {SETUP}"
        ) from None
    if not all(isinstance(section, dict) for section in document.values()):
        raise BackendUnavailableError(
            f"the Modal configuration {path} must hold one table per profile; fix it, or {SETUP}"
        )
    named = environ.get("MODAL_PROFILE")
    if named:
        if named not in document:
            raise BackendUnavailableError(
                f"MODAL_PROFILE names the Modal profile {named!r}, which {path} does not hold;"
                f" unset it, or {SETUP}"
            )
        profile: object = document[named]
    else:
        active = [name for name, section in document.items() if section.get("active") is True]
        if len(active) > 1:
            raise BackendUnavailableError(
                f"more than one Modal profile is active in {path} ({', '.join(active)});"
                " run `modal profile activate NAME`"
            )
        if not active and len(document) > 1:
            raise BackendUnavailableError(
                f"no Modal profile is active in {path}; run `modal profile activate NAME`"
            )
        profile = document.get(active[0] if active else "default", {})
    return profile if isinstance(profile, dict) else {}


def _configured(
    keys: tuple[str, ...], environ: Mapping[str, str], profile: Mapping[str, object]
) -> bool:
    for key in keys:
        value = environ.get(f"MODAL_{key.upper()}")
        if value is None:
            value_in_file = profile.get(key)
            value = value_in_file if isinstance(value_in_file, str) else None
        if not value:
            return False
    return True


def require_credentials(environ: Mapping[str, str] | None = None) -> None:
    """Refuse to go on when Modal has no credentials here.

    Args:
        environ: The environment to read; this process's when ``None``.

    Raises:
        BackendUnavailableError: If neither a token (id and secret) nor OAuth credentials are
            configured, or the configuration file cannot be read; the message says how to fix it.
    """
    env = os.environ if environ is None else environ
    path = config_path(env)
    profile = _profile_table(path, env)
    if _configured(_TOKEN_KEYS, env, profile) or _configured(_OAUTH_KEYS, env, profile):
        return
    raise BackendUnavailableError(
        f"Modal has no credentials here (no token in the environment or {path}): {SETUP}"
    )
