"""The worker: runs a job's tasks in order on the machine a backend provisioned.

Every backend runs this same program (``python worker.pyz --spec spec.json --project DIR
--outputs DIR [--retries FILE]``), so every backend behaves the same: a device probe first, then
each task from the project's root with its own budget, raw logs, an echo of every line prefixed
``[<task>] `` and ``<outputs>/manifest.json`` rewritten after every task.

Standard library only, for Python 3.10 and later: the worker runs in the user's project
environment, where x-tui is not installed. It imports nothing from x-tui but ``records``,
``spec``, ``manifest``, ``probe`` and its own parts, which the zipapp ships beside it:
``children`` (each task in its own process group, ended with it, and what left the group with
it, through ``run_processes``), ``environment`` (a task's variables and command), ``attempts``
(retries and ``attempts.json``) and ``echo`` (the ``[<task>] `` copy of every line). The zipapp's
entry point makes the worker the child subreaper of all it starts before :func:`main` runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, cast

from x_tui.compute import probe
from x_tui.compute.attempts import (
    ATTEMPTS_DIR,
    ATTEMPTS_NAME,
    Attempt,
    AttemptsFile,
    check_retries,
    keep_attempt_logs,
)
from x_tui.compute.children import (
    DRAIN_SECONDS,
    TERM_GRACE_SECONDS,
    Cancellation,
    Child,
    WorkerCancelled,
    start_child,
)
from x_tui.compute.echo import Echo, emit
from x_tui.compute.environment import (
    OUTPUT_DIR_VARIABLE,
    EnvironmentConflict,
    child_environment,
    resolve_argv,
)
from x_tui.compute.manifest import (
    DEVICES_LOG,
    JobManifest,
    RunDevices,
    TaskOutcome,
    TaskStatus,
    write_manifest,
)
from x_tui.compute.records import RecordError
from x_tui.compute.spec import JobSpec, Task, read_job_spec

__all__ = [
    "ATTEMPTS_DIR",
    "ATTEMPTS_NAME",
    "DRAIN_SECONDS",
    "OUTPUT_DIR_VARIABLE",
    "TERM_GRACE_SECONDS",
    "Cancellation",
    "EnvironmentConflict",
    "WorkerCancelled",
    "check_retries",
    "child_environment",
    "list_outputs",
    "main",
    "resolve_argv",
    "run_job",
]

_LOGS = ("stdout.log", "stderr.log")
_PROBE_OUTPUT_CAP = 1 << 20


def _write_all(log: IO[bytes], chunk: bytes) -> None:
    """Write every byte to an unbuffered log, which may take a short write."""
    view = memoryview(chunk)
    while view:
        written = log.write(view)
        if not written:
            raise OSError(f"could not write to {log.name}")
        view = view[written:]


@dataclass(frozen=True)
class _Job:
    """What every task of one run shares."""

    spec: JobSpec
    project: Path
    outputs: Path
    python: str
    echo: bool
    deadline: float
    retries: Mapping[str, int]
    cancel: Cancellation | None


def _run_attempt(
    job: _Job, task: Task, argv: tuple[str, ...], budget: float, echoes: tuple[Echo, Echo]
) -> Attempt:
    """Run one attempt of a task with ``budget`` seconds, its logs in its directory."""
    task_dir = job.outputs / task.name
    task_dir.mkdir(parents=True, exist_ok=True)
    out_echo, err_echo = echoes
    started = time.perf_counter()
    with (
        open(task_dir / _LOGS[0], "wb", buffering=0) as out_log,
        open(task_dir / _LOGS[1], "wb", buffering=0) as err_log,
    ):
        try:
            env = child_environment(
                job.spec.runtime, {**job.spec.env, OUTPUT_DIR_VARIABLE: str(task_dir)}
            )
        except EnvironmentConflict as error:
            message = f"x-tui worker: task {task.name!r} cannot start: {error}\n".encode()
            _write_all(err_log, message)
            err_echo(message)
            return Attempt(TaskStatus.FAILED, None, time.perf_counter() - started)
        try:
            process = start_child(argv, cwd=job.project, env=env)
        except (OSError, subprocess.SubprocessError) as error:
            message = f"{argv[0]} could not start: {error}\n".encode()
            _write_all(err_log, message)
            err_echo(message)
            return Attempt(TaskStatus.FAILED, None, time.perf_counter() - started)

        def to_stdout(chunk: bytes) -> None:
            _write_all(out_log, chunk)
            out_echo(chunk)

        def to_stderr(chunk: bytes) -> None:
            _write_all(err_log, chunk)
            err_echo(chunk)

        result = Child(
            process, limit=budget, sinks=(to_stdout, to_stderr), cancel=job.cancel
        ).wait()
    seconds = time.perf_counter() - started
    if result.timed_out:
        err_echo.line(f"x-tui: ran past its {budget:g} s budget; its group was killed")
        return Attempt(TaskStatus.TIMED_OUT, result.returncode, seconds)
    status = TaskStatus.SUCCEEDED if result.returncode == 0 else TaskStatus.FAILED
    return Attempt(status, result.returncode, seconds)


def _run_task(job: _Job, task: Task, attempts: AttemptsFile | None) -> TaskOutcome:
    """Run a task, again after a failure while it has retries and the job has time left."""
    argv = resolve_argv(task.argv, job.python)
    task_dir = job.outputs / task.name
    allowed = 1 + job.retries.get(task.name, 0)
    echoes = (
        Echo(sys.stdout if job.echo else None, task.name),
        Echo(sys.stderr if job.echo else None, task.name),
    )
    number = 1
    while True:
        budget = min(task.timeout_seconds, job.deadline - time.monotonic())
        if budget > 0:
            attempt = _run_attempt(job, task, argv, budget, echoes)
        else:
            task_dir.mkdir(parents=True, exist_ok=True)
            for name in _LOGS:
                (task_dir / name).write_bytes(b"")
            attempt = Attempt(TaskStatus.TIMED_OUT, None, 0.0)
        if attempts is not None:
            attempts.add(task.name, number, attempt)
        if (
            attempt.status is TaskStatus.SUCCEEDED
            or number >= allowed
            or job.deadline - time.monotonic() <= 0
        ):
            break
        keep_attempt_logs(job.outputs, task.name, number, _LOGS)
        number += 1
        echoes[0].line(f"x-tui: attempt {number} of {allowed}")
    return TaskOutcome(
        name=task.name,
        argv=argv,
        status=attempt.status,
        returncode=attempt.returncode,
        seconds=attempt.seconds,
        outputs=list_outputs(task_dir),
    )


def list_outputs(task_dir: Path) -> tuple[str, ...]:
    """The files a task wrote, as the manifest lists them.

    Args:
        task_dir: The task's directory.

    Returns:
        Every file under it, relative POSIX paths sorted component-wise, without its own
        top-level ``stdout.log`` and ``stderr.log``.
    """
    if not task_dir.is_dir():
        return ()
    found = sorted(
        PurePosixPath(path.relative_to(task_dir).as_posix())
        for path in task_dir.rglob("*")
        if path.is_file()
    )
    return tuple(str(path) for path in found if str(path) not in _LOGS)


def _probe_devices(job: _Job) -> RunDevices | None:
    """Run the device probe; on failure keep its output in ``devices.log`` and return ``None``."""
    limit = probe.probe_limit(job.spec.timeout_seconds)
    log = job.outputs / DEVICES_LOG
    try:
        env = child_environment(job.spec.runtime, job.spec.env)
        process = start_child([job.python, "-c", probe.PROGRAM], cwd=job.project, env=env)
    except EnvironmentConflict as error:
        return _probe_failed(job, log, f"{error}\n")
    except (OSError, subprocess.SubprocessError) as error:
        return _probe_failed(job, log, f"{job.python} could not start: {error}\n")
    out, err = bytearray(), bytearray()
    sinks = (_capped(out), _capped(err))
    result = Child(process, limit=limit, sinks=sinks, cancel=job.cancel).wait()
    if result.timed_out:
        return _probe_failed(job, log, probe.timeout_message(limit))
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    devices = probe.read_probe_output(stdout) if result.returncode == 0 else None
    if devices is None:
        return _probe_failed(job, log, stdout + stderr)
    return devices


def _probe_failed(job: _Job, log: Path, text: str) -> RunDevices | None:
    log.write_text(text, encoding="utf-8")
    if job.echo:
        emit(sys.stderr, f"x-tui worker: the device probe failed; see {DEVICES_LOG}\n".encode())
    return None


def _capped(buffer: bytearray) -> Callable[[bytes], None]:
    def keep(chunk: bytes) -> None:
        buffer.extend(chunk[: max(0, _PROBE_OUTPUT_CAP - len(buffer))])

    return keep


def run_job(
    spec: JobSpec,
    *,
    project: Path,
    outputs: Path,
    echo: bool = True,
    python: str = sys.executable,
    retries: Mapping[str, int] | None = None,
    cancel: Cancellation | None = None,
) -> JobManifest:
    """Run a job's tasks in order and write its manifest after each one.

    Args:
        spec: The job.
        project: The project root every task runs from.
        outputs: Where the logs, the tasks' files and ``manifest.json`` go (created if missing).
        echo: Whether each task line is also written to this process's stdout or stderr,
            prefixed ``[<task>] ``.
        python: The interpreter that runs the probe and replaces a leading ``"python"``.
        retries: More attempts per task name for a failed or timed-out task, each within the
            task's budget and what is left of the job's; every attempt goes in ``attempts.json``.
        cancel: When given, a stop it requests ends the running task's group and raises.

    Returns:
        The manifest, as written last, ``finished`` after the last task.

    Raises:
        ValueError: If ``retries`` name a task the job lacks or hold a count below 0.
        WorkerCancelled: If ``cancel`` requested a stop; the manifest is left unfinished.
    """
    checked = check_retries(spec, retries or {})
    outputs = Path(outputs).resolve()
    outputs.mkdir(parents=True, exist_ok=True)
    job = _Job(
        spec=spec,
        project=Path(project).resolve(),
        outputs=outputs,
        python=python,
        echo=echo,
        deadline=time.monotonic() + spec.timeout_seconds,
        retries=checked,
        cancel=cancel,
    )
    devices = _probe_devices(job)
    attempts = AttemptsFile(outputs) if checked else None
    outcomes: list[TaskOutcome] = []
    manifest = JobManifest(job=spec.name, devices=devices)
    for index, task in enumerate(spec.tasks):
        if cancel is not None:
            cancel.check()
        outcomes.append(_run_task(job, task, attempts))
        manifest = JobManifest(
            job=spec.name,
            tasks=tuple(outcomes),
            finished=index == len(spec.tasks) - 1,
            devices=devices,
        )
        write_manifest(outputs, manifest)
    return manifest


class _BadInput(Exception):
    """A spec, retries file or directory the worker cannot use; exit 2 with one line."""


def _read_json(path: Path, what: str) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _BadInput(f"{path}: cannot read the {what}: {error}") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise _BadInput(f"{path}: the {what} is not JSON ({error})") from None


def _load(args: argparse.Namespace) -> tuple[JobSpec, dict[str, int] | None]:
    try:
        spec = read_job_spec(cast("Mapping[str, Any]", _read_json(args.spec, "job spec")))
    except RecordError as error:
        raise _BadInput(f"{args.spec}: {error}") from None
    retries = None
    if args.retries is not None:
        table = _read_json(args.retries, "retries file")
        if not isinstance(table, dict):
            raise _BadInput(f"{args.retries}: the retries file is not a JSON object of counts")
        try:
            retries = check_retries(spec, table)
        except ValueError as error:
            raise _BadInput(f"{args.retries}: {error}") from None
    if not args.project.is_dir():
        raise _BadInput(f"--project {args.project}: not a directory")
    try:
        args.outputs.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _BadInput(f"--outputs {args.outputs}: {error.strerror or error}") from None
    return spec, retries


def main(argv: Sequence[str] | None = None) -> int:
    """Run the worker's command line.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        0 when every task succeeded, 1 otherwise, 2 for a spec, retries file or directory it
        cannot use (one line on stderr), 128 + the signal's number when stopped by a signal.
    """
    parser = argparse.ArgumentParser(
        prog="worker.pyz", description="Run a job's tasks and write their manifest."
    )
    parser.add_argument("--spec", type=Path, required=True, help="the job spec (spec.json)")
    parser.add_argument("--project", type=Path, default=Path("."), help="the project root")
    parser.add_argument("--outputs", type=Path, required=True, help="where the run's files go")
    parser.add_argument("--retries", type=Path, help='JSON object {"<task>": more attempts}')
    args = parser.parse_args(argv)
    try:
        spec, retries = _load(args)
    except _BadInput as error:
        sys.stderr.write("x-tui worker: " + " ".join(str(error).split()) + "\n")
        return 2
    cancel = Cancellation()
    main_thread = threading.current_thread() is threading.main_thread()
    previous = cancel.install() if main_thread else {}
    try:
        manifest = run_job(
            spec, project=args.project, outputs=args.outputs, retries=retries, cancel=cancel
        )
    except WorkerCancelled as stopped:
        emit(sys.stderr, f"x-tui worker: {stopped}; the manifest is left unfinished\n".encode())
        return 128 + stopped.signum
    finally:
        Cancellation.uninstall(previous)
        cancel.close()
    return 0 if manifest.succeeded else 1
