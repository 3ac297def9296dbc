"""The modal backend's settings table: required, unknown and invalid keys refused, one line each."""

from __future__ import annotations

import sys

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.backends.modal.settings import DEFAULT_IGNORE, ModalSettings
from x_tui.compute.registry import load_backend
from x_tui.compute.worker.errors import BackendUnavailableError, ConfigError
from x_tui.compute.worker.records import JsonValue


def test_outputs_volume_is_required() -> None:
    """Without it the table is refused, saying what it is for."""
    with pytest.raises(ConfigError, match="missing required key 'outputs_volume'"):
        ModalSettings.read({"volumes": {}})


def test_the_defaults_are_frozen_whole() -> None:
    """The table a handle freezes has every key, defaults filled in."""
    assert ModalSettings.read({"outputs_volume": "runs"}).table() == {
        "outputs_volume": "runs",
        "volumes": {},
        "environment": None,
        "ignore": list(DEFAULT_IGNORE),
        "state_dir": None,
    }


def test_a_frozen_table_reads_back_the_same() -> None:
    """A handle's settings build the same backend again."""
    settings = ModalSettings.read(
        {"outputs_volume": "runs", "volumes": {"ds": "data"}, "environment": "dev"}
    )
    assert ModalSettings.read(settings.table()) == settings


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"outputs_volume": "runs", "gpu": "H100"}, "unknown key 'gpu'"),
        ({"outputs_volume": "runs", "volume": {}}, "unknown key 'volume'"),
        ({"outputs_volume": 3}, "outputs_volume: 3 is not a Modal Volume name"),
        ({"outputs_volume": "my runs"}, "outputs_volume: 'my runs' is not a Modal Volume name"),
        ({"outputs_volume": "x" * 65}, "is not a Modal Volume name"),
        ({"outputs_volume": "runs", "volumes": ["ds"]}, "volumes: expected a table"),
        ({"outputs_volume": "runs", "volumes": {"ds": "a/b"}}, "volumes.ds: 'a/b' is not"),
        ({"outputs_volume": "runs", "volumes": {"../x": "v"}}, "'../x' is not a mount name"),
        ({"outputs_volume": "runs", "environment": "en-prod"}, "environment: 'en-prod' is not"),
        ({"outputs_volume": "runs", "environment": 5}, "environment: 5 is not"),
        ({"outputs_volume": "runs", "ignore": ".git"}, "ignore: expected an array"),
        ({"outputs_volume": "runs", "ignore": ["!"]}, "ignore: expected an array"),
        ({"outputs_volume": "runs", "state_dir": ""}, "state_dir: expected a non-empty string"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_table_key_and_value(
    table: dict[str, JsonValue], message: str
) -> None:
    """Each refusal is one line that starts with the table's name."""
    with pytest.raises(ConfigError) as refused:
        ModalSettings.read(table)
    text = str(refused.value)
    assert text.startswith("[tool.substrax.compute.backends.modal] ")
    assert message in text
    assert "\n" not in text


def test_the_registry_builds_the_backend_without_importing_modal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Choosing ``modal`` (and planning with it) never imports the SDK."""
    for name in [name for name in sys.modules if name == "modal" or name.startswith("modal.")]:
        monkeypatch.delitem(sys.modules, name)
    backend = load_backend("modal", {"outputs_volume": "runs"})
    assert isinstance(backend, ModalBackend)
    assert "modal" not in sys.modules


def test_without_modal_installed_choosing_it_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One line naming the extra, for uv and for pip."""
    monkeypatch.setitem(sys.modules, "modal", None)
    with pytest.raises(BackendUnavailableError) as refused:
        load_backend("modal", {"outputs_volume": "runs"})
    assert str(refused.value) == (
        "the modal backend needs Modal; install it with uv add 'x-tui[modal]'"
        " (or pip install 'x-tui[modal]')"
    )
