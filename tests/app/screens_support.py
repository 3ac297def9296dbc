"""Helpers for the run, submit and help screen tests: jobs that fail, sleep or retry, runs
submitted through the real local backend, and finished runs written as files (fixed ids and
times) for the tests and snapshots that must not depend on a clock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from textual.app import App

from x_tui.compute import operations
from x_tui.compute.backend import SPEC_NAME
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.manifest import (
    JobManifest,
    RunDevices,
    TaskOutcome,
    TaskStatus,
    write_manifest,
)
from x_tui.compute.worker.records import dumps_compact, dumps_pretty
from x_tui.compute.worker.spec import Accelerator, JobSpec, Resources, Task

from .app_support import QUICK_JOB, pyproject_text

FAILING_JOB = """
[tool.substrax.compute.jobs.failing]
timeout_seconds = 120
[tool.substrax.compute.jobs.failing.commands]
boom = ["python", "-c", "import sys; print('about to fail', flush=True); sys.exit(3)"]
"""

SLOW_JOB = """
[tool.substrax.compute.jobs.slow]
timeout_seconds = 900
[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
"""

WRITE_42 = (
    "import os, pathlib; d = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR']) / 'result'; "
    "d.mkdir(parents=True); (d / 'value.txt').write_text('42'); print('wrote 42')"
)

WRITER_JOB = f"""
[tool.substrax.compute.jobs.writer]
timeout_seconds = 120
[tool.substrax.compute.jobs.writer.commands]
writes = ["python", "-c", "{WRITE_42}"]
"""

SUBMITTED_AT = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)
"""When the runs built from files were submitted."""

ENDED_AT = SUBMITTED_AT + dt.timedelta(minutes=12, seconds=34)
"""When they ended (their manifest's and log's modification time)."""

NOW = SUBMITTED_AT + dt.timedelta(hours=3, minutes=5)
"""The fixed "now" of the tests that build runs from files."""


def notices(app: App[object]) -> list[str]:
    """The toasts the app shows now (headless runs do not draw them, so read them here)."""
    return [notification.message for notification in app._notifications]


def write_project(root: Path, jobs: str = QUICK_JOB + FAILING_JOB + SLOW_JOB + WRITER_JOB) -> Path:
    """A project named ``sample`` whose local backend runs this interpreter, with ``jobs``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject_text(jobs), encoding="utf-8")
    return root


def submit(project: Path, job: str, *, accelerator: str | None = None) -> RunHandle:
    """Submit ``job`` on the local backend, as the TUI's submit does, and keep its handle."""
    opened = operations.open_project(project)
    plan = operations.plan_run(opened, job, accelerator=accelerator)
    return operations.submit_run(plan)


async def submitted(project: Path, job: str) -> RunHandle:
    """:func:`submit` in a thread, from an async test."""
    return await asyncio.to_thread(submit, project, job)


def finished_run(
    state: Path,
    *,
    job: str = "train",
    run_id: str | None = None,
    tasks: Sequence[tuple[str, TaskStatus, int | None, float, tuple[str, ...]]] = (),
    accelerator: Accelerator | None = None,
    devices: RunDevices | None = None,
    devices_log: str | None = None,
    worker_log: str = "",
    task_logs: Mapping[str, str] | None = None,
    attempts: Sequence[Mapping[str, object]] = (),
    attempt_logs: Mapping[tuple[str, int], str] | None = None,
    details: Mapping[str, str] | None = None,
    project: str = "/home/user/sample",
) -> RunHandle:
    """Write a finished local run as its worker leaves it, and its handle, under ``state``.

    Args:
        state: The state directory.
        job: The job's name.
        run_id: The run id; ``<job>-20260919T120000Z-0a1b2c`` when ``None``.
        tasks: Each task's name, status, exit code, seconds and files.
        accelerator: The accelerator the staged spec asked for.
        devices: What the probe saw; ``None`` writes ``devices_log`` instead.
        devices_log: The probe's failure text.
        worker_log: The combined log.
        task_logs: Each task's stdout.
        attempts: The worker's ``attempts.json`` records.
        attempt_logs: An earlier attempt's stdout, by (task, attempt).
        details: Extra provider details for the handle.
        project: The project the run claims to come from.

    Returns:
        The handle (its pid is no process, so the run reads as ended).
    """
    run_id = run_id or f"{job}-20260919T120000Z-0a1b2c"
    run_dir = state / "compute" / "local" / run_id
    outputs = run_dir / "outputs"
    outputs.mkdir(parents=True)
    spec = JobSpec(
        name=job,
        tasks=tuple(
            Task(name=name, argv=("python", f"{name}.py"), timeout_seconds=600)
            for name, *_ in tasks
        ),
        timeout_seconds=1800,
        resources=Resources(accelerator=accelerator, cpu=8, memory_mib=32768),
        env={"TF_CPP_MIN_LOG_LEVEL": "1"},
    )
    (run_dir / SPEC_NAME).write_text(dumps_compact(spec), encoding="utf-8")
    (run_dir / "worker.log").write_text(worker_log, encoding="utf-8")
    for name, _status, _code, _seconds, files in tasks:
        task_dir = outputs / name
        task_dir.mkdir()
        (task_dir / "stdout.log").write_text((task_logs or {}).get(name, ""), encoding="utf-8")
        (task_dir / "stderr.log").write_text("", encoding="utf-8")
        for file in files:
            (task_dir / file).parent.mkdir(parents=True, exist_ok=True)
            (task_dir / file).write_text("x", encoding="utf-8")
    for (task, number), text in (attempt_logs or {}).items():
        kept = outputs / "attempts" / task / str(number)
        kept.mkdir(parents=True)
        (kept / "stdout.log").write_text(text, encoding="utf-8")
        (kept / "stderr.log").write_text("", encoding="utf-8")
    if attempts:
        (outputs / "attempts.json").write_text(json.dumps(list(attempts)), encoding="utf-8")
    if devices is None and devices_log is not None:
        (outputs / "devices.log").write_text(devices_log, encoding="utf-8")
    manifest = JobManifest(
        job=job,
        tasks=tuple(
            TaskOutcome(
                name=name,
                argv=("python", f"{name}.py"),
                status=status,
                returncode=code,
                seconds=seconds,
                outputs=files,
            )
            for name, status, code, seconds, files in tasks
        ),
        finished=True,
        devices=devices,
    )
    write_manifest(outputs, manifest)
    ended = ENDED_AT.timestamp()
    for path in (outputs / "manifest.json", run_dir / "worker.log"):
        os.utime(path, (ended, ended))
    handle = RunHandle(
        run_id=run_id,
        backend="local",
        job=job,
        project=project,
        submitted_at=SUBMITTED_AT,
        settings={"python": None, "state_dir": None},
        details={"pid": "999999999", "run_dir": str(run_dir), **(details or {})},
    )
    store = state / "compute" / "runs" / f"{run_id}.json"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(dumps_pretty(handle), encoding="utf-8")
    return handle
