"""Pictures of the main screen at 80x24 and 60x20 (one pane at a time) and 120x40 (side by side).

The data is fixed: run ids and submit times, a sweep of two runs, the final states an earlier
session kept, a frozen clock for ages and durations, no status polling (the unfinished run shows
as being checked).
Regenerate after a deliberate change with ``uv run pytest tests/app/test_snapshots_main.py
--snapshot-update`` and look at the report before committing.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.support import exclusive, wait_until
from x_tui.app.app import XTuiApp
from x_tui.compute.backend import RunState
from x_tui.compute.sweeps import Sweep, SweepAxis, SweepRun, SweepStore

from .app_support import keep_final_states, make_app, save_handle

pytestmark = pytest.mark.one_worker  # the lock on the fixed paths (see the fixture)

NOW = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)

SnapCompare = Callable[..., bool]


def _ago(**delta: float) -> dt.datetime:
    return NOW - dt.timedelta(**delta)


FIXED_PROJECT = Path("/tmp/x-tui-main-snapshots/sample")
"""The project's fixed place: its path is on screen (the line under the runs table)."""


@pytest.fixture
def fixed_project(project: Path) -> Iterator[Path]:
    """The ``project`` fixture's pyproject.toml, at :data:`FIXED_PROJECT` (the path is on screen,
    so one test at a time on this machine holds it)."""
    with exclusive("x-tui-main-snapshots"):
        shutil.rmtree(FIXED_PROJECT.parent, ignore_errors=True)
        FIXED_PROJECT.mkdir(parents=True)
        shutil.copy(project / "pyproject.toml", FIXED_PROJECT / "pyproject.toml")
        yield FIXED_PROJECT
        shutil.rmtree(FIXED_PROJECT.parent, ignore_errors=True)


@pytest.fixture
def still_app(state_dir: Path, fixed_project: Path) -> XTuiApp:
    project = fixed_project
    runs = [
        ("quick-20260919T115930Z-a1a1a1", "quick", _ago(seconds=30), None),
        ("quick-20260919T114500Z-b2b2b2", "quick", _ago(minutes=15), (RunState.SUCCEEDED, 42.0)),
        ("second-20260919T100000Z-c3c3c3", "second", _ago(hours=2), (RunState.FAILED, 305.0)),
        (
            "quick-20260918T090000Z-d4d4d4",
            "quick",
            _ago(days=1, hours=3),
            (RunState.CANCELLED, 7.0),
        ),
    ]
    final: dict[str, tuple[RunState, float]] = {}
    for run_id, job, submitted, outcome in runs:
        save_handle(state_dir, run_id=run_id, job=job, submitted_at=submitted, project=str(project))
        if outcome is not None:
            final[run_id] = (outcome[0], submitted.timestamp() + outcome[1])
    sweep_runs = []
    for index, (value, outcome) in enumerate(
        (("1e-4", (RunState.SUCCEEDED, 40.0)), ("3e-4", (RunState.FAILED, 12.0)))
    ):
        run_id = f"quick-20260919T11300{index}Z-f{index}f{index}f{index}"
        submitted = _ago(minutes=30) + dt.timedelta(seconds=index)
        save_handle(
            state_dir, run_id=run_id, job="quick", submitted_at=submitted, project=str(project)
        )
        final[run_id] = (outcome[0], submitted.timestamp() + outcome[1])
        sweep_runs.append(SweepRun(run_id=run_id, parameters={"LR": value}))
    SweepStore(state_dir / "x-tui" / "sweeps").save(
        Sweep(
            sweep_id="sweep-quick-20260919T113000Z-0f1e2d3c",
            job="quick",
            backend="local",
            project="/home/user/sample",
            created_at=_ago(minutes=30),
            axes=(SweepAxis(name="LR", values=("1e-4", "3e-4")),),
            runs=tuple(sweep_runs),
        )
    )
    keep_final_states(state_dir, final)
    broken = state_dir / "compute" / "runs" / "lost-20260917T080000Z-e5e5e5.json"
    broken.write_text('{"schema_version": 7}', encoding="utf-8")
    return make_app(project, clock=NOW.timestamp, poll=False)


async def _settled(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, XTuiApp)
    screen = app.main_screen
    await wait_until(pilot, lambda: screen.runs.row_count == 8, "every run and the sweep's row")
    await wait_until(pilot, lambda: screen.jobs.job_names == ("quick", "second"), "the jobs")
    await wait_until(pilot, lambda: "hello  python -c" in _text(app), "the resolved jobs")


def _text(app: XTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_main_screen_at_80x24_shows_the_jobs(snap_compare: SnapCompare, still_app: XTuiApp) -> None:
    assert snap_compare(still_app, terminal_size=(80, 24), run_before=_settled)


def test_main_screen_at_60x20_shows_the_jobs(snap_compare: SnapCompare, still_app: XTuiApp) -> None:
    assert snap_compare(still_app, terminal_size=(60, 20), run_before=_settled)


def test_main_screen_at_60x20_tab_shows_the_runs_with_their_state(
    snap_compare: SnapCompare, still_app: XTuiApp
) -> None:
    async def runs_pane(pilot: Pilot[Any]) -> None:
        await _settled(pilot)
        await pilot.press("tab")
        app = pilot.app
        assert isinstance(app, XTuiApp)
        await wait_until(pilot, lambda: "Open run" in _text(app), "the runs pane's keys")
        header = _text(app).splitlines()[1].strip("│ ")
        # What does not fit gives way from the right (Took, Job, Backend): none is cut off.
        assert header.split() == ["Run", "State", "Age▼"]
        assert "✗ failed" in _text(app)

    assert snap_compare(still_app, terminal_size=(60, 20), run_before=runs_pane)


def test_main_screen_at_80x24_tab_shows_the_runs(
    snap_compare: SnapCompare, still_app: XTuiApp
) -> None:
    async def runs_pane(pilot: Pilot[Any]) -> None:
        await _settled(pilot)
        await pilot.press("tab")
        app = pilot.app
        assert isinstance(app, XTuiApp)
        await wait_until(pilot, lambda: "Open run" in _text(app), "the runs pane's keys")

    assert snap_compare(still_app, terminal_size=(80, 24), run_before=runs_pane)


def test_main_screen_at_120x40_shows_both_panes(
    snap_compare: SnapCompare, still_app: XTuiApp
) -> None:
    assert snap_compare(still_app, terminal_size=(120, 40), run_before=_settled)
