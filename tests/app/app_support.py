"""The TUI tests' helpers: a project's jobs, the app on the state directory the environment names
(with quick polls), what its screen shows, and runs written or submitted as substrax and the CLI
would. The fixtures that use them are ``tests/app/conftest.py``'s; waiting is ``tests.support``'s.

Everything is real: the run store is files, a run is the local backend's detached worker, a CLI
submit is ``python -m x_tui run`` in another process. Waiting is by condition with a generous
deadline (a failure, never a measured threshold).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from textual.pilot import Pilot

from tests.support import DEADLINE, QUICK_POLLS, wait_until
from x_tui.app.app import XTuiApp
from x_tui.app.run_follower import PollIntervals
from x_tui.app.service import Service
from x_tui.app.settings import Settings
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, RunListing, RunStore
from x_tui.compute.worker.records import dumps_pretty
from x_tui.widgets.runs_table import RunsTable

QUICK_JOB = """
[tool.substrax.compute.jobs.quick]
timeout_seconds = 120
[tool.substrax.compute.jobs.quick.commands]
hello = ["python", "-c", "print('hello from quick')"]
"""

SECOND_JOB = """
[tool.substrax.compute.jobs.second]
timeout_seconds = 60
commands = { echo = ["python", "-c", "print('second')"] }
"""


def pyproject_text(jobs: str = QUICK_JOB + SECOND_JOB) -> str:
    """A pyproject.toml whose local backend runs this interpreter, with ``jobs`` appended."""
    return f"""\
[project]
name = "sample"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = {json.dumps(sys.executable)}
{jobs}"""


def make_app(
    project: Path | None,
    *,
    clock: Callable[[], float] = time.time,
    poll: bool = True,
    settings: Settings | None = None,
    poll_intervals: PollIntervals = QUICK_POLLS,
) -> XTuiApp:
    """The app on ``project`` and the state directory the environment names.

    Unfinished runs are polled every :data:`QUICK_POLLS` (a test's run ends in about a second;
    the app's own intervals would make it wait up to two more to see that).
    """
    return XTuiApp(
        project,
        service=Service(),
        clock=clock,
        poll=poll,
        settings=settings,
        poll_intervals=poll_intervals,
    )


def screen_text(app: XTuiApp) -> str:
    """Every character the screen shows now, line by line."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def jobs_shown(pilot: Pilot[None]) -> RunsTable:
    """Wait for the project's jobs on the main screen of ``pilot``'s app; its runs table."""
    screen = pilot.app.main_screen  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: screen.jobs.job_names != (), "the jobs")
    runs: RunsTable = screen.runs
    return runs


def submit_with_cli(project: Path, job: str) -> str:
    """Submit ``job`` with ``python -m x_tui run --detach`` in another process; its run id."""
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", "run", job, "--project", str(project), "--detach"],
        capture_output=True,
        text=True,
        check=False,
        timeout=DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    store = RunStore()
    runs = [handle.run_id for handle in store.read_all().handles if handle.job == job]
    assert runs, f"the CLI said {done.stdout!r} but saved no run of {job}"
    return runs[0]


def save_handle(
    state: Path,
    *,
    run_id: str,
    job: str,
    backend: str = "local",
    submitted_at: dt.datetime,
    project: str = "/home/user/sample",
) -> RunHandle:
    """Write a handle into the store under ``state`` as substrax would."""
    handle = RunHandle(
        run_id=run_id,
        backend=backend,
        job=job,
        project=project,
        submitted_at=submitted_at,
        settings={"python": None, "state_dir": None} if backend == "local" else {},
        details={"pid": "999999999", "run_dir": f"/nonexistent/{run_id}"},
    )
    path = state / "compute" / "runs" / f"{run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_pretty(handle), encoding="utf-8")
    return handle


def keep_final_states(state: Path, states: dict[str, tuple[RunState, float]]) -> None:
    """Write the monitor's record of finished runs, as an earlier session would have left it."""
    path = state / "x-tui" / "final-states.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = {
        run_id: {"state": run_state.value, "ended_at": ended}
        for run_id, (run_state, ended) in states.items()
    }
    path.write_text(json.dumps({"version": 1, "runs": runs}), encoding="utf-8")


@contextlib.contextmanager
def whole_listing_held(service: Service) -> Iterator[threading.Event]:
    """Keep ``service``'s store from being read whole until the event given is set, or the
    block ends."""
    release = threading.Event()
    real_listing = service.store.listing

    def held_listing() -> RunListing:
        release.wait(DEADLINE)
        return real_listing()

    service.store.listing = held_listing  # type: ignore[method-assign]
    try:
        yield release
    finally:
        release.set()
