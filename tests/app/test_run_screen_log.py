"""The run screen's log at 80x24: following keeps the last line on screen, escape's order, the
wrap setting, saving the lines shown (``s``) and opening the log in a pager or an editor
(``v``, ``V``)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.app.settings import Settings, load_settings
from x_tui.compute.worker.manifest import TaskStatus
from x_tui.widgets.log_view import LogView

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run

SIZE = (80, 24)


def _log_lines(count: int) -> str:
    return "".join(f"[train] step {n} loss 0.{n:03d}\n" for n in range(count))


def _append(run_dir: Path, lines: list[str]) -> None:
    with (run_dir / "worker.log").open("a", encoding="utf-8") as out:
        out.writelines(f"{line}\n" for line in lines)


def _keys(text: str) -> list[str]:
    return ["space" if char == " " else char for char in text]


def _rows(app: Any) -> list[str]:
    return [row.rstrip() for row in screen_text(app).splitlines()]


def _log_view(app: Any) -> LogView:
    return app.screen.query_one("#combined-log", LogView)


async def _open(app: Any, pilot: Any, state_dir: Path, worker_log: str) -> tuple[RunScreen, Path]:
    handle = finished_run(
        state_dir,
        tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())],
        worker_log=worker_log,
    )
    screen = RunScreen(handle, clock=lambda: NOW)
    await app.push_screen(screen)
    await wait_until(pilot, lambda: screen.loaded, "the run's files")
    run_dir = Path(handle.details["run_dir"])
    return screen, run_dir


@asynchronous
async def test_following_keeps_the_last_line_on_screen_after_each_append(state_dir: Path) -> None:
    app = make_app(None, poll=False, settings=Settings(wrap=False))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        _, run_dir = await _open(app, pilot, state_dir, _log_lines(40))
        await wait_until(pilot, lambda: "step 39 loss" in screen_text(app), "the tail")
        # A line wider than the screen brings the horizontal scrollbar, which takes a row.
        appended = ["[train] " + "w" * 150 + " wide", "[train] after the wide line"]
        for number in range(5):
            appended.append(f"[train] appended {number}")
            _append(run_dir, appended)
            last = appended[-1]
            await wait_until(pilot, lambda last=last: last in screen_text(app), last)
            await pilot.pause(0.2)
            assert _log_view(app).lines_view.show_horizontal_scrollbar
            assert last in screen_text(app), f"{last!r} scrolled away"
            appended = []
        # A toast (a fetch result, a copy) never covers the newest lines.
        app.notify("Copied run id to the clipboard", timeout=30)
        _append(run_dir, ["[train] after the toast"])
        await wait_until(pilot, lambda: "Copied run id" in screen_text(app), "the toast")
        await wait_until(pilot, lambda: "after the toast" in screen_text(app), "the new line")
        rows = _rows(app)
        newest = next(i for i, row in enumerate(rows) if "after the toast" in row)
        toast = next(i for i, row in enumerate(rows) if "Copied run id" in row)
        assert toast < newest - 3, f"the toast is near the log's newest line:\n{screen_text(app)}"
        assert rows[newest].endswith("after the toast")


@asynchronous
async def test_following_with_wrap_keeps_the_last_line_on_screen(state_dir: Path) -> None:
    app = make_app(None, poll=False, settings=Settings(wrap=True))
    async with app.run_test(size=SIZE) as pilot:
        _, run_dir = await _open(app, pilot, state_dir, _log_lines(40))
        await wait_until(pilot, lambda: "step 39 loss" in screen_text(app), "the tail")
        for number in range(3):
            _append(run_dir, ["[train] " + "v" * 170, f"[train] wrapped {number}"])
            await wait_until(
                pilot, lambda n=number: f"wrapped {n}" in screen_text(app), f"line {number}"
            )


@asynchronous
async def test_escape_clears_the_search_then_the_filter_then_goes_back(state_dir: Path) -> None:
    app = make_app(None, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        screen, _ = await _open(app, pilot, state_dir, _log_lines(60))
        await wait_until(pilot, lambda: "step 59 loss" in screen_text(app), "the tail")
        await pilot.press("ampersand", *_keys("step 1"), "enter")
        view = _log_view(app)
        await wait_until(pilot, lambda: "& step 1" in screen_text(app), "the filter")
        await pilot.press("slash", *"loss", "enter")
        await wait_until(pilot, lambda: "/ loss" in screen_text(app), "the search")

        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert "/ loss" not in screen_text(app)
        assert "& step 1" in screen_text(app), "the filter went with the search"

        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert "& step 1" not in screen_text(app)
        assert view.lines_view.rows is None

        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main_screen, "the main screen")


@asynchronous
async def test_w_is_remembered_in_the_settings_file_for_the_next_log(
    state_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# mine\ntheme = "textual-dark"\n', encoding="utf-8")
    app = make_app(None, poll=False, settings=load_settings(path))
    async with app.run_test(size=SIZE) as pilot:
        await _open(app, pilot, state_dir, _log_lines(5))
        view = _log_view(app)
        assert view.lines_view.wrap, "a log at 80 columns wraps by default"
        view.lines_view.focus()
        await pilot.press("w")
        await wait_until(pilot, lambda: not view.lines_view.wrap, "wrap off")
        await wait_until(pilot, lambda: load_settings(path).wrap is False, "the setting saved")
        assert "# mine" in path.read_text(encoding="utf-8")
        assert load_settings(path).theme == "textual-dark"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main_screen, "the main screen")
        await _open(app, pilot, state_dir / "again", _log_lines(5))
        assert not _log_view(app).lines_view.wrap, "the next log forgot the choice"


@asynchronous
async def test_a_wide_terminal_does_not_wrap_by_default(state_dir: Path) -> None:
    app = make_app(None, poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, state_dir, _log_lines(5))
        assert not _log_view(app).lines_view.wrap


@asynchronous
async def test_s_saves_the_filtered_lines_as_plain_text(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log = _log_lines(30) + "[train] \x1b[31mred step 77\x1b[0m \x1b]52;c;cG93bmVk\x07done\n"
    app = make_app(None, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await _open(app, pilot, state_dir, log)
        await wait_until(pilot, lambda: "done" in screen_text(app), "the tail")
        await pilot.press("ampersand", *_keys("step 7"), "enter")
        await wait_until(pilot, lambda: "& step 7" in screen_text(app), "the filter")
        await wait_until(pilot, lambda: " lines ±" in screen_text(app), "the filter's count")
        await pilot.press("s")
        await wait_until(pilot, lambda: "save to" in screen_text(app), "the path prompt")
        offered = Path(app.screen.query_one("SearchBar Input").value)  # type: ignore[attr-defined]
        assert offered.parent == tmp_path
        assert offered.name.endswith("-worker-filtered.txt")
        target = tmp_path / "saved" / "steps.txt"
        field = app.screen.query_one("SearchBar Input")
        field.value = str(target)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(pilot, target.exists, "the file")
        await wait_until(pilot, lambda: "saved" in screen_text(app), "the note")
        saved = target.read_text(encoding="utf-8").splitlines()
        # The matches (step 7 and the red step 77) with two lines of context around each.
        assert "[train] step 7 loss 0.007" in saved
        assert "[train] red step 77 ]52;c;cG93bmVk" not in saved
        assert saved[-1] == "[train] red step 77 done"
        assert "[train] step 20 loss 0.020" not in saved
        assert not any("\x1b" in line or "\x07" in line for line in saved)
        assert not list((tmp_path / "saved").glob(".*part"))


@contextlib.contextmanager
def _no_suspend() -> Iterator[None]:
    yield


@asynchronous
async def test_v_opens_the_pager_and_shift_v_the_editor_at_the_current_line(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[list[str], str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append((argv, Path(argv[-1]).read_text(encoding="utf-8")))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setenv("PAGER", "less -S")
    monkeypatch.setenv("EDITOR", "nano")
    monkeypatch.delenv("VISUAL", raising=False)
    log = _log_lines(30) + "[train] Traceback (most recent call last):\n" + _log_lines(5)
    app = make_app(None, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        monkeypatch.setattr(app, "suspend", _no_suspend)
        await _open(app, pilot, state_dir, log)
        await wait_until(pilot, lambda: "Traceback" in screen_text(app), "the log")
        await pilot.press("v")
        await wait_until(pilot, lambda: len(calls) == 1, "the pager")
        argv, text = calls[0]
        assert argv[:3] == ["less", "-S", "+36g"]
        assert text == log.replace("\x1b", "")
        assert not Path(argv[-1]).exists(), "the copy outlived the pager"
        await pilot.press("e")  # the traceback, line 31, becomes the current line
        await wait_until(pilot, lambda: _log_view(app).lines_view.current == 30, "the jump")
        await pilot.press("V")
        await wait_until(pilot, lambda: len(calls) == 2, "the editor")
        assert calls[1][0][:2] == ["nano", "+31"]
