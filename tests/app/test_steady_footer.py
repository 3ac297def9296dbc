"""The footers follow their keys, are rebuilt only when they change, and draw as Textual's."""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey

from tests.support import asynchronous, wait_until
from x_tui.app.app import XTuiApp
from x_tui.app.submit_screen import SubmitScreen

from .app_support import make_app, screen_text


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


@asynchronous
async def test_each_key_looks_as_textuals_footer_draws_it_and_the_submit_screen_keeps_its_keys(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project, poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: "Submit" in _footer_line(app), "the job keys")
        keys = list(app.main_screen.query(FooterKey))
        # Every key is drawn full, as the footer is; the palette's key alone is compact.
        assert [key.has_class("-compact") for key in keys] == [
            key.has_class("-command-palette") for key in keys
        ]
        assert not any(key.compact for key in keys if not key.has_class("-command-palette"))

        await pilot.press("enter")  # the submit screen of the first job
        await wait_until(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit screen")
        screen = app.screen
        await wait_until(pilot, lambda: bool(screen.query(FooterKey)), "the submit keys")
        shown = list(screen.query(FooterKey))
        screen.refresh_bindings()  # nothing changed: the very same keys stay
        await pilot.pause()
        await pilot.pause()
        assert list(screen.query(FooterKey)) == shown
