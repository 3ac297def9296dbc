"""Budgets on the fake ``modal``: the watcher notifies at 80% and cancels at 100%, priced from
the plan, and the reason is recorded and shown by ``status``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import pytest

from tests.support import wait_for
from x_tui.app.notify_settings import NotifySettings
from x_tui.app.service import Service
from x_tui.app.watch_budgets import BudgetCheck
from x_tui.app.watch_events import EventKind
from x_tui.app.watcher import Watcher
from x_tui.compute.backend import RunState
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.operations import open_project, plan_run, submit_run
from x_tui.compute.run_endings import EndingBook
from x_tui.compute.store import default_state_dir
from x_tui.compute.worker.errors import ConfigError

from .fake_modal import fixtures as modal_fixtures
from .fake_modal.harness import PYPROJECT, FakeModal

fake = modal_fixtures.fake_modal

JOBS = """
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "budget-runs"

[tool.substrax.compute.jobs.slow]
timeout_seconds = 3600
resources = { accelerator = "L4", cpu = 2, memory_mib = 4096 }

[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]

[tool.x-tui.jobs.slow]
max_cost = 0.5
"""

HOOK = """\
import json, os, sys
keys = ("X_TUI_RUN_ID", "X_TUI_STATE", "X_TUI_REASON", "X_TUI_COST")
with open(sys.argv[1], "a") as stream:
    stream.write(json.dumps({key: os.environ.get(key) for key in keys}) + "\\n")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A packaged project whose job ``slow`` has a $0.50 budget in x-tui's overlay."""
    root = tmp_path / "sample"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT + JOBS)
    return root


def _x_tui(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "x_tui", *args],
        cwd=project,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_a_run_is_notified_at_80_percent_and_cancelled_at_its_budget(
    fake: FakeModal, project: Path, tmp_path: Path
) -> None:
    """Priced at the plan's hourly rate: 85% of $0.50 is one event, 101% cancels the run, the
    reason is kept beside it and named by the hook, the events file and ``status``."""
    plan = plan_run(open_project(project), "slow")
    assert plan.estimate is not None
    assert plan.estimate.max_usd is not None
    hourly = plan.estimate.max_usd / plan.estimate.hours
    handle = submit_run(plan)
    state_dir = default_state_dir()
    guard = GuardBook(state_dir).load(handle.run_id)
    assert guard.max_cost_usd == 0.5
    assert guard.hourly_usd == pytest.approx(hourly)
    _check_substrax_records_untouched(state_dir, handle.run_id)

    seconds_for_budget = 0.5 / hourly * 3600
    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]

    hook_out = tmp_path / "hook.jsonl"
    (tmp_path / "hook.py").write_text(HOOK)
    notify = NotifySettings(
        events=frozenset({EventKind.OVER_BUDGET, EventKind.CANCELLED}),
        command=(sys.executable, str(tmp_path / "hook.py"), str(hook_out)),
        terminal=False,
    )
    service = Service(state_dir=state_dir)
    log = (tmp_path / "watch.log").open("w")
    watcher = _watcher(service, notify, clock, log)
    watcher.start()
    try:
        wait_for(
            lambda: watcher.state_of(handle.run_id) is RunState.RUNNING, "the run to be running"
        )
        offset[0] = 0.5 * seconds_for_budget
        time.sleep(1.0)
        assert not [e for e in watcher.events.read() if e.kind is EventKind.OVER_BUDGET]
        offset[0] = 0.85 * seconds_for_budget
        warned = wait_for(
            lambda: [e for e in watcher.events.read() if e.kind is EventKind.OVER_BUDGET],
            "the 80% event",
        )
        assert [e.event_id for e in warned] == [f"{handle.run_id}:over_budget:80%"]
        assert "of its budget" in warned[0].reason
        assert service.status(handle) is RunState.RUNNING
        offset[0] = 1.01 * seconds_for_budget
        cancelled = wait_for(
            lambda: [e for e in watcher.events.read() if e.kind is EventKind.CANCELLED],
            "the cancel",
        )
    finally:
        watcher.stop()
        log.close()
    assert service.status(handle) is RunState.CANCELLED
    kinds = [e.event_id for e in watcher.events.read() if e.run_id == handle.run_id]
    assert f"{handle.run_id}:over_budget:100%" in kinds
    assert re.fullmatch(r"over budget: cost \$0\.5\d of \$0\.50", cancelled[0].reason)
    ending = EndingBook(state_dir).load(handle.run_id)
    assert ending is not None
    assert ending.by == "watcher"
    assert ending.reason == cancelled[0].reason

    # The hook runs beside the watcher: its third line may come a little after the cancel.
    wait_for(lambda: len(hook_out.read_text().splitlines()) >= 3, "the hook's three deliveries")
    delivered = [json.loads(line) for line in hook_out.read_text().splitlines()]
    assert [(d["X_TUI_STATE"], d["X_TUI_REASON"].split(":")[0][-13:]) for d in delivered] == [
        ("over_budget", "of its budget"),
        ("over_budget", "over budget"),
        ("cancelled", "over budget"),
    ]
    assert all(float(d["X_TUI_COST"]) > 0.4 for d in delivered)

    _check_status(project, handle.run_id, cancelled[0].reason)


def _check_substrax_records_untouched(state_dir: Path, run_id: str) -> None:
    """No budget key in substrax's handle or staged spec."""
    substrax_files = [path for path in (state_dir / "compute").rglob("*") if path.is_file()]
    assert state_dir / "compute" / "runs" / f"{run_id}.json" in substrax_files
    for path in substrax_files:
        assert b"max_cost" not in path.read_bytes(), path


def _watcher(
    service: Service, notify: NotifySettings, clock: Callable[[], float], log: TextIO
) -> Watcher:
    """The watcher as ``x-tui watch`` builds it, polling quickly, on ``clock``."""
    budgets = BudgetCheck(service, clock=clock)
    return Watcher(
        service,
        notify,
        checks=[budgets],
        cost_of=budgets.cost_of,
        first_interval=0.1,
        max_interval=0.3,
        log=log,
        clock=clock,
    )


def _check_status(project: Path, run_id: str, reason: str) -> None:
    """``status RUN_ID`` and ``status --json`` show the budget and why the run was cancelled."""
    shown = _x_tui(project, "status", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "cancelled" in shown.stdout
    assert "budget $0.50" in shown.stdout
    assert f"({reason})" in shown.stdout
    listed = json.loads(_x_tui(project, "status", "--json").stdout)
    (run,) = [r for r in listed["runs"] if r["run_id"] == run_id]
    assert run["ended_because"] == reason
    assert run["budget"] == "$0.50"


def test_max_cost_and_max_duration_on_the_command_line_replace_the_job_s(
    fake: FakeModal, project: Path
) -> None:
    """``x-tui run --detach --max-cost 2 --max-duration 90m``: the side file holds both; a bad
    value is one line naming the option, exit 2, nothing submitted."""
    run = _x_tui(project, "run", "slow", "--detach", "--max-cost", "$2", "--max-duration", "90m")
    assert run.returncode == 0, run.stderr
    run_id = run.stdout.split()[1]
    assert "budget $2.00, 1h30m" in run.stdout
    guard = GuardBook(default_state_dir()).load(run_id)
    assert (guard.max_cost_usd, guard.max_duration_seconds) == (2.0, 5400.0)
    bad = _x_tui(project, "run", "slow", "--detach", "--max-cost", "lots")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "x-tui: --max-cost: expected a positive amount of US dollars such as 5 or '12.50',"
        " got 'lots'"
    ]
    assert len(list((default_state_dir() / "compute" / "runs").glob("*.json"))) == 1


def test_a_bad_budget_in_the_overlay_names_file_table_and_key(project: Path) -> None:
    """``max_cost = -1`` in ``[tool.x-tui.jobs.slow]`` is refused, naming the key and value."""
    text = (project / "pyproject.toml").read_text().replace("max_cost = 0.5", "max_cost = -1")
    (project / "pyproject.toml").write_text(text + "preemption_retries = 'two'\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml.*slow\] max_cost: .* got -1"):
        plan_run(open_project(project), "slow")
