"""The TUI on a store substrax 0.1.22 wrote to: its runs are listed (never "unreadable"), opened,
followed, fetched and cancelled, and the run screen says where their settings come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.app_support import make_app, screen_text
from tests.app.screens_support import notices
from tests.interop.harness import Substrax, submitted, substrax_line, xtui_state
from tests.support import asynchronous, wait_for, wait_until
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.app.run_screen import RunScreen
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunStore


@pytest.fixture
def on_the_shared_store(shared: Substrax, monkeypatch: pytest.MonkeyPatch) -> Substrax:
    """This process (the app) on the same state directory and settings file as both CLIs."""
    for name in ("SUBSTRAX_STATE_DIR", "X_TUI_CONFIG", "COLUMNS"):
        monkeypatch.setenv(name, shared.cli.env[name])
    return shared


@pytest.mark.slow
@asynchronous
async def test_the_tui_lists_follows_fetches_and_cancels_runs_substrax_submitted(
    on_the_shared_store: Substrax,
) -> None:
    tools = on_the_shared_store
    hello = submitted(tools("run", "hello", "--detach").stdout)
    slow = submitted(tools("run", "slow", "--detach").stdout)
    wait_for(lambda: xtui_state(tools, slow) == "running", "the slow run to start")
    app = make_app(tools.cli.project)
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: hello in screen_text(app) and slow in screen_text(app),
            "both runs in the table",
        )
        assert "unreadable" not in screen_text(app)
        assert not app.monitor.stored.unreadable

        await app.push_screen(RunScreen(RunStore().load(hello)))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the run to end")
        await wait_until(pilot, lambda: "hello from the task" in screen_text(app), "its log")
        assert "settings from the project, as substrax 0.1.x" in screen_text(app)
        await pilot.press("f")
        await wait_until(pilot, lambda: "into this directory" in screen_text(app), "the question")
        await pilot.press("enter")
        fetched = tools.cli.state / "compute" / "fetched" / hello
        await wait_until(pilot, lambda: "Fetched " in screen_text(app), "the fetch bar")
        assert (fetched / "writes" / "result" / "value.txt").read_text() == "42"

        await pilot.press("escape")
        await app.push_screen(RunScreen(RunStore().load(slow)))
        running = app.screen
        assert isinstance(running, RunScreen)
        await wait_until(pilot, lambda: running.state is RunState.RUNNING, "the slow run")
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_until(
            pilot, lambda: app.monitor.state_of(slow) is RunState.CANCELLED, "the run to stop"
        )
        await wait_until(pilot, lambda: f"Cancelled {slow}" in notices(app), "the cancel to end")
    assert substrax_line(tools, slow) == f"{slow}  local  slow  cancelled"
    assert Path(tools.cli.runs / f"{hello}.json").is_file()
