"""The run screen against real runs of the local backend and runs written as files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from tests.support import asynchronous, wait_until
from x_tui.app.confirm_screen import ConfirmScreen
from x_tui.app.messages import RunStateChanged
from x_tui.app.run_screen import LOCAL_REFRESH_SECONDS, RunScreen
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute.backend import RunState
from x_tui.compute.worker.log_metrics import METRICS_NAME
from x_tui.compute.worker.manifest import RunDevices, TaskStatus
from x_tui.compute.worker.spec import Accelerator
from x_tui.widgets.devices_view import compare_devices, kind_matches

from .app_support import make_app, screen_text
from .screens_support import (
    NOW,
    finished_run,
    submitted,
    write_project,
)


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A project with the jobs quick, failing, slow and writer."""
    return write_project(tmp_path / "sample")


def _run_screen(app: object) -> RunScreen:
    screen = getattr(app, "screen", None)
    assert isinstance(screen, RunScreen), f"the screen in front is {type(screen).__name__}"
    return screen


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_two_enters_submit_a_job_and_its_log_lines_arrive_until_it_succeeds(
    state_dir: Path, sample: Path
) -> None:
    app = make_app(sample)
    async with app.run_test(size=(100, 30)) as pilot:
        browser = app.main_screen.jobs
        await wait_until(pilot, lambda: browser.highlighted_job == "quick", "the first job")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit screen")
        submit = app.screen
        assert isinstance(submit, SubmitScreen)
        await wait_until(pilot, lambda: submit.plan is not None, "the plan preview")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        screen = _run_screen(app)
        assert screen.handle.job == "quick"
        await wait_until(
            pilot, lambda: "hello from quick" in screen_text(app), "the task's line in the log"
        )
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the run to succeed")
        await wait_until(pilot, lambda: " succeeded " in screen_text(app), "the header to say so")
        assert screen.handle.run_id in screen_text(app)


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_a_failing_job_ends_failed_with_its_exit_code_in_the_manifest_tab(
    state_dir: Path, sample: Path
) -> None:
    handle = await submitted(sample, "failing")
    app = make_app(sample)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.state is RunState.FAILED, "the run to fail")
        await wait_until(pilot, lambda: "about to fail" in screen_text(app), "its last line")
        await pilot.press("right_square_bracket")
        await wait_until(
            pilot,
            lambda: "finished · 1 of 1 tasks ran · 1 failed" in screen_text(app),
            "the manifest summary",
        )
        row = next(
            line for line in screen_text(app).splitlines() if line.strip().startswith("boom")
        )
        assert row.split()[1:3] == ["failed", "3"]


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_c_then_y_cancels_a_long_job(state_dir: Path, sample: Path) -> None:
    handle = await submitted(sample, "slow")
    app = make_app(sample)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: "sleeping" in screen_text(app), "the job to start")
        await pilot.press("c")
        await wait_until(
            pilot, lambda: f"Cancel run {handle.run_id}" in screen_text(app), "the question"
        )
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.state is RunState.CANCELLED, "the run to stop")
        await wait_until(pilot, lambda: " cancelled " in screen_text(app), "the header to say so")


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_declining_the_cancel_question_leaves_the_run_running(
    state_dir: Path, sample: Path
) -> None:
    handle = await submitted(sample, "slow")
    app = make_app(sample)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: "sleeping" in screen_text(app), "the job to start")
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("enter")  # "No" has the focus
        await wait_until(pilot, lambda: app.screen is screen, "the run screen again")
        await pilot.press("n")
        assert app.screen is screen
        backend_state = await _status(handle)
        assert backend_state is RunState.RUNNING


async def _status(handle: object) -> RunState:
    import asyncio

    from x_tui.compute import operations

    return await asyncio.to_thread(
        lambda: operations.backend_for(handle).status(handle)  # type: ignore[arg-type]
    )


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_f_then_enter_fetches_the_outputs_under_the_fetch_root(
    state_dir: Path, sample: Path
) -> None:
    handle = await submitted(sample, "writer")
    app = make_app(sample)
    async with app.run_test(size=(200, 30)) as pilot:
        await app.push_screen(RunScreen(handle))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the run to end")
        await pilot.press("f")
        await wait_until(pilot, lambda: "into this directory" in screen_text(app), "the question")
        fetched = state_dir / "compute" / "fetched"
        assert str(fetched) in screen_text(app)
        await pilot.press("enter")
        value = fetched / handle.run_id / "writes" / "result" / "value.txt"
        await wait_until(pilot, lambda: "Fetched " in screen_text(app), "the fetch bar")
        assert value.read_text() == "42"
        assert str(fetched / handle.run_id) in screen_text(app)


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_the_devices_tab_of_a_real_run_shows_what_the_probe_saw_or_why_it_failed(
    state_dir: Path, sample: Path
) -> None:
    handle = await submitted(sample, "quick")
    app = make_app(sample)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(RunScreen(handle))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the run to end")
        await wait_until(
            pilot,
            lambda: screen.snapshot is not None and screen.snapshot.manifest is not None,
            "the manifest",
        )
        for _ in range(2):
            await pilot.press("right_square_bracket")
        snapshot = screen.snapshot
        assert snapshot is not None
        assert snapshot.manifest is not None
        devices = snapshot.manifest.devices
        if devices is None:
            first_line = (snapshot.devices_log or "").strip().splitlines()[-1]
            expected = ["The device probe failed; devices.log says:", first_line[:60]]
        else:
            expected = [
                f"The probe saw {devices.platform}" if not devices.kinds else devices.kinds[0]
            ]
        text = screen_text(app)
        assert "requested" in text
        assert "none (CPU)" in text
        for part in expected:
            await wait_until(pilot, lambda part=part: part in screen_text(app), repr(part))


@asynchronous
async def test_the_devices_tab_highlights_an_h100_request_answered_with_h200s(
    state_dir: Path,
) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("train", TaskStatus.SUCCEEDED, 0, 61.0, ())],
        accelerator=Accelerator(kind="H100", count=8),
        devices=RunDevices(platform="gpu", kinds=("NVIDIA H200",) * 8),
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        screen.query_one("#run-tabs", TabbedContent).active = "tab-devices"
        await wait_until(
            pilot,
            lambda: (
                "Asked for H100:8, but the provider gave 8x NVIDIA H200 (gpu)." in screen_text(app)
            ),
            "the difference",
        )
        row = next(line for line in screen_text(app).splitlines() if "accelerator" in line)
        assert row.split()[1:] == ["H100:8", "8x", "NVIDIA", "H200"]


@asynchronous
async def test_the_devices_tab_shows_the_probe_failure_from_devices_log(state_dir: Path) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("train", TaskStatus.SUCCEEDED, 0, 2.0, ())],
        devices_log=(
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'jax'\n"
        ),
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        screen.query_one("#run-tabs", TabbedContent).active = "tab-devices"
        await wait_until(
            pilot, lambda: "No module named 'jax'" in screen_text(app), "the probe's failure"
        )
        assert "The device probe failed; devices.log says:" in screen_text(app)


@asynchronous
async def test_a_retried_task_lists_its_attempts_and_p_shows_an_earlier_attempts_log(
    state_dir: Path,
) -> None:
    handle = finished_run(
        state_dir,
        tasks=[("flaky", TaskStatus.SUCCEEDED, 0, 3.0, ())],
        task_logs={"flaky": "second try worked\n"},
        attempts=[
            {"task": "flaky", "attempt": 1, "status": "failed", "returncode": 7, "seconds": 1.5},
            {"task": "flaky", "attempt": 2, "status": "succeeded", "returncode": 0, "seconds": 3.0},
        ],
        attempt_logs={("flaky", 1): "first try broke\n"},
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: "↳ attempt 1" in screen_text(app), "the earlier attempt")
        attempt_row = next(line for line in screen_text(app).splitlines() if "↳ attempt 1" in line)
        assert attempt_row.split()[3:5] == ["failed", "7"]
        await pilot.press("enter")  # the task's row: its latest logs
        await wait_until(pilot, lambda: "second try worked" in screen_text(app), "the latest log")
        assert "attempt 2 of 2 (latest)" in screen_text(app)
        await pilot.press("p")
        await wait_until(pilot, lambda: "first try broke" in screen_text(app), "attempt 1's log")
        assert "attempt 1 of 2" in screen_text(app)
        await pilot.press("p")
        await wait_until(pilot, lambda: "second try worked" in screen_text(app), "back to latest")


@asynchronous
async def test_the_spec_tab_shows_the_staged_spec(state_dir: Path) -> None:
    handle = finished_run(
        state_dir,
        tasks=[
            ("prepare", TaskStatus.SUCCEEDED, 0, 1.0, ()),
            ("train", TaskStatus.FAILED, 2, 9.0, ()),
        ],
        accelerator=Accelerator(kind="L4", count=2),
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: NOW))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        screen.query_one("#run-tabs", TabbedContent).active = "tab-spec"
        await wait_until(pilot, lambda: "Tasks (2)" in screen_text(app), "the spec's tasks")
        text = screen_text(app)
        assert "L4:2 · 8 CPU · 32 GiB" in text
        assert "python train.py" in text
        assert "TF_CPP_MIN_LOG_LEVEL=1" in text
        assert state_dir.as_posix() in text


def test_a_device_kind_matches_only_its_own_words() -> None:
    assert kind_matches("H100", "NVIDIA H100 80GB HBM3")
    assert kind_matches("A100-80GB", "NVIDIA A100-SXM4-80GB")
    assert not kind_matches("L4", "NVIDIA L40S")
    assert not kind_matches("H100", "NVIDIA H200")


def test_fewer_devices_than_requested_is_a_difference() -> None:
    comparison = compare_devices(
        Accelerator(kind="A100", count=4), RunDevices(platform="gpu", kinds=("NVIDIA A100",) * 2)
    )
    assert not comparison.matches
    assert comparison.verdict == "Asked for A100:4, but the run saw 2: 2x NVIDIA A100 (gpu)."


FLAKY_JOB = """
[tool.substrax.compute.jobs.flaky]
timeout_seconds = 120
retries = 2
commands = { flaky = ["python", "flaky.py"] }
"""

FLAKY = """\
import pathlib
import sys

counter = pathlib.Path("flaky.count")
number = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(number))
print(f"attempt number {number}", flush=True)
if number < 3:
    sys.exit(7)
print("finally worked", flush=True)
"""


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_a_task_that_failed_twice_then_succeeded_shows_its_three_attempts(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", FLAKY_JOB)
    (project / "flaky.py").write_text(FLAKY)
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        browser = app.main_screen.jobs
        await wait_until(pilot, lambda: browser.highlighted_job == "flaky", "the job")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit screen")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.state is RunState.SUCCEEDED, "the run to succeed")
        screen.query_one("#run-tabs", TabbedContent).active = "tab-manifest"
        await wait_until(pilot, lambda: "↳ attempt 2" in screen_text(app), "the attempts' rows")
        rows = [line.split() for line in screen_text(app).splitlines() if "↳ attempt" in line]
        assert [row[row.index("↳") : row.index("↳") + 5] for row in rows] == [
            ["↳", "attempt", "1", "failed", "7"],
            ["↳", "attempt", "2", "failed", "7"],
        ]
        # Manifest, then Devices, Metrics, Spec, and the task's tab.
        await pilot.press(*["right_square_bracket"] * 4)
        await wait_until(pilot, lambda: "finally worked" in screen_text(app), "the latest log")
        assert "attempt 3 of 3 (latest)" in screen_text(app)
        await pilot.press("p")
        await wait_until(pilot, lambda: "attempt number 2" in screen_text(app), "attempt 2's log")
        assert "attempt 2 of 3" in screen_text(app)
        assert "finally worked" not in screen_text(app)
        await pilot.press("p")
        await wait_until(pilot, lambda: "attempt number 1" in screen_text(app), "attempt 1's log")
        assert "attempt 1 of 3" in screen_text(app)


@asynchronous
async def test_what_the_worker_writes_after_its_last_manifest_is_shown(state_dir: Path) -> None:
    """The worker writes its final manifest before it exits, its last metrics as it exits: the
    screen reads the run's files once more after the end it saw."""
    handle = finished_run(state_dir, tasks=[("train", TaskStatus.SUCCEEDED, 0, 3.0, ())])
    metrics = state_dir / "compute" / "local" / handle.run_id / "outputs" / METRICS_NAME
    now = [NOW]
    app = make_app(None, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(RunScreen(handle, clock=lambda: now[0]))
        screen = _run_screen(app)
        await wait_until(pilot, lambda: screen.loaded, "the run's files")
        screen.query_one("#run-tabs", TabbedContent).active = "tab-metrics"
        metrics.write_text(_metrics_lines("loss_at_the_end"), encoding="utf-8")
        app.post_message(RunStateChanged(handle.run_id, RunState.SUCCEEDED, RunState.RUNNING))
        await wait_until(pilot, lambda: "loss_at_the_end" in screen_text(app), "the end's metrics")
        metrics.write_text(_metrics_lines("loss_at_the_end", "loss_at_exit"), encoding="utf-8")
        now[0] += dt.timedelta(seconds=LOCAL_REFRESH_SECONDS)
        await wait_until(pilot, lambda: "loss_at_exit" in screen_text(app), "the exit's metrics")


def _metrics_lines(*names: str) -> str:
    points = [
        {"t": 1.0 + step, "task": "train", "step": step, "values": {name: 0.5}}
        for step, name in enumerate(names)
    ]
    return "".join(json.dumps(line) + "\n" for line in [{"x_tui_metrics": 1}, *points])
