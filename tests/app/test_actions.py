"""The run actions (re-run, copy id, cancel, fetch) on the run screen, the main screen and the
command palette, and the help generated from the bindings."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.binding import Binding
from textual.widgets._footer import FooterKey

from tests.support import asynchronous, wait_until
from x_tui.app.actions import RUN_ACTIONS
from x_tui.app.commands import run_commands
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.app.help_screen import HelpScreen
from x_tui.app.main_screen import MainScreen
from x_tui.app.run_screen import RunScreen
from x_tui.compute.backend import SPEC_NAME, RunState
from x_tui.compute.store import RunStore
from x_tui.compute.sweeps import Sweep, SweepAxis, SweepRun, SweepStore
from x_tui.compute.worker.manifest import TaskStatus
from x_tui.compute.worker.spec import Accelerator

from .app_support import make_app, screen_text
from .screens_support import (
    NOW,
    SUBMITTED_AT,
    finished_run,
    notices,
    submitted,
    write_project,
)


def footer_key(app: App[object], key: str) -> FooterKey | None:
    """The footer's key ``key`` on the current screen, if the footer shows it."""
    shown = [widget for widget in app.screen.query(FooterKey) if widget.key == key]
    return shown[0] if shown else None


def dimmed(app: App[object], key: str) -> bool:
    """Whether the footer shows ``key`` dimmed (disabled), with a reason as its tooltip."""
    widget = footer_key(app, key)
    return widget is not None and widget.has_class("-disabled") and bool(widget.tooltip)


def offered(app: App[object], key: str) -> bool:
    """Whether the footer shows ``key`` and it can be used."""
    widget = footer_key(app, key)
    return widget is not None and not widget.has_class("-disabled")


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A project with the jobs quick, failing, slow and writer."""
    return write_project(tmp_path / "sample")


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_r_then_y_runs_the_job_again_with_the_staged_spec_and_frozen_settings(
    state_dir: Path, sample: Path
) -> None:
    first = await submitted(sample, "quick")
    app = make_app(sample)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(RunScreen(first))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the first run")
        await pilot.press("r")
        await wait_until(
            pilot,
            lambda: "again on local" in screen_text(app) and first.run_id in screen_text(app),
            "the question",
        )
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, RunScreen) and app.screen.handle != first,
            "the new run's screen",
        )
        second = app.screen.handle
        assert second.run_id != first.run_id
        assert (second.job, second.backend, second.settings) == (
            first.job,
            first.backend,
            first.settings,
        )
        staged = Path(second.details["run_dir"]) / SPEC_NAME
        assert staged.read_text() == (Path(first.details["run_dir"]) / SPEC_NAME).read_text()
        await wait_until(pilot, lambda: "hello from quick" in screen_text(app), "its log")
        assert {h.run_id for h in RunStore().read_all().handles} == {first.run_id, second.run_id}


GUARDED_JOB = """
[tool.substrax.compute.jobs.guarded]
timeout_seconds = 120
retries = 1
secrets = { env_mapping = { XTUI_RERUN_SOURCE = "XTUI_RERUN_TOKEN" } }
[tool.substrax.compute.jobs.guarded.commands]
odd = ["python", "odd.py"]
"""

ODD = """\
import os, pathlib, sys

counter = pathlib.Path("odd.count")
number = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(number))
print(f"token length {len(os.environ.get('XTUI_RERUN_TOKEN', ''))}", flush=True)
if number % 2:
    print("an odd attempt fails", flush=True)
    sys.exit(5)
print("an even attempt works", flush=True)
"""


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_a_rerun_keeps_the_jobs_retries_and_reads_its_secrets_again(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run's first attempt fails: only a re-run that kept ``retries`` succeeds."""
    project = write_project(tmp_path / "sample", GUARDED_JOB)
    (project / "odd.py").write_text(ODD)
    monkeypatch.setenv("XTUI_RERUN_SOURCE", "abc")
    first = await submitted(project, "guarded")
    app = make_app(project)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(RunScreen(first))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the first run")
        monkeypatch.setenv("XTUI_RERUN_SOURCE", "abcdef")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, RunScreen) and app.screen.handle != first,
            "the new run's screen",
        )
        again = app.screen
        assert isinstance(again, RunScreen)
        await wait_until(pilot, lambda: again.state is not None and again.state.is_final, "end")
        assert again.state is RunState.SUCCEEDED
    first_dir, second_dir = (Path(h.details["run_dir"]) for h in (first, again.handle))
    assert (second_dir / "retries.json").read_text() == (first_dir / "retries.json").read_text()
    assert "token length 3" in (first_dir / "worker.log").read_text()
    log = (second_dir / "worker.log").read_text()
    assert "token length 6" in log
    assert "abcdef" not in log


@asynchronous
async def test_y_copies_the_run_id_on_the_run_screen(state_dir: Path) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await pilot.press("y")
        await wait_until(pilot, lambda: app.clipboard == handle.run_id, "the clipboard")


@asynchronous
async def test_the_command_palette_offers_the_runs_actions(state_dir: Path) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = RunScreen(handle, clock=lambda: NOW)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "its state")
        titles = [command.title for command in run_commands(screen)]
        # The run has ended: no "Cancel" among the actions the palette offers on it.
        assert f"Re-run {handle.run_id}" in titles
        assert f"Fetch {handle.run_id}" in titles
        assert f"Cancel {handle.run_id}" not in titles
        await pilot.press("ctrl+p")
        await pilot.press(*"copy id")
        await wait_until(
            pilot, lambda: f"Copy id {handle.run_id}" in screen_text(app), "the palette's hit"
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.clipboard == handle.run_id, "the clipboard")


@asynchronous
async def test_the_palette_offers_the_run_actions_on_the_main_screen_too(state_dir: Path) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.highlighted_handle() == handle, "the run")
        await pilot.press("ctrl+p")
        await pilot.press(*"copy id")
        await wait_until(
            pilot, lambda: f"Copy id {handle.run_id}" in screen_text(app), "the palette's hit"
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.clipboard == handle.run_id, "the clipboard")
        assert isinstance(app.screen, MainScreen)


@asynchronous
async def test_the_palette_offers_a_highlighted_sweeps_cancel_and_id(state_dir: Path) -> None:
    sweep_id = "sweep-train-20260919T120000Z-0a1b2c3d"
    run_id = "train-20260919T120000Z-0a1b2c"
    finished_run(state_dir, run_id=run_id, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    SweepStore(state_dir / "x-tui" / "sweeps").save(
        Sweep(
            sweep_id=sweep_id,
            job="train",
            backend="local",
            project="/home/user/sample",
            created_at=SUBMITTED_AT,
            axes=(SweepAxis(name="LR", values=("1e-4",)),),
            runs=(SweepRun(run_id=run_id, parameters={"LR": "1e-4"}),),
        )
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: f"sweep:{sweep_id}" in table.rows, "the sweep's row")
        table.move_cursor(row=table.get_row_index(f"sweep:{sweep_id}"))
        await pilot.press("ctrl+p")
        await pilot.press(*"sweep")
        await wait_until(
            pilot, lambda: f"Cancel sweep {sweep_id}" in screen_text(app), "the palette's hit"
        )
        await pilot.press("ctrl+a", "ctrl+k", *"copy id sweep")
        await wait_until(pilot, lambda: f"Copy id {sweep_id}" in screen_text(app), "copy id")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.clipboard == sweep_id, "the clipboard")


@asynchronous
async def test_c_on_a_run_that_already_ended_asks_nothing_and_says_so(state_dir: Path) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.FAILED, 1, 1.0, ())])
    app = make_app(None, poll=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(
            pilot, lambda: app.monitor.state_of(handle.run_id) is RunState.FAILED, "its state"
        )
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await wait_until(pilot, lambda: dimmed(app, "c"), "c dimmed in the footer")
        key = footer_key(app, "c")
        assert key is not None
        assert "Only for a run still going" in str(key.tooltip)
        assert offered(app, "r")
        assert offered(app, "f")
        await pilot.press("c")
        await wait_until(
            pilot,
            lambda: f"{handle.run_id} already failed; nothing to cancel" in notices(app),
            "the notice",
        )
        assert isinstance(app.screen, RunScreen)


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_the_main_screens_runs_table_cancels_the_highlighted_run(
    state_dir: Path, sample: Path
) -> None:
    handle = await submitted(sample, "slow")
    app = make_app(sample)
    async with app.run_test(size=(120, 40)) as pilot:
        main = app.main_screen
        await wait_until(
            pilot,
            lambda: (
                main.runs.highlighted_handle() is not None
                and app.monitor.state_of(handle.run_id) is RunState.RUNNING
            ),
            "the running run in the table",
        )
        main.runs.focus()
        await wait_until(
            pilot, lambda: offered(app, "c") and dimmed(app, "d"), "c offered and d dimmed"
        )
        await pilot.press("y")
        await wait_until(pilot, lambda: app.clipboard == handle.run_id, "the clipboard")
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: app.monitor.state_of(handle.run_id) is RunState.CANCELLED,
            "the run to stop",
        )
        assert isinstance(app.screen, MainScreen)
        # The highlighted run has ended: cancelling is over, deleting is offered.
        await wait_until(
            pilot, lambda: dimmed(app, "c") and offered(app, "d"), "c dimmed and d offered"
        )


@asynchronous
async def test_question_mark_lists_the_screens_keys_and_the_apps_and_escape_closes_it(
    state_dir: Path,
) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())],
        accelerator=Accelerator(kind="L4"),
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        text = screen_text(app)
        for group in ("Run screen", "Everywhere", "Log view"):
            assert group in text
        for key, description in (("c", "Cancel run"), ("f", "Fetch"), ("q", "Quit")):
            row = next(line for line in text.splitlines() if description in line)
            assert f" {key} " in row
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")


def test_no_run_action_sits_on_a_key_terminals_and_tmux_take() -> None:
    reserved = {"ctrl+d", "ctrl+k", "ctrl+b", "ctrl+a"}
    for action in RUN_ACTIONS.values():
        assert not set(action.key.split(",")) & reserved, action


@asynchronous
async def test_the_run_screen_binds_nothing_destructive_to_reserved_keys(state_dir: Path) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = RunScreen(handle, clock=lambda: NOW)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.loaded, "the run screen to load")
        bindings = app.screen.active_bindings
        for key in ("ctrl+d", "ctrl+k", "ctrl+b", "ctrl+a"):
            active = bindings.get(key)
            assert active is None or "run_action" not in active.binding.action, key


def test_every_run_action_s_handlers_exist_and_take_a_screen_and_a_run() -> None:
    import inspect

    from x_tui.app.actions import LaterHandler

    for action in RUN_ACTIONS.values():
        for handler, arity in ((action.run, 2), (action.sweep, 3)):
            if handler is None:
                continue
            function = handler.resolve() if isinstance(handler, LaterHandler) else handler
            assert callable(function), (action.name, handler)
            assert len(inspect.signature(function).parameters) == arity, (action.name, handler)


def test_the_screens_bindings_and_ids_come_from_the_registry() -> None:
    from x_tui.app.key_ids import key_ids

    ids = key_ids()
    for action in RUN_ACTIONS.values():
        where = {"main": "Main screen", "run": "Run screen"}
        assert ids[action.key_id].keys == action.key
        assert set(ids[action.key_id].where.split(", ")) == {where[w] for w in action.where}
    main_keys = {b.key for b in MainScreen.BINDINGS if isinstance(b, Binding)}
    run_keys = {b.key for b in RunScreen.BINDINGS if isinstance(b, Binding)}
    assert {"c", "f", "r", "y", "d", "exclamation_mark"} <= main_keys
    assert {"c", "f", "r", "y", "x", "exclamation_mark"} <= run_keys
    assert "d" not in run_keys  # delete is offered on the runs pane only
