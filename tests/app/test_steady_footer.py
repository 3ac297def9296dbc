"""The main screen's footer follows its keys, and is rebuilt only when they change."""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey

from tests.support import wait_until
from x_tui.app.app import XTuiApp

from .conftest import asynchronous, make_app, screen_text


def _footer_line(app: XTuiApp) -> str:
    return screen_text(app).splitlines()[-1]


@asynchronous
async def test_the_footer_shows_the_keys_of_what_is_focused_and_keeps_its_keys_otherwise(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project, poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        browser = app.main_screen.jobs
        await wait_until(pilot, lambda: browser.job_names == ("quick", "second"), "the jobs")
        await wait_until(pilot, lambda: "Submit" in _footer_line(app), "the job keys")
        keys = list(app.main_screen.query(FooterKey))

        # Bindings "updated" with nothing changed: the very same keys stay.
        app.main_screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert list(app.main_screen.query(FooterKey)) == keys

        # The runs pane focused: its keys replace the job browser's.
        await pilot.press("tab")
        await wait_until(pilot, lambda: "Open run" in _footer_line(app), "the runs' keys")
        assert "Projects" in _footer_line(app)
        assert list(app.main_screen.query(FooterKey)) != keys

        await pilot.press("tab")
        await wait_until(pilot, lambda: "Open run" not in _footer_line(app), "the job keys")
