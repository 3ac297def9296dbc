"""An open TUI announces a run's end: a toast, and (with no watcher running) the user's hook."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support import asynchronous, wait_until
from x_tui.app.notify_settings import NotifySettings
from x_tui.app.settings import Settings
from x_tui.app.watch_events import EventKind
from x_tui.compute.backend import RunState

from .app_support import make_app, pyproject_text, submit_with_cli

GATED_JOB = """
[tool.substrax.compute.jobs.gated]
timeout_seconds = 120
[tool.substrax.compute.jobs.gated.commands]
wait = ["python", "{script}", "{gate}"]
"""

GATED = """\
import pathlib, sys, time
gate = pathlib.Path(sys.argv[1])
for _ in range(2400):
    if gate.exists():
        break
    time.sleep(0.05)
sys.exit(4)
"""

HOOK = "import os, sys; open(sys.argv[1], 'a').write(os.environ['X_TUI_STATE'] + '\\n')"


@asynchronous
async def test_a_run_seen_running_then_failing_is_toasted_and_hooked_once(
    state_dir: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    project = tmp_path / "sample"
    project.mkdir()
    script = tmp_path / "gated.py"
    script.write_text(GATED)
    jobs = GATED_JOB.replace("{gate}", str(gate)).replace("{script}", str(script))
    (project / "pyproject.toml").write_text(pyproject_text(jobs), encoding="utf-8")
    calls = tmp_path / "calls.txt"
    notify = NotifySettings(
        events=frozenset({EventKind.FAILED}), command=(sys.executable, "-c", HOOK, str(calls))
    )
    app = make_app(project, settings=Settings(notify=notify))
    async with app.run_test(size=(100, 30)) as pilot:
        run_id = submit_with_cli(project, "gated")
        await wait_until(
            pilot, lambda: app.monitor.state_of(run_id) is RunState.RUNNING, "the run to start"
        )
        gate.touch()
        await wait_until(
            pilot,
            lambda: any(f"run {run_id} (gated) failed" in n.message for n in app._notifications),
            "the toast",
        )
        await wait_until(pilot, calls.exists, "the hook")
    assert calls.read_text() == "failed\n"
    delivered = (state_dir / "x-tui" / "notified.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in delivered] == [f"{run_id}:failed"]


@asynchronous
async def test_a_submit_starts_the_watcher_when_the_settings_ask(
    state_dir: Path, project: Path
) -> None:
    from x_tui.app.submit_screen import SubmitScreen
    from x_tui.app.watch_daemon import stop_watcher
    from x_tui.app.watch_lock import running_pid
    from x_tui.compute.operations import open_project

    app = make_app(project, settings=Settings(notify=NotifySettings(start_watcher=True)))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            assert running_pid(state_dir) is None
            screen = SubmitScreen("quick", project=open_project(project))
            await app.push_screen(screen)
            await wait_until(pilot, lambda: screen.plan is not None, "the plan")
            await pilot.press("enter")
            await wait_until(pilot, lambda: screen.submitted is not None, "the submit")
            await wait_until(
                pilot, lambda: bool(running_pid(state_dir)), "the watcher to be started"
            )
    finally:
        stop_watcher(state_dir)
    assert running_pid(state_dir) is None
