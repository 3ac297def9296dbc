"""The command line behind each action: shell-safe, accepted by the CLI, shown and copied."""

from __future__ import annotations

import datetime as dt
import shlex
from pathlib import Path

from tests.support import asynchronous, wait_until
from x_tui.app.actions import action_commands
from x_tui.app.command_lines import run_command, shell_line
from x_tui.app.run_screen import RunScreen
from x_tui.app.submit_screen import SubmitScreen
from x_tui.cli.parser import build_parser
from x_tui.compute.operations import open_project

from .app_support import make_app, save_handle


def test_a_command_line_reads_back_as_the_same_arguments_and_the_cli_accepts_it() -> None:
    argv = run_command(
        "train", backend="modal", accelerator="H100:8", project="/tmp/my 'odd' $project"
    )
    line = shell_line(argv)
    assert line.startswith("x-tui run train --backend modal --accelerator H100:8 --project ")
    assert shlex.split(line) == argv
    parsed = build_parser().parse_args(shlex.split(line)[1:])
    assert (parsed.verb, parsed.job, parsed.backend, parsed.accelerator, parsed.detach) == (
        "run",
        "train",
        "modal",
        "H100:8",
        True,
    )


@asynchronous
async def test_x_on_the_run_screen_copies_each_action_s_command(
    state_dir: Path, project: Path
) -> None:
    handle = save_handle(
        state_dir,
        run_id="quick-20261201T000000Z-0a1b2c",
        job="quick",
        submitted_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )
    app = make_app(project, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle))
        await pilot.press("x")
        await wait_until(pilot, lambda: bool(app.clipboard), "the copy")
        lines = app.clipboard.splitlines()
        assert "x-tui cancel quick-20261201T000000Z-0a1b2c  # cancel" in lines
        assert "x-tui logs quick-20261201T000000Z-0a1b2c --follow  # logs" in lines
        commands = action_commands(handle)
        for command in commands.values():
            parsed = build_parser().parse_args(shlex.split(command)[1:])
            assert parsed.verb in ("status", "logs", "cancel", "fetch", "run", "delete")


@asynchronous
async def test_ctrl_x_on_the_submit_screen_copies_the_run_command(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = SubmitScreen("quick", project=open_project(project))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        await pilot.press("ctrl+x")
        await wait_until(pilot, lambda: bool(app.clipboard), "the copy")
        assert app.clipboard.strip() == shell_line(
            ["x-tui", "run", "quick", "--backend", "local", "--project", str(project), "--detach"]
        )
