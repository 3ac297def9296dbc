"""The ``!`` action: a shell in the run's directory with its tasks' environment, local runs only.

The terminal is the one boundary faked: the headless driver says it can be suspended and records
that it was; the shell is a real process (``$SHELL`` pointed at a script that writes where it ran
and what its environment held).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from textual.drivers.headless_driver import HeadlessDriver

from tests.support import asynchronous, wait_until
from x_tui.app.actions import RUN_ACTIONS
from x_tui.app.app import XTuiApp
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.app.run_screen import RunScreen
from x_tui.app.service import Service
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.manifest import TaskStatus

from .app_support import make_app, save_handle
from .screens_support import NOW, finished_run, notices


@pytest.fixture
def suspensions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The headless driver made suspendable; each suspend and resume is recorded in order."""
    calls: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True))
    monkeypatch.setattr(
        HeadlessDriver, "suspend_application_mode", lambda self: calls.append("suspend")
    )
    monkeypatch.setattr(
        HeadlessDriver, "resume_application_mode", lambda self: calls.append("resume")
    )
    return calls


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$SHELL``: a script that writes its directory and environment to ``shell.out``."""
    out = tmp_path / "shell.out"
    script = tmp_path / "fake-shell"
    script.write_text(f'#!/bin/sh\n{{ pwd; env; }} > "{out}"\n', encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("SHELL", str(script))
    return out


@asynchronous
async def test_bang_opens_a_shell_in_the_run_s_directory_with_its_environment(
    state_dir: Path, suspensions: list[str], shell: Path
) -> None:
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    run_dir = state_dir / "compute" / "local" / handle.run_id
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await pilot.press("exclamation_mark")
        await wait_until(pilot, lambda: "Back from the shell" in " ".join(notices(app)), "back")
        assert isinstance(app.screen, RunScreen)
    assert suspensions == ["suspend", "resume"]
    directory, *variables = shell.read_text(encoding="utf-8").splitlines()
    assert Path(directory).resolve() == run_dir.resolve()
    assert "TF_CPP_MIN_LOG_LEVEL=1" in variables  # the job's env, from its staged spec
    assert f"SHELL={os.environ['SHELL']}" in variables  # over this process's own


class RemoteBackend:
    """A backend that keeps its runs' files elsewhere (no ``LOCAL_FILES`` ability)."""

    name = "modal"


@asynchronous
async def test_bang_on_a_remote_run_says_the_shell_is_for_local_runs_and_starts_nothing(
    state_dir: Path, suspensions: list[str], shell: Path
) -> None:
    handle: RunHandle = save_handle(
        state_dir,
        run_id="train-20261201T000000Z-0a1b2c",
        job="train",
        backend="modal",
        submitted_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )
    service = Service(build_backend=lambda _handle: RemoteBackend())  # type: ignore[arg-type,return-value]
    app = XTuiApp(None, service=service, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await pilot.press("exclamation_mark")
        await wait_until(pilot, lambda: "No shell" in " ".join(notices(app)), "the refusal")
        text = " ".join(notices(app))
        assert "ran on modal" in text
        assert "this machine" in text
    assert suspensions == []
    assert not shell.exists()


@asynchronous
async def test_the_read_only_web_view_refuses_the_shell(
    state_dir: Path, suspensions: list[str], shell: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X_TUI_READ_ONLY", "1")
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 1.0, ())])
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        await pilot.press("exclamation_mark")
        await wait_until(pilot, lambda: "read-only" in " ".join(notices(app)), "the refusal")
        assert not isinstance(app.screen, ConfirmScreen)
    assert suspensions == []
    assert not shell.exists()


def test_the_shell_is_one_entry_of_the_registry_with_its_key_id() -> None:
    action = RUN_ACTIONS["shell"]
    assert (action.key, action.key_id, action.read_only) == ("exclamation_mark", "run.shell", False)
    assert action.where == {"main", "run"}
