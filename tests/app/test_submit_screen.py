"""The submit screen: its preview follows the fields, refusals stay in the screen, and nothing
is half-submitted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from backends.fake_modal.harness import PYPROJECT as MODAL_PYPROJECT
from backends.fake_modal.harness import install_fake_modal
from textual.widgets import Button, Input, Select

from tests.support import QUICK_POLLS, asynchronous, wait_until
from x_tui.app.app import XTuiApp
from x_tui.app.main_screen import MainScreen
from x_tui.app.service import Service
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute.operations import open_project
from x_tui.compute.store import RunStore

from .app_support import make_app, pyproject_text, screen_text
from .screens_support import QUICK_JOB, write_project

GPU_JOB = """
[tool.substrax.compute.jobs.gpu]
timeout_seconds = 600
resources = { accelerator = { kind = "L4", count = 1 }, cpu = 8 }
[tool.substrax.compute.jobs.gpu.commands]
check = ["python", "-c", "print('checking')"]
"""


async def _open_submit(app: object, pilot: object, job: str, project: Path) -> SubmitScreen:
    screen = SubmitScreen(job, project=open_project(project))
    await app.push_screen(screen)  # type: ignore[attr-defined]
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: screen.plan is not None or screen.error is not None,
        "a plan",
    )
    return screen


@asynchronous
async def test_the_preview_shows_the_resolved_spec_and_where_it_runs(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", QUICK_JOB + GPU_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "gpu", project)
        text = screen_text(app)
        assert "Submit gpu" in text
        assert "L4 · 8 CPU" in text
        task_row = next(line for line in text.splitlines() if line.strip().startswith("check "))
        assert "python -c" in task_row
        assert "Runs on   local" in text
        assert app.focused is screen.query_one("#submit-go", Button)
        backend: Select[str] = screen.query_one("#submit-backend", Select)
        assert backend.value == "local"
        assert screen.query_one("#submit-accelerator", Input).value == "L4"


@asynchronous
async def test_the_preview_says_which_handle_version_the_submit_writes_and_why(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", QUICK_JOB)
    (project / "uv.lock").write_text(
        'version = 1\n[[package]]\nname = "substrax"\nversion = "0.1.22"\n'
        'source = { registry = "https://pypi.org/simple" }\n'
    )
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_submit(app, pilot, "quick", project)
        text = screen_text(app)
        row = next(line for line in text.splitlines() if "Handle" in line)
        assert "version 1 (substrax 0.1.x's): the project locks substrax 0.1.22" in row
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(RunStore().read_all().handles), "the run")
        [handle] = RunStore().read_all().handles
        written = json.loads((RunStore().path_of(handle.run_id)).read_text())
        assert written["schema_version"] == 1
        assert "settings" not in written
        assert handle.settings == {"python": sys.executable, "state_dir": None}


@asynchronous
async def test_typing_an_accelerator_plans_again_and_the_preview_follows(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", QUICK_JOB + GPU_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "gpu", project)
        field = screen.query_one("#submit-accelerator", Input)
        field.focus()
        field.value = ""
        await pilot.press(*"H100:8")
        await wait_until(pilot, lambda: "H100:8 · 8 CPU" in screen_text(app), "the new request")
        assert screen.plan is not None
        assert str(screen.plan.spec.resources.accelerator) == "H100:8"


@asynchronous
async def test_a_bad_accelerator_is_shown_in_the_screen_and_enter_submits_nothing(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", QUICK_JOB + GPU_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "gpu", project)
        field = screen.query_one("#submit-accelerator", Input)
        field.focus()
        field.value = ""
        await pilot.press(*"H100:zero")
        # The refusal of the whole value: on a busy machine a key can come after the debounce,
        # and a plan of the value typed so far, refused too, would leave one more plan pending.
        await wait_until(
            pilot, lambda: "'H100:zero'" in (screen.error or ""), "the refusal of H100:zero"
        )
        assert "H100:zero" in screen_text(app)
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Not submitted" in screen_text(app), "the refusal again")
        assert "H100:zero" in screen_text(app)
        assert RunStore().read_all().handles == ()
        assert not screen.query_one("#submit-go", Button).disabled
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")


@asynchronous
async def test_an_interpreter_that_cannot_start_is_refused_and_leaves_no_run(
    state_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "sample"
    project.mkdir()
    text = pyproject_text(QUICK_JOB).replace(
        f"python = {json.dumps(sys.executable)}", 'python = "/nonexistent/bin/python"'
    )
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "quick", project)
        assert screen.plan is not None
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Not submitted" in screen_text(app), "the refusal")
        assert "/nonexistent/bin/python" in screen_text(app)
        assert isinstance(app.screen, SubmitScreen)
        assert RunStore().read_all().handles == ()
        assert not list((state_dir / "compute" / "local").glob("*/worker.pyz"))


@asynchronous
async def test_a_backend_that_refuses_its_settings_names_the_file_and_key(
    state_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "sample"
    project.mkdir()
    text = pyproject_text(QUICK_JOB).replace(
        f"python = {json.dumps(sys.executable)}", 'pythn = "python3"'
    )
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "quick", project)
        assert screen.error is not None
        assert "pythn" in screen.error
        assert "pythn" in screen_text(app)
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Not submitted" in screen_text(app), "the refusal")
        assert RunStore().read_all().handles == ()


SECRET_VALUE = "s3cr3t-value-never-shown"

EXTENDED_JOB = """
[tool.substrax.compute.jobs.extended]
timeout_seconds = 600
retries = { default = 0, tasks = { train = 2 } }
dependencies = { python = ["rich>=13"] }
secrets = { env = ["XTUI_TEST_TOKEN"], optional_env = ["XTUI_TEST_OPTIONAL"] }
[tool.substrax.compute.jobs.extended.commands]
train = ["python", "-c", "print('training')"]
"""

NEEDS_SECRET_JOB = """
[tool.substrax.compute.jobs.needs]
timeout_seconds = 600
secrets = { env = ["XTUI_TEST_MISSING_TOKEN"] }
[tool.substrax.compute.jobs.needs.commands]
train = ["python", "-c", "print('training')"]
"""


@asynchronous
async def test_the_preview_shows_the_cost_bound_and_the_extensions_by_name_only(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XTUI_TEST_TOKEN", SECRET_VALUE)
    monkeypatch.delenv("XTUI_TEST_OPTIONAL", raising=False)
    project = write_project(tmp_path / "sample", QUICK_JOB + EXTENDED_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "extended", project)
        assert screen.plan is not None
        assert screen.plan.estimate is not None
        assert screen.error is None
        text = " ".join(screen_text(app).split())
        assert f"Cost {screen.plan.estimate.text()}" in text
        assert "Secrets XTUI_TEST_TOKEN, XTUI_TEST_OPTIONAL (optional: unset, skipped)" in text
        assert "Retries train 2 more attempt(s) after a failure" in text
        assert "Dependencies python rich>=13" in text
        assert SECRET_VALUE not in text
        assert "Ready: enter submits" in text


@asynchronous
async def test_a_required_secret_not_set_is_an_error_in_the_screen_and_nothing_is_submitted(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XTUI_TEST_MISSING_TOKEN", raising=False)
    project = write_project(tmp_path / "sample", QUICK_JOB + NEEDS_SECRET_JOB)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_submit(app, pilot, "needs", project)
        assert screen.error is not None
        assert "XTUI_TEST_MISSING_TOKEN" in screen.error
        text = " ".join(screen_text(app).split())
        assert "Cannot submit: job 'needs' needs XTUI_TEST_MISSING_TOKEN from this shell" in text
        assert "XTUI_TEST_MISSING_TOKEN (required: not set in this shell)" in text
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Not submitted" in screen_text(app), "the refusal")
        assert "XTUI_TEST_MISSING_TOKEN" in screen_text(app)
        assert isinstance(app.screen, SubmitScreen)
        assert RunStore().read_all().handles == ()
        assert not (state_dir / "compute" / "local").exists() or not any(
            (state_dir / "compute" / "local").iterdir()
        )


MODAL_GPU_JOB = """
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "tui-runs"

[tool.substrax.compute.jobs.big]
timeout_seconds = "3h"
resources = { accelerator = "H100:8", cpu = 8, memory = "32Gi" }
commands = { train = ["python", "-c", "print('training')"] }
"""


@asynchronous
async def test_the_cost_preview_is_the_plans_estimate_with_its_breakdown_and_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))
    for _fake in install_fake_modal(tmp_path, monkeypatch):
        project = tmp_path / "sample"
        project.mkdir()
        (project / "pyproject.toml").write_text(MODAL_PYPROJECT + MODAL_GPU_JOB)
        app = XTuiApp(project, service=Service(), poll_intervals=QUICK_POLLS)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await _open_submit(app, pilot, "big", project)
            assert screen.plan is not None, screen.error
            estimate = screen.plan.estimate
            assert estimate is not None
            assert estimate.max_usd is not None
            assert estimate.source
            text = " ".join(screen_text(app).split())
            assert f"Cost {estimate.text()}" in text
            assert text.startswith("Submit big")
            for line in estimate.lines:
                assert " ".join(line.split()) in text
            assert f"prices: {estimate.source}" in text
