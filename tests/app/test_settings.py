"""The user's settings file: theme, low-bandwidth profile, remapped keys, and what is refused."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.app.settings import (
    LOW_BANDWIDTH_FPS,
    Settings,
    apply_low_bandwidth_environment,
    load_settings,
    save_setting,
)
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.manifest import TaskStatus
from x_tui.widgets.log_view import LogView

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run


def test_a_missing_file_gives_the_defaults(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "absent.toml")
    assert settings.theme is None
    assert settings.low_bandwidth is False
    assert dict(settings.keys) == {}
    assert settings.problems == ()


def test_an_unknown_key_is_named_with_the_file_and_the_rest_still_applies(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('theme = "nord"\nlow_bandwith = true\n', encoding="utf-8")
    settings = load_settings(path)
    assert settings.theme == "nord"
    assert settings.low_bandwidth is False
    [problem] = settings.problems
    assert str(path) in problem
    assert "'low_bandwith'" in problem
    assert "did you mean 'low_bandwidth'?" in problem


def test_a_value_of_the_wrong_type_keeps_the_default(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('low_bandwidth = "yes"\n[keys]\n"app.quit" = 3\n', encoding="utf-8")
    settings = load_settings(path)
    assert settings.low_bandwidth is False
    assert dict(settings.keys) == {}
    assert len(settings.problems) == 2
    assert all(str(path) in problem for problem in settings.problems)


def test_handle_version_is_a_known_setting_checked_for_1_or_2(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("handle_version = 1\n", encoding="utf-8")
    assert load_settings(path).problems == ()
    path.write_text("handle_version = 3\n", encoding="utf-8")
    assert load_settings(path).problems == (f"{path}: handle_version: expected 1 or 2, got 3",)


NOT_TOML = [
    pytest.param("theme = \n", id="no-value"),
    # tomlkit raises its base error for this one, not its ParseError
    pytest.param("[keys]\na.b = 1\n[keys.a]\nc = 1\n", id="a-table-defined-twice"),
]


@pytest.mark.parametrize("text", NOT_TOML)
def test_a_file_that_is_not_toml_is_reported_not_raised(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    settings = load_settings(path)
    [problem] = settings.problems
    assert problem.startswith(f"{path}: not valid TOML")


@pytest.mark.parametrize("text", NOT_TOML)
def test_a_setting_is_not_saved_into_a_file_that_is_not_toml(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(OSError, match=re.escape(f"{path}: not valid TOML, left as it is")):
        save_setting(path, "wrap", True)
    assert path.read_text(encoding="utf-8") == text
    assert [entry.name for entry in tmp_path.iterdir()] == ["config.toml"]


def test_the_environment_turns_the_low_bandwidth_profile_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X_TUI_LOW_BANDWIDTH", "1")
    monkeypatch.delenv("TEXTUAL_FPS", raising=False)
    monkeypatch.delenv("TEXTUAL_ANIMATIONS", raising=False)
    settings = load_settings(tmp_path / "absent.toml")
    assert settings.low_bandwidth is True
    apply_low_bandwidth_environment(settings)
    assert os.environ["TEXTUAL_FPS"] == str(LOW_BANDWIDTH_FPS)
    assert os.environ["TEXTUAL_ANIMATIONS"] == "none"


def test_an_explicit_frame_rate_is_left_as_the_user_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXTUAL_FPS", "30")
    monkeypatch.delenv("TEXTUAL_ANIMATIONS", raising=False)
    apply_low_bandwidth_environment(Settings(low_bandwidth=True))
    assert os.environ["TEXTUAL_FPS"] == "30"


@asynchronous
async def test_the_app_says_which_settings_it_could_not_use_and_runs(
    state_dir: Path, project: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('colour = "red"\ntheme = "no-such-theme"\n', encoding="utf-8")
    app = make_app(project, settings=load_settings(path))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: len(app._notifications) == 2, "two toasts")
        messages = [notification.message for notification in app._notifications]
        assert any("'colour'" in message and str(path) in message for message in messages)
        assert any("'no-such-theme'" in message for message in messages)
        await wait_until(pilot, lambda: app.main_screen.jobs.job_names != (), "the jobs")


@asynchronous
async def test_a_remapped_key_does_what_the_binding_did(state_dir: Path, project: Path) -> None:
    settings = Settings(keys={"main.filter": "f2"}, theme="textual-light")
    app = make_app(project, settings=settings)
    async with app.run_test(size=(160, 40)) as pilot:
        assert app.theme == "textual-light"
        await wait_until(pilot, lambda: app.main_screen.jobs.job_names != (), "the jobs")
        await pilot.press("f2")
        await wait_until(
            pilot, lambda: "filter runs: id, job" in screen_text(app), "the runs filter"
        )


@asynchronous
async def test_the_low_bandwidth_profile_turns_animation_off(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project, settings=Settings(low_bandwidth=True))
    async with app.run_test(size=(80, 24)):
        assert app.animation_level == "none"


async def _profile(handle: RunHandle, *, low: bool) -> tuple[list[float], list[bool]]:
    """The monitor's and runs table's intervals, and each log view's batching, of one app."""
    app = make_app(None, poll=False, settings=Settings(low_bandwidth=low))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = RunScreen(handle, clock=lambda: NOW)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        await wait_until(pilot, lambda: len(screen.query(LogView)) == 2, "the task's log")
        intervals = [
            app.monitor.first_interval,
            app.monitor.max_interval,
            app.main_screen.runs.min_refresh,
        ]
        return intervals, [view.low_bandwidth for view in screen.query(LogView)]


@asynchronous
async def test_the_low_bandwidth_profile_slows_polls_and_redraws_and_batches_every_log(
    state_dir: Path,
) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())],
        worker_log="[train] step 1\n",
        task_logs={"train": "step 1\n"},
    )
    normal, normal_views = await _profile(handle, low=False)
    slow, slow_views = await _profile(handle, low=True)
    assert normal_views == [False, False]
    assert slow_views == [True, True]
    for usual, slower in zip(normal, slow, strict=True):
        assert slower > usual
