"""At 80x24 the footer shows help and the focused widget's keys first; ``?`` lists x-tui's keys
first, by area, and Textual's generic keys last."""

from __future__ import annotations

from pathlib import Path

from tests.support import asynchronous, wait_until
from x_tui.app.help_screen import GENERIC_TITLE, HelpScreen
from x_tui.app.run_screen import RunScreen
from x_tui.compute.worker.manifest import TaskStatus

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run


@asynchronous
async def test_the_run_screen_footer_and_help_at_80x24(state_dir: Path) -> None:
    handle = finished_run(
        state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())], worker_log="[train] hi\n"
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = RunScreen(handle, clock=lambda: NOW)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: "[train] hi" in screen_text(app), "the log")
        lines = screen_text(app).splitlines()
        assert lines[0].split()[:2] == ["succeeded", handle.run_id]
        assert "· took " in lines[0]
        footer = lines[-1]
        for key in ("? Help", "Follow", "w Wrap", "/ Search", "& Filter"):
            assert key in footer, f"{key!r} is not in the footer {footer!r}"

        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        titles = [title for title, _ in help_screen._groups]
        assert titles[0] == "Run screen"
        assert titles[-1] == GENERIC_TITLE
        assert titles.index("Log view") < titles.index("Everywhere") < titles.index(GENERIC_TITLE)
        generic = {active.binding.description for active in help_screen._groups[-1][1]}
        own = {
            active.binding.description
            for title, actives in help_screen._groups[:-1]
            for active in actives
        }
        assert "Focus Next" in generic
        assert {"Cancel run", "Follow", "Search", "Help"} <= own
        assert not own & {"Focus Next", "Focus Previous"}
