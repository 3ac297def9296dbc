"""The bundled demo project: copied once, pointed at this interpreter, and its jobs do as told."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_for, wait_until
from x_tui.app.service import Service
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.manifest import MANIFEST_NAME, TaskStatus, load_manifest
from x_tui.demo import prepare_demo_project

from .app_support import make_app, screen_text


def _finish(service: Service, job: str) -> tuple[RunHandle, RunState]:
    project = service.open_project(prepare_demo_project())
    handle = service.submit(service.plan(project, job))

    def final() -> RunState | None:
        state = service.status(handle)
        return state if state.is_final else None

    state = wait_for(final, f"the end of the demo's {job} job", every=0.1)
    assert state is not None
    return handle, state


def test_the_demo_is_copied_once_and_runs_this_interpreter(state_dir: Path) -> None:
    first = prepare_demo_project()
    text = (first / "pyproject.toml").read_text(encoding="utf-8")
    assert f'python = "{sys.executable}"' in text
    (first / "pyproject.toml").write_text(text + "\n# my note\n", encoding="utf-8")
    again = prepare_demo_project()
    assert again == first
    assert "# my note" in (again / "pyproject.toml").read_text(encoding="utf-8")
    project = Service().open_project(again)
    assert project.problem is None
    assert project.config is not None
    assert list(project.config.jobs) == ["hello", "flaky", "long", "progress"]


@pytest.mark.slow
def test_the_demos_hello_job_succeeds_and_writes_outputs(state_dir: Path) -> None:
    service = Service()
    handle, state = _finish(service, "hello")
    assert state is RunState.SUCCEEDED
    files = service.run_files(handle)
    assert files is not None
    manifest = load_manifest(files.outputs / MANIFEST_NAME)
    assert manifest is not None
    outputs = {task.name: task.outputs for task in manifest.tasks}
    assert "greeting/hello.txt" in outputs["greet"]
    assert (files.outputs / "summary" / "summary" / "total.txt").read_text() == "15\n"


@pytest.mark.slow
def test_the_demos_flaky_job_fails_one_task_and_runs_the_next(state_dir: Path) -> None:
    service = Service()
    handle, state = _finish(service, "flaky")
    assert state is RunState.FAILED
    files = service.run_files(handle)
    assert files is not None
    manifest = load_manifest(files.outputs / MANIFEST_NAME)
    assert manifest is not None
    statuses = {task.name: task.status for task in manifest.tasks}
    assert statuses == {
        "prepare": TaskStatus.SUCCEEDED,
        "broken": TaskStatus.FAILED,
        "report": TaskStatus.SUCCEEDED,
    }
    assert "ValueError" in (files.outputs / "broken" / "stderr.log").read_text()


@pytest.mark.slow
@asynchronous
async def test_the_demos_progress_job_shows_its_progress_at_120x40_and_draws_in_colour(
    state_dir: Path,
) -> None:
    project = prepare_demo_project()
    service = Service()
    handle = service.submit(service.plan(service.open_project(project), "progress"))
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.main_screen.runs

        def progress() -> str:
            if "progress" not in table.columns or handle.run_id not in table.rows:
                return ""
            return table.get_cell(handle.run_id, "progress").plain

        # Read from its tqdm-style bar by the worker; the Backend and Job columns give way to it.
        await wait_until(pilot, lambda: "ETA" in progress(), "the run's progress and ETA")
        assert re.fullmatch(r"\d+% ETA \d+s", progress())
        text = screen_text(app)
        assert "Progress" in text
        assert progress() in text
        assert handle.run_id in text

    def final() -> RunState | None:
        state = service.status(handle)
        return state if state.is_final else None

    assert wait_for(final, "the end of the demo's progress job", every=0.1) is RunState.SUCCEEDED
    log = service.log_path(handle).read_bytes()
    assert b"\r" in log
    assert b"\x1b[32m" in log
    assert b"| 120/120 [" in log


def test_the_demos_long_job_prints_for_two_minutes(state_dir: Path) -> None:
    service = Service()
    jobs = service.list_jobs(service.open_project(prepare_demo_project()))
    [task] = jobs.specs["long"].tasks
    assert task.argv[-1] == "120"
    assert jobs.specs["long"].timeout_seconds > 120
