"""Under the low-bandwidth profile a run submitted from the TUI samples less: its worker takes a
sample every 15 s instead of 5 (``LOW_BANDWIDTH_SLOWDOWN`` times fewer, so each peek of a remote
run's ``telemetry.jsonl`` reads less), unless the job set its own ``telemetry_seconds``.

Real local runs; the pace is read from the header the worker wrote in each run's telemetry file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.service import Service
from x_tui.app.settings import Settings
from x_tui.app.submit_screen import SubmitScreen
from x_tui.compute.operations import open_project
from x_tui.compute.store import RunHandle
from x_tui.compute.telemetry_read import read_telemetry
from x_tui.compute.worker.telemetry import TELEMETRY_NAME

from .app_support import make_app, pyproject_text

JOBS = """
[tool.substrax.compute.jobs.plain]
timeout_seconds = 60
commands = { nap = ["python", "-c", "import time; time.sleep(30)"] }

[tool.substrax.compute.jobs.paced]
timeout_seconds = 60
commands = { nap = ["python", "-c", "import time; time.sleep(30)"] }

[tool.x-tui.jobs.paced]
telemetry_seconds = 2
"""


@pytest.fixture
def project(tmp_path: Path, state_dir: Path) -> Path:
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(pyproject_text(JOBS), encoding="utf-8")
    return root


async def _intervals(project: Path, *, low: bool, jobs: tuple[str, ...]) -> list[float | None]:
    """Submit each job from the submit screen; the sample interval each run's worker took."""
    app = make_app(project, poll=False, settings=Settings(low_bandwidth=low))
    service = Service()
    handles: list[RunHandle] = []
    intervals: list[float | None] = []
    async with app.run_test(size=(100, 30)) as pilot:
        for job in jobs:
            screen = SubmitScreen(job, project=open_project(project))
            await app.push_screen(screen)
            await wait_until(pilot, lambda s=screen: s.plan is not None, "a plan")
            await pilot.press("enter")
            await wait_until(pilot, lambda s=screen: s.submitted is not None, "the run")
            assert screen.submitted is not None
            handles.append(screen.submitted)
        for handle in handles:
            await wait_until(
                pilot,
                lambda h=handle: read_telemetry(service.peek(h, TELEMETRY_NAME)) is not None,
                "the telemetry header",
            )
            telemetry = read_telemetry(service.peek(handle, TELEMETRY_NAME))
            assert telemetry is not None
            intervals.append(telemetry.interval)
            service.cancel(handle)
    return intervals


@pytest.mark.slow
@asynchronous
async def test_the_low_bandwidth_profile_samples_three_times_less_unless_the_job_sets_it(
    project: Path,
) -> None:
    assert await _intervals(project, low=True, jobs=("plain", "paced")) == [15.0, 2.0]


@asynchronous
async def test_the_usual_profile_samples_at_the_default_pace(project: Path) -> None:
    assert await _intervals(project, low=False, jobs=("plain",)) == [5.0]
