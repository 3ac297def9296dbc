"""The log view, driven by keys at 80x24 on real files that grow, shrink and carry escapes."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from array import array
from pathlib import Path
from typing import Any

import pytest
from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.message import Message
from textual.widgets import Static

from tests.support import asynchronous, wait_until
from x_tui.widgets._log_lines import LogLines
from x_tui.widgets.log_view import LogView

SIZE = (80, 24)
WAIT_SECONDS = 30.0


class LogApp(App[None]):
    """One log view, filling the screen; records the messages the view posts."""

    def __init__(self, path: Path | None, *, follow: bool = True) -> None:
        super().__init__()
        self.path = path
        self.follow = follow
        self.messages: list[Message] = []

    def compose(self) -> ComposeResult:
        yield LogView(self.path, follow=self.follow)

    def on_mount(self) -> None:
        self.query_one(LogView).focus()

    def on_log_view_follow_changed(self, message: LogView.FollowChanged) -> None:
        self.messages.append(message)

    def on_log_view_reset(self, message: LogView.Reset) -> None:
        self.messages.append(message)


def write_lines(path: Path, lines: list[str], mode: str = "w") -> None:
    with path.open(mode, encoding="utf-8", newline="") as out:
        out.writelines(f"{line}\n" for line in lines)


def view_of(app: App[None]) -> LogView:
    return app.query_one(LogView)


def strips(app: App[None]) -> list[list[Segment]]:
    """The segments of every row of the lines, as the view renders them for the screen."""
    lines = view_of(app).query_one(LogLines)
    height = lines.scrollable_content_region.height
    return [list(lines.render_line(y)) for y in range(height)]


def rows(app: App[None]) -> list[str]:
    return ["".join(segment.text for segment in row).rstrip() for row in strips(app)]


def status(app: App[None]) -> str:
    return str(view_of(app).query_one(".log-view--status", Static).render())


@pytest.fixture
def long_log(tmp_path: Path) -> Path:
    path = tmp_path / "long.log"
    write_lines(path, [f"line {n:06d}" for n in range(100_000)])
    return path


@asynchronous
async def test_opens_at_the_tail_of_a_100k_line_file(long_log: Path) -> None:
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        shown = [row for row in rows(app) if row]
        assert shown[-1] == "line 099999"
        assert shown[0] == f"line {100_000 - len(shown):06d}"
        assert "following" in status(app)


@asynchronous
async def test_appended_lines_appear_while_following(long_log: Path) -> None:
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        write_lines(long_log, ["appended one", "appended two"], mode="a")
        await wait_until(pilot, lambda: rows(app)[-1] == "appended two", "the appended lines")
        assert rows(app)[-2] == "appended one"


@asynchronous
async def test_scrolling_up_pauses_follow_and_counts_new_lines_until_end(long_log: Path) -> None:
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        await pilot.press("up", "up", "up")
        await wait_until(pilot, lambda: not view_of(app).following, "follow to pause")
        held = rows(app)
        write_lines(long_log, [f"new {n}" for n in range(7)], mode="a")
        await wait_until(pilot, lambda: "+7 new lines" in status(app), "the new-line badge")
        assert rows(app) == held  # the user is not yanked to the end
        assert "paused" in status(app)
        await pilot.press("end")
        await wait_until(pilot, lambda: rows(app)[-1] == "new 6", "the end after resuming")
        assert "following" in status(app)
        assert "new lines" not in status(app)
        changes = [m.following for m in app.messages if isinstance(m, LogView.FollowChanged)]
        assert changes == [False, True]


@asynchronous
async def test_shift_f_resumes_follow_too(long_log: Path) -> None:
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        await pilot.press("pageup")
        await wait_until(pilot, lambda: not view_of(app).following, "follow to pause")
        await pilot.press("F")
        await wait_until(pilot, lambda: view_of(app).following, "follow to resume")
        assert rows(app)[-1] == "line 099999"


@pytest.fixture
def search_log(tmp_path: Path) -> Path:
    path = tmp_path / "search.log"
    lines = [f"step {n}" + (" needle" if n % 10 == 3 else "") for n in range(200)]
    write_lines(path, lines)
    return path


@asynchronous
async def test_search_highlights_matches_and_counts_them(search_log: Path) -> None:
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        await pilot.press("slash", *"needle", "enter")
        # From the tail, the search shows the latest match: 193, the 20th of 20.
        await wait_until(pilot, lambda: "20/20" in status(app), "the match counter")
        assert "step 193 needle" in rows(app)
        lines = view_of(app).query_one(LogLines)
        match_style = lines.get_component_rich_style("log-lines--match")
        highlighted = [
            segment.text
            for row in strips(app)
            for segment in row
            if segment.style is not None and segment.style.bgcolor == match_style.bgcolor
        ]
        assert highlighted
        assert set(highlighted) == {"needle"}
        await pilot.press("n")  # wraps to the first match
        await wait_until(pilot, lambda: "1/20" in status(app), "the first match")
        assert "step 3 needle" in rows(app)
        await pilot.press("n", "n")
        await wait_until(pilot, lambda: "3/20" in status(app), "the third match")
        await pilot.press("N")
        await wait_until(pilot, lambda: "2/20" in status(app), "the second match")
        assert "step 13 needle" in rows(app)


@asynchronous
async def test_filter_shows_matching_lines_with_context(search_log: Path) -> None:
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        await pilot.press("ampersand", *"needle", "enter")
        await wait_until(pilot, lambda: "20 lines ±2" in status(app), "the filter")
        await pilot.press("home")
        await wait_until(pilot, lambda: rows(app)[0].endswith("step 1"), "the first rows")
        # Line numbers in the gutter: ':' on a match, '-' on context, like grep.
        assert rows(app)[:6] == [
            "  2-step 1",
            "  3-step 2",
            "  4:step 3 needle",
            "  5-step 4",
            "  6-step 5",
            " 12-step 11",
        ]
        await pilot.press("minus", "minus")
        await wait_until(pilot, lambda: "±0" in status(app), "no context")
        assert rows(app)[:3] == ["  4:step 3 needle", " 14:step 13 needle", " 24:step 23 needle"]
        await pilot.press("ampersand", "ctrl+u", "enter")  # an empty filter clears it
        await wait_until(pilot, lambda: "&" not in status(app), "the filter to clear")
        assert "step 199" in rows(app)


@asynchronous
async def test_home_pressed_before_new_rows_are_drawn_still_goes_to_the_top(
    search_log: Path,
) -> None:
    """Rows arrive (a filter's results) and a key comes before the next frame draws the
    scrollbar they bring: at a low frame rate (the low-bandwidth profile) that is a long window.
    ``home`` was skipped then, and a scroll to the end queued before it moved the view back."""
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        lines = view_of(app).query_one(LogLines)
        every_row = lines.rows
        lines.rows = array("l")  # a filter that has found nothing yet: nothing to scroll
        lines.update_size()
        await wait_until(pilot, lambda: not lines.show_vertical_scrollbar, "no scrollbar")
        assert lines.following
        # The rows come back, and the key with them, in one turn: no frame between.
        lines.rows = every_row
        lines.update_size()
        lines.shift(0)  # following: the end is asked for, as new rows ask for it
        lines.on_resize()  # and a resize before the key queues a scroll to the end
        lines.action_scroll_home()
        assert not lines.following
        await wait_until(pilot, lambda: rows(app)[0].endswith("step 0"), "the first rows")
        await pilot.pause(0.1)
        assert rows(app)[0].endswith("step 0")  # and it stays there
        assert not lines.following


@asynchronous
async def test_filtered_view_follows_new_matching_lines(search_log: Path) -> None:
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        await pilot.press("ampersand", *"needle", "enter")
        await wait_until(pilot, lambda: "20 lines" in status(app), "the filter")
        write_lines(search_log, ["noise", "late needle", "after 1", "after 2", "after 3"], "a")
        await wait_until(pilot, lambda: "21 lines" in status(app), "the new match")
        await wait_until(pilot, lambda: rows(app)[-1].endswith("after 2"), "its context")
        # Two lines of context each side: "after 3" stays hidden.
        assert rows(app)[-6:] == [
            "196-step 195",
            "200-step 199",
            "201-noise",
            "202:late needle",
            "203-after 1",
            "204-after 2",
        ]


@asynchronous
async def test_next_error_jumps_to_the_traceback(tmp_path: Path) -> None:
    path = tmp_path / "errors.log"
    lines = [f"ok {n}" for n in range(300)]
    lines[40] = "Traceback (most recent call last):"
    lines[41] = '  File "train.py", line 3, in <module>'
    lines[42] = "ValueError: loss is nan"
    lines[250] = "2026-01-01 ERROR disk full"
    write_lines(path, lines)
    app = LogApp(path, follow=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "ok 299" in rows(app), "the tail")
        await pilot.press("home")
        await wait_until(pilot, lambda: rows(app)[0] == "ok 0", "the top")
        await pilot.press("e")
        await wait_until(pilot, lambda: view_of(app).lines_view.current == 40, "the traceback")
        assert "Traceback (most recent call last):" in rows(app)
        await pilot.press("e")
        await wait_until(pilot, lambda: view_of(app).lines_view.current == 42, "the error line")
        await pilot.press("e")
        await wait_until(pilot, lambda: view_of(app).lines_view.current == 250, "the ERROR")
        assert "2026-01-01 ERROR disk full" in rows(app)
        await pilot.press("e")
        await wait_until(pilot, lambda: "no error below" in status(app), "the end of errors")
        await pilot.press("E")
        await wait_until(pilot, lambda: view_of(app).lines_view.current == 42, "the previous one")
        assert "no error below" not in status(app)  # the note goes with the next key


@asynchronous
async def test_a_progress_bar_shows_as_one_line_in_its_last_state(tmp_path: Path) -> None:
    path = tmp_path / "bar.log"
    bar = "\r".join(f"training {pct:3d}% |{'#' * (pct // 10):<10}|" for pct in range(0, 101, 5))
    write_lines(path, ["start", bar, "end"])
    app = LogApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "end" in rows(app), "the log")
        assert [row for row in rows(app) if row] == [
            "start",
            "training 100% |##########|",
            "end",
        ]


HOSTILE = [
    "title \x1b]0;pwned title\x07after",
    "clip \x1b]52;c;ZWNobyBvd25lZA==\x1b\\after",
    "link \x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\",
    "clear \x1b[2J\x1b[Hafter",
    "c1 \x9b31m\x90dcs\x9cafter\x7f",
    "colour \x1b[31mred\x1b[0m plain",
    "markup [/x] [@click=app.quit]quit[/] [bold]b",
]


@asynchronous
async def test_escape_sequences_in_the_file_never_reach_the_screen(tmp_path: Path) -> None:
    path = tmp_path / "hostile.log"
    write_lines(path, HOSTILE)
    app = LogApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: any("markup" in row for row in rows(app)), "the log")
        segments = [segment for row in strips(app) for segment in row]
        text = "".join(segment.text for segment in segments)
        assert re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text) is None
        assert "pwned" not in text
        assert "ZWNob" not in text
        assert all(segment.style is None or not segment.style.link for segment in segments)
        shown = [row for row in rows(app) if row]
        assert shown == [
            "title after",
            "clip after",
            "link click me",
            "clear after",
            "c1 after",
            "colour red plain",
            "markup [/x] [@click=app.quit]quit[/] [bold]b",
        ]
        red = [s for s in segments if s.text == "red"]
        assert red
        assert red[0].style is not None
        assert red[0].style.color is not None
        assert red[0].style.color.name in {"red", "color(1)"}
        assert "control sequences removed" in status(app)
        await pilot.click(LogLines, offset=(20, 6))  # clicking the markup does nothing
        assert app.is_running


@asynchronous
async def test_a_truncated_file_is_shown_again_from_scratch(long_log: Path) -> None:
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        write_lines(long_log, ["after truncation"])
        await wait_until(pilot, lambda: rows(app)[0] == "after truncation", "the new content")
        assert [row for row in rows(app) if row] == ["after truncation"]
        # The message bubbles up to the app after the screen is redrawn.
        await wait_until(
            pilot, lambda: any(isinstance(m, LogView.Reset) for m in app.messages), "a Reset"
        )


@asynchronous
async def test_a_file_rewritten_with_lines_of_the_same_length_shows_the_new_text(
    tmp_path: Path,
) -> None:
    path = tmp_path / "same.log"
    write_lines(path, ["old line one", "old line two"])
    app = LogApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "old line two" in rows(app), "the old text")
        write_lines(path, ["new line one", "new line two", "new line 3"])
        await wait_until(pilot, lambda: "new line 3" in rows(app), "the new text")
        assert [row for row in rows(app) if row] == ["new line one", "new line two", "new line 3"]


@asynchronous
async def test_wrap_shows_a_long_line_on_several_rows(tmp_path: Path) -> None:
    path = tmp_path / "wide.log"
    write_lines(path, ["short", "w" * 200, "last"])
    app = LogApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "last" in rows(app), "the log")
        assert [row for row in rows(app) if row] == ["short", "w" * 80, "last"]
        await pilot.press("w")
        await wait_until(pilot, lambda: "wrap" in status(app), "wrap mode")
        shown = [row for row in rows(app) if row]
        assert shown[0] == "short"
        assert shown[-1] == "last"
        assert "".join(shown[1:-1]) == "w" * 200
        assert len(shown) > 3


@asynchronous
async def test_a_busy_stream_is_shown_whole_and_a_calm_line_after_it_at_once(
    long_log: Path,
) -> None:
    """A burst of lines puts the view on its busy pace; every line still shows, and the next
    calm line shows at the normal pace again."""
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        view = view_of(app)
        paces: list[float] = []  # the busy deadline each refresh of the index left
        refresh = view._refresh_index

        def spy() -> None:
            refresh()
            paces.append(view._busy_until)

        view._refresh_index = spy  # type: ignore[method-assign]
        write_lines(long_log, [f"burst {n:04d}" for n in range(2_000)], mode="a")
        await wait_until(pilot, lambda: rows(app)[-1] == "burst 1999", "the whole burst")
        assert rows(app)[-2] == "burst 1998"
        assert any(pace > 0.0 for pace in paces)  # the burst was shown at the busy pace
        write_lines(long_log, ["calm again"], mode="a")
        await wait_until(pilot, lambda: rows(app)[-1] == "calm again", "the calm line")
        assert paces[-1] == 0.0  # and the calm line put it back on the normal pace


@asynchronous
async def test_low_bandwidth_mode_still_shows_appends(long_log: Path) -> None:
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        view_of(app).low_bandwidth = True
        write_lines(long_log, ["slow link line"], mode="a")
        await wait_until(pilot, lambda: rows(app)[-1] == "slow link line", "the appended line")


@asynchronous
async def test_opening_without_follow_shows_the_tail_and_stays_put(long_log: Path) -> None:
    app = LogApp(long_log, follow=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the tail")
        held = rows(app)
        write_lines(long_log, ["more", "and more"], mode="a")
        await wait_until(pilot, lambda: "+2 new lines" in status(app), "the new-line count")
        assert rows(app) == held


@asynchronous
async def test_a_log_that_appears_later_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    app = LogApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not any(rows(app))
        write_lines(path, ["first words"])
        await wait_until(pilot, lambda: "first words" in rows(app), "the new file")


@asynchronous
async def test_an_invalid_regex_is_reported_in_the_status_line(search_log: Path) -> None:
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        await pilot.press("slash", "ctrl+r", *"(oops", "enter")
        await wait_until(pilot, lambda: "not a valid regular expression" in status(app), "error")
        assert app.is_running


@asynchronous
async def test_open_switches_files(tmp_path: Path, search_log: Path) -> None:
    other = tmp_path / "other.log"
    write_lines(other, ["the other file"])
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        view_of(app).open(other)
        await wait_until(pilot, lambda: "the other file" in rows(app), "the other file")
        assert "step 199" not in rows(app)
        view_of(app).open(None)
        await wait_until(pilot, lambda: not any(rows(app)), "an empty view")


VIEWER = """
import sys
from pathlib import Path
from textual.app import App
from textual.binding import Binding
from x_tui.widgets.log_view import LogView

class Viewer(App):
    BINDINGS = [Binding("q", "quit", "Quit")]
    def compose(self):
        yield LogView(Path(sys.argv[1]))
    def on_mount(self):
        self.query_one(LogView).focus()

Viewer().run()
"""


def test_hostile_log_lines_never_reach_a_real_terminal(tmp_path: Path) -> None:
    """The bytes the app sends to a real pseudo-terminal carry none of the log's sequences."""
    path = tmp_path / "hostile.log"
    write_lines(path, [*HOSTILE, "the end marker"])
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    process = subprocess.Popen(
        [sys.executable, "-c", VIEWER, str(path)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    output = b""
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while b"end marker" not in output or b"removed" not in output:
            assert time.monotonic() < deadline, output[-2000:]
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                output += os.read(master, 1 << 16)
        os.write(master, b"q")
        process.wait(timeout=WAIT_SECONDS)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)
    for payload in (b"pwned", b"ZWNvaG", b"ZWNobyBvd25lZA", b"evil.example", b"dcs"):
        assert payload not in output
    assert b"\x1b]52" not in output
    assert b"\x1b]8;" not in output
    assert b"\xc2\x9b" not in output  # U+009B, the 8-bit CSI
    assert b"\xc2\x90" not in output  # U+0090, DCS
    assert b"\x7f" not in output
    assert b"click me" in output
    assert b"[@click=app.quit]quit[/]" in output


@asynchronous
async def test_the_search_bar_s_labels_follow_its_mode_and_toggles(search_log: Path) -> None:
    from x_tui.widgets._log_bar import BarOptions, ModeLabel

    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        options = app.query_one(BarOptions)

        def shown() -> str:
            return "\n".join(strip.text for strip in app.screen._compositor.render_strips())

        def toggle_on(label: str) -> bool:
            text = options.options_text()
            assert label in shown()
            start = text.plain.index(label)
            return any(
                span.start <= start < span.end and "reverse" in str(span.style)
                for span in text.spans
            )

        await pilot.press("ampersand")
        await pilot.pause()
        assert str(app.query_one(ModeLabel).content) == "&"
        assert " & " in shown()
        assert not toggle_on(".*")
        assert not toggle_on("Aa")
        await pilot.press("ctrl+r", "ctrl+t")
        await pilot.pause()
        assert toggle_on(".*")
        assert toggle_on("Aa")
        await pilot.press("escape", "s")
        await pilot.pause()
        assert "save to" in shown()
        assert "enter saves, escape gives up" in shown()


@asynchronous
async def test_status_line_follows_the_lines_state_whoever_changes_it(search_log: Path) -> None:
    app = LogApp(search_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        lines = view_of(app).query_one(LogLines)
        lines.set_following(False)  # not a key: the status line still tells
        await wait_until(pilot, lambda: "paused" in status(app), "the pause shown")
        lines.wrap = True
        await wait_until(pilot, lambda: "wrap" in status(app), "wrap shown")
        await pilot.press("n")  # no search yet: the key's answer is a note
        await wait_until(pilot, lambda: "no search: press / first" in status(app), "the note")
        await pilot.press("slash", *"needle", "enter")
        await wait_until(pilot, lambda: "/20" in status(app), "the match counter")
        lines.current = 13  # the second match, made current by hand
        await wait_until(pilot, lambda: "2/20" in status(app), "the rank of the current line")


@asynchronous
async def test_status_line_says_no_log_until_a_file_is_opened(search_log: Path) -> None:
    app = LogApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert status(app) == "no log"
        view_of(app).open(search_log)
        await wait_until(pilot, lambda: "step 199" in rows(app), "the tail")
        assert status(app) == "● following"


@asynchronous
async def test_a_frame_works_out_the_views_style_once_not_once_a_row(
    long_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following a fast log redraws every row at each frame; the style of the rows is the
    widget's, the same for all of them (it walks every ancestor's styles each time it is asked)."""
    asked: list[int] = []
    real = LogLines.rich_style

    def counted(self: LogLines) -> Any:
        asked.append(1)
        return real.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(LogLines, "rich_style", property(counted))
    app = LogApp(long_log)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "line 099999" in rows(app), "the last line")
        lines = app.query_one(LogLines)
        lines._strips.clear()  # every row drawn afresh, as while a log streams in
        lines.refresh()
        asked.clear()  # one frame's drawing, with nothing else between
        drawn = lines.render_lines(lines.region.reset_offset)
    assert len(drawn) >= 20
    assert 1 <= len(asked) <= 2, f"the style was worked out {len(asked)} times for one frame"
