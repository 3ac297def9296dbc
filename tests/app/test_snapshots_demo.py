"""``x-tui demo``'s first screen at 80x24: the demo's jobs, the first one highlighted, and the key
that submits it in the footer, so a first-time user knows what to press."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.support import exclusive, wait_until
from x_tui.app.app import XTuiApp
from x_tui.app.submit_screen import SubmitScreen
from x_tui.demo import prepare_demo_project

from .app_support import make_app, screen_text

pytestmark = pytest.mark.one_worker  # the lock on the fixed paths (see the fixture)

BASE = Path("/tmp/x-tui-demo-snapshot")
"""A fixed place for the demo's copy and state (a path may be on screen)."""


@pytest.fixture
def demo_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[XTuiApp]:
    """The demo's app on :data:`BASE`, which one test at a time on this machine holds."""
    with exclusive("x-tui-demo-snapshot"):
        shutil.rmtree(BASE, ignore_errors=True)
        monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(BASE / "state"))
        monkeypatch.setenv("X_TUI_CONFIG", str(BASE / "no-settings.toml"))
        monkeypatch.setenv("X_TUI_DEMO_DIR", str(BASE / "demo"))
        monkeypatch.delenv("NO_COLOR", raising=False)
        app = make_app(prepare_demo_project(), poll=False)
        app.sub_title = "demo"
        yield app
        shutil.rmtree(BASE, ignore_errors=True)


async def _first_screen(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, XTuiApp)
    await wait_until(
        pilot, lambda: app.main_screen.jobs.highlighted_job == "hello", "the demo's first job"
    )
    await wait_until(pilot, lambda: "python" in screen_text(app), "the resolved job")
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_the_demos_first_screen_at_80x24_shows_how_to_submit(
    snap_compare: Callable[..., bool], demo_app: XTuiApp
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _first_screen(pilot)
        footer = screen_text(demo_app).splitlines()[-1]
        assert "⏎ Submit" in footer
        assert "? Help" in footer
        for job in ("hello", "flaky", "long", "progress"):
            assert job in screen_text(demo_app)
        # What the footer says is what enter does.
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(demo_app.screen, SubmitScreen), "submit")
        await pilot.press("escape")
        await wait_until(pilot, lambda: demo_app.screen is demo_app.main_screen, "back")
        await _first_screen(pilot)

    assert snap_compare(demo_app, terminal_size=(80, 24), run_before=run_before)
