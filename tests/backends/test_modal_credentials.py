"""Finding a Modal token the way Modal does, without importing ``modal`` or reaching it."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.backends.modal.credentials import require_credentials
from x_tui.compute.worker.errors import BackendUnavailableError


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"MODAL_CONFIG_PATH": str(tmp_path / "modal.toml"), **values}


def _config(tmp_path: Path, text: str) -> None:
    (tmp_path / "modal.toml").write_text(text)


@pytest.mark.parametrize(
    "values",
    [
        {"MODAL_TOKEN_ID": "ak-1", "MODAL_TOKEN_SECRET": "as-1"},
        {"MODAL_OAUTH_REFRESH_TOKEN": "r", "MODAL_OAUTH_CLIENT_ID": "c"},
    ],
)
def test_a_token_in_the_environment_is_enough(tmp_path: Path, values: dict[str, str]) -> None:
    """A token id and secret, or OAuth credentials, in the environment."""
    require_credentials(_env(tmp_path, **values))


def test_the_active_profile_of_the_config_file_holds_the_token(tmp_path: Path) -> None:
    """The profile marked active is read, not the others."""
    _config(
        tmp_path,
        '[old]\ntoken_id = "x"\n\n[work]\nactive = true\ntoken_id = "ak"\ntoken_secret = "as"\n',
    )
    require_credentials(_env(tmp_path))


def test_modal_profile_picks_the_profile(tmp_path: Path) -> None:
    """``MODAL_PROFILE`` wins over the active marker; an incomplete profile is no token."""
    _config(
        tmp_path,
        '[a]\nactive = true\ntoken_id = "ak"\ntoken_secret = "as"\n\n[b]\ntoken_id = "ak"\n',
    )
    with pytest.raises(BackendUnavailableError, match="no credentials"):
        require_credentials(_env(tmp_path, MODAL_PROFILE="b"))


def test_the_environment_completes_a_profile(tmp_path: Path) -> None:
    """Each key is looked up on its own: the environment first, then the profile."""
    _config(tmp_path, '[default]\ntoken_id = "ak"\n')
    require_credentials(_env(tmp_path, MODAL_TOKEN_SECRET="as"))


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        (None, {}, "Modal has no credentials here"),
        ('[default]\ntoken_id = "ak"\n', {}, "Modal has no credentials here"),
        ("[default\n", {}, "cannot be read"),
        ('token_id = "ak"\n', {}, "must hold one table per profile"),
        ("[a]\nactive = true\n[b]\nactive = true\n", {}, "more than one Modal profile is active"),
        ('[a]\ntoken_id = "x"\n[b]\ntoken_id = "y"\n', {}, "no Modal profile is active"),
        ("[a]\n", {"MODAL_PROFILE": "missing"}, "MODAL_PROFILE names the Modal profile"),
        (None, {"MODAL_TOKEN_ID": "ak"}, "Modal has no credentials here"),
    ],
)
def test_what_is_missing_is_said_in_one_line_with_the_fix(
    tmp_path: Path, text: str | None, extra: dict[str, str], message: str
) -> None:
    """Each refusal names the file when it is at fault and says how to set Modal up."""
    if text is not None:
        _config(tmp_path, text)
    with pytest.raises(BackendUnavailableError) as refused:
        require_credentials(_env(tmp_path, **extra))
    said = str(refused.value)
    assert message in said
    assert "\n" not in said
    assert "modal token new" in said or "modal profile activate" in said


def test_the_default_file_is_in_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``MODAL_CONFIG_PATH``, ``~/.modal.toml`` is read."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".modal.toml").write_text('[default]\ntoken_id = "ak"\ntoken_secret = "as"\n')
    require_credentials({})
