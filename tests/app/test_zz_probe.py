from __future__ import annotations
import asyncio
from pathlib import Path
from typing import Any
import pytest
from textual.widgets import TabbedContent
from .test_snapshots_main import still_app, _settled  # noqa: F401
from .test_snapshots_screens import fixed, _app, _open_run  # noqa: F401
from .conftest import screen_text, wait_until
from x_tui.app.help_screen import HelpScreen

OUT = Path("/tmp/tui10/screens.txt")

def _dump(title: str, app: Any) -> None:
    with OUT.open("a") as out:
        out.write(f"===== {title}\n{screen_text(app)}\n")

@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
def test_probe_main(still_app: Any, size: tuple[int, int]) -> None:
    async def go() -> None:
        async with still_app.run_test(size=size) as pilot:
            await _settled(pilot)
            _dump(f"main {size}", still_app)
            await pilot.press("tab")
            await pilot.pause(0.3)
            _dump(f"main runs {size}", still_app)
            await pilot.press("question_mark")
            await pilot.pause(0.3)
            _dump(f"main help {size}", still_app)
    asyncio.run(go())

@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
def test_probe_run(fixed: Path, size: tuple[int, int]) -> None:
    app = _app()
    async def go() -> None:
        async with app.run_test(size=size) as pilot:
            await _open_run(pilot)
            _dump(f"run {size}", app)
            await pilot.press("question_mark")
            await pilot.pause(0.3)
            _dump(f"run help {size}", app)
    asyncio.run(go())
