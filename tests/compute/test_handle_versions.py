"""Which run handle version a submit writes: x-tui's setting, else the project's locked substrax."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.compute.handle_versions import HandleChoice, choose_handle_version, locked_substrax


def lock(version: str, source: str = '{ registry = "https://pypi.org/simple" }') -> str:
    return (
        'version = 1\n\n[[package]]\nname = "other"\nversion = "1.0"\n\n'
        f'[[package]]\nname = "substrax"\nversion = "{version}"\nsource = {source}\n'
    )


@pytest.mark.parametrize(
    ("text", "locked", "version"),
    [
        (lock("0.1.22"), "0.1.22", 1),
        (lock("0.1.5"), "0.1.5", 1),
        (lock("0.10.0"), "0.10.0", 2),
        (lock("0.2.0"), "0.2.0", 2),
        (lock("0.1.22", '{ editable = "." }'), "editable", 2),
        (lock("0.1.22", '{ directory = "../substrax" }'), "editable", 2),
        ('version = 1\n[[package]]\nname = "other"\nversion = "1"\n', None, 2),
        ("this is [ not toml", None, 2),
    ],
)
def test_the_projects_lock_decides_without_a_setting(
    tmp_path: Path, text: str, locked: str | None, version: int
) -> None:
    (tmp_path / "uv.lock").write_text(text)
    assert locked_substrax(tmp_path) == locked
    choice = choose_handle_version(tmp_path, config=tmp_path / "none.toml")
    assert choice.version == version
    if locked is not None:
        assert choice.reason == f"the project locks substrax {locked}"


def test_without_a_lock_the_seeds_version_2_is_written(tmp_path: Path) -> None:
    choice = choose_handle_version(tmp_path, config=tmp_path / "none.toml")
    assert choice == HandleChoice(version=2, reason="the project does not lock substrax")
    assert choice.describe() == "version 2: the project does not lock substrax"


@pytest.mark.parametrize("setting", [1, 2])
def test_x_tuis_setting_wins_over_the_lock(tmp_path: Path, setting: int) -> None:
    (tmp_path / "uv.lock").write_text(lock("0.1.22" if setting == 2 else "0.3.0"))
    config = tmp_path / "config.toml"
    config.write_text(f'theme = "x"\nhandle_version = {setting}\n')
    choice = choose_handle_version(tmp_path, config=config)
    assert choice.version == setting
    assert choice.reason == f"handle_version = {setting} in {config}"


def test_an_unusable_setting_is_named_and_the_lock_decides(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text(lock("0.1.22"))
    config = tmp_path / "config.toml"
    config.write_text('handle_version = "one"\n')
    choice = choose_handle_version(tmp_path, config=config)
    assert choice.version == 1
    assert choice.describe() == (
        "version 1 (substrax 0.1.x's): the project locks substrax 0.1.22"
        f" ({config}: handle_version = 'one' is not 1 or 2; ignored)"
    )
