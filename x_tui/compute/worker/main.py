"""The worker: runs a job's tasks in order on the machine a backend provisioned.

Every backend runs this same program (``python worker.pyz --spec spec.json --project DIR
--outputs DIR [--retries FILE] [--log-times FILE]``), so every backend behaves the same: a device
probe first, ``<outputs>/manifest.json`` written as soon as it answered (its devices, no tasks
yet), then each task from the project's root with its own budget, raw logs, an echo of every line
prefixed ``[<task>] `` (whole lines, each stream's kept apart) and the manifest rewritten after
every task.

Standard library only, for Python 3.10 and later: the worker runs in the user's project
environment, where x-tui is not installed. It imports nothing from x-tui but ``records``,
``spec``, ``manifest``, ``probe`` and its own parts, which the zipapp ships beside it:
``children`` (each task in its own process group, ended with it, and what left the group with
it, through ``run_processes``), ``environment`` (a task's variables and command), ``attempts``
(retries and ``attempts.json``), ``line_assembly`` (each stream's bytes cut into whole lines),
``echo`` (the ``[<task>] `` copy of every line), ``log_times`` (when each line was received,
in a side file), ``telemetry`` (device and process samples in ``telemetry.jsonl``) and
``log_metrics`` (metrics and progress found in the tasks' output, in ``metrics.jsonl``). The
zipapp's entry point makes the worker the child subreaper of all it starts before :func:`main`
runs.
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

from x_tui.compute.worker import probe
from x_tui.compute.worker.attempts import (
    Attempt,
    AttemptsFile,
    check_retries,
    keep_attempt_logs,
)
from x_tui.compute.worker.children import (
    Cancellation,
    Child,
    WorkerCancelled,
    start_child,
)
from x_tui.compute.worker.echo import CombinedLog, emit
from x_tui.compute.worker.environment import (
    OUTPUT_DIR_VARIABLE,
    EnvironmentConflict,
    child_environment,
    resolve_argv,
)
from x_tui.compute.worker.line_assembly import LineAssembler
from x_tui.compute.worker.log_metrics import MetricsExtractor
from x_tui.compute.worker.log_times import TimesWriter
from x_tui.compute.worker.manifest import (
    DEVICES_LOG,
    MANIFEST_NAME,
    JobManifest,
    RunDevices,
    TaskOutcome,
    TaskStatus,
    write_manifest,
)
from x_tui.compute.worker.records import RecordError
from x_tui.compute.worker.spec import JobSpec, Task, check_name, read_job_spec
from x_tui.compute.worker.telemetry import (
    DEFAULT_SECONDS,
    DEFAULT_STALL_SECONDS,
    TelemetrySampler,
    WatchSettings,
)

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
    log: CombinedLog
    deadline: float
    retries: Mapping[str, int]
    cancel: Cancellation | None
    watch: WatchSettings | None = None
    metrics: MetricsExtractor | None = None
    sampler: TelemetrySampler | None = None


def _run_attempt(job: _Job, task: Task, argv: tuple[str, ...], budget: float) -> Attempt:
    """Run one attempt of a task with ``budget`` seconds, its logs in its directory."""
    task_dir = job.outputs / task.name
    task_dir.mkdir(parents=True, exist_ok=True)
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
            message = f"x-tui worker: task {task.name!r} cannot start: {error}"
            _write_all(err_log, (message + "\n").encode())
            job.log.note_on(1, task.name, message)
            return Attempt(TaskStatus.FAILED, None, time.perf_counter() - started)
        try:
            process = start_child(argv, cwd=job.project, env=env)
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            message = f"{argv[0]} could not start: {error}"
            _write_all(err_log, (message + "\n").encode())
            job.log.note_on(1, task.name, message)
            return Attempt(TaskStatus.FAILED, None, time.perf_counter() - started)
        copy = _StreamCopy(job.log, task.name, (out_log, err_log), job.metrics, job.sampler)
        try:
            result = Child(
                process, limit=budget, sinks=copy.sinks, cancel=job.cancel, tick=copy.tick
            ).wait()
        finally:
            copy.finish()
    seconds = time.perf_counter() - started
    if result.timed_out:
        job.log.note_on(
            1, task.name, f"x-tui: ran past its {budget:g} s budget; its group was killed"
        )
        return Attempt(TaskStatus.TIMED_OUT, result.returncode, seconds)
    status = TaskStatus.SUCCEEDED if result.returncode == 0 else TaskStatus.FAILED
    return Attempt(status, result.returncode, seconds)


class _StreamCopy:
    """A task's two streams: raw into its log files, assembled into whole lines for the echo."""

    def __init__(
        self,
        log: CombinedLog,
        task: str,
        files: tuple[IO[bytes], IO[bytes]],
        metrics: MetricsExtractor | None = None,
        sampler: TelemetrySampler | None = None,
    ) -> None:
        self._log = log
        self._metrics = metrics
        self._sampler = sampler
        self._task = task
        self._files = files
        self._assemblers = (LineAssembler(), LineAssembler())
        self.sinks = (self._sink(0), self._sink(1))

    def _sink(self, stream: int) -> Callable[[bytes], None]:
        def copy(chunk: bytes) -> None:
            _write_all(self._files[stream], chunk)
            pieces = self._assemblers[stream].feed(chunk, time.monotonic())
            self._log.write(self._task, stream, pieces, time.time())
            if self._sampler is not None:
                self._sampler.last_output = time.time()
            if self._metrics is not None and pieces:
                self._metrics.observe(self._task, pieces)

        return copy

    def tick(self, now: float) -> float | None:
        """Write what waited long enough; when to be called again."""
        due: float | None = None
        for stream, assembler in enumerate(self._assemblers):
            pieces = assembler.flush_due(now)
            self._log.write(self._task, stream, pieces)
            if self._metrics is not None and pieces:
                self._metrics.observe(self._task, pieces)
            next_due = assembler.due()
            if next_due is not None:
                due = next_due if due is None else min(due, next_due)
        return due

    def finish(self) -> None:
        """Write what is left of both streams and end any open line."""
        for stream, assembler in enumerate(self._assemblers):
            pieces = assembler.finish()
            self._log.write(self._task, stream, pieces)
            if self._metrics is not None and pieces:
                self._metrics.observe(self._task, pieces)
        self._log.end_lines()


def _run_task(job: _Job, task: Task, attempts: AttemptsFile | None) -> TaskOutcome:
    """Run a task, again after a failure while it has retries and the job has time left."""
    argv = resolve_argv(task.argv, job.python)
    task_dir = job.outputs / task.name
    allowed = 1 + job.retries.get(task.name, 0)
    number = 1
    while True:
        budget = min(task.timeout_seconds, job.deadline - time.monotonic())
        if budget > 0:
            try:
                attempt = _run_attempt(job, task, argv, budget)
            except OSError as error:  # its directory or logs cannot be made: it cannot run
                job.log.note_on(
                    1, task.name, f"x-tui worker: task {task.name!r} cannot run: {error}"
                )
                attempt = Attempt(TaskStatus.FAILED, None, 0.0)
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
        job.log.note(task.name, f"x-tui: attempt {number} of {allowed}")
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
    except (OSError, ValueError, subprocess.SubprocessError) as error:
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
    job.log.note_on(1, None, f"x-tui worker: the device probe failed; see {DEVICES_LOG}")
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
    log_times: Path | None = None,
    watch: WatchSettings | None = None,
) -> JobManifest:
    """Run a job's tasks in order and write its manifest once the probe answered, and after each.

    Args:
        spec: The job.
        project: The project root every task runs from.
        outputs: Where the logs, the tasks' files and ``manifest.json`` go (created if missing).
        echo: Whether each task line is also written to this process's stdout or stderr,
            prefixed ``[<task>] ``, assembled into whole lines (``echo``, ``line_assembly``).
        python: The interpreter that runs the probe and replaces a leading ``"python"``.
        retries: More attempts per task name for a failed or timed-out task, each within the
            task's budget and what is left of the job's; every attempt goes in ``attempts.json``.
        cancel: When given, a stop it requests ends the running task's group and raises.
        log_times: Where to record when each echoed line was received (``log_times``), while
            this process's stdout is a regular file (the combined log); not recorded if ``None``.
        watch: When given, device and process samples go to ``telemetry.jsonl`` (``telemetry``)
            from the probe on, and metrics found in the tasks' output to ``metrics.jsonl``
            (``log_metrics``); neither can fail a task.

    Returns:
        The manifest, as written last, ``finished`` after the last task. The first one is
        written as soon as the device probe answered: its devices, no tasks yet.

    Raises:
        ValueError: If ``retries`` name a task the job lacks or hold a count below 0.
        WorkerCancelled: If ``cancel`` requested a stop; the manifest is left unfinished.
    """
    checked = check_retries(spec, retries or {})
    outputs = Path(outputs).resolve()
    outputs.mkdir(parents=True, exist_ok=True)
    times = _open_times(log_times) if echo and log_times is not None else None
    log = CombinedLog(sys.stdout if echo else None, sys.stderr if echo else None, times=times)
    metrics = _open_metrics(outputs, watch, log) if watch is not None else None
    sampler = None
    if watch is not None and watch.seconds > 0:
        sampler = TelemetrySampler(
            outputs, seconds=watch.seconds, stall_seconds=watch.stall_seconds
        )
    try:
        job = _Job(
            spec=spec,
            project=Path(project).resolve(),
            outputs=outputs,
            python=python,
            log=log,
            deadline=time.monotonic() + spec.timeout_seconds,
            retries=checked,
            cancel=cancel,
            watch=watch,
            metrics=metrics,
            sampler=sampler,
        )
        return _run_tasks(job)
    finally:
        if metrics is not None:
            metrics.close()
        if times is not None:
            times.close()


def _open_metrics(outputs: Path, watch: WatchSettings, log: CombinedLog) -> MetricsExtractor | None:
    try:
        return MetricsExtractor(
            outputs, patterns=watch.patterns, note=lambda text: log.note_on(1, None, text)
        )
    except (OSError, ValueError) as error:  # the run goes on without metrics
        log.note_on(1, None, f"x-tui worker: no metrics ({error})")
        return None


def _open_times(path: Path) -> TimesWriter | None:
    try:
        return TimesWriter(path, base=time.time())
    except OSError as error:  # the run goes on without receive times
        emit(sys.stderr, f"x-tui worker: no line times ({error.strerror or error})\n".encode())
        return None


def _run_tasks(job: _Job) -> JobManifest:
    spec = job.spec
    devices = _probe_devices(job)
    attempts = AttemptsFile(job.outputs) if job.retries else None
    outcomes: list[TaskOutcome] = []
    manifest = JobManifest(job=spec.name, devices=devices)
    write_manifest(job.outputs, manifest)  # the run screen shows the devices from now on
    sampler = job.sampler
    if sampler is not None:
        sampler.start()
    try:
        return _run_each(job, devices, attempts, outcomes, sampler)
    finally:
        if sampler is not None:
            sampler.stop()
            if sampler.failure is not None:
                job.log.note_on(1, None, sampler.failure)


def _run_each(
    job: _Job,
    devices: RunDevices | None,
    attempts: AttemptsFile | None,
    outcomes: list[TaskOutcome],
    sampler: TelemetrySampler | None,
) -> JobManifest:
    spec = job.spec
    manifest = JobManifest(job=spec.name, devices=devices)
    for index, task in enumerate(spec.tasks):
        if job.cancel is not None:
            job.cancel.check()
        outcomes.append(_run_task(job, task, attempts))
        manifest = JobManifest(
            job=spec.name,
            tasks=tuple(outcomes),
            finished=index == len(spec.tasks) - 1,
            devices=devices,
        )
        write_manifest(job.outputs, manifest)
        if sampler is not None and sampler.failure is not None:
            job.log.note_on(1, None, sampler.failure)
            sampler.failure = None
    return manifest


class _BadInput(Exception):
    """A spec, retries file or directory the worker cannot use; exit 2 with one line."""

    def __init__(self, message: str, spec_data: object = None) -> None:
        super().__init__(message)
        self.spec_data = spec_data
        """The spec's parsed JSON when it was read, for the tasks the refusal is recorded on."""


def _record_refusal(outputs: Path, spec_data: object, line: str) -> None:
    """Keep why the worker ran nothing where the run is read: ``devices.log`` and the manifest.

    The manifest lists every task of the spec whose job and task names can be read, each failed
    without an exit code, its ``stderr.log`` holding ``line``; nothing is written over an
    existing manifest, and nothing at all when the outputs cannot be written.
    """
    text = line + "\n"
    try:
        outputs.mkdir(parents=True, exist_ok=True)
        (outputs / DEVICES_LOG).write_text(text, encoding="utf-8")
        tasks = _named_tasks(spec_data)
        if tasks is None or (outputs / MANIFEST_NAME).exists():
            return
        name, named = tasks
        outcomes = []
        for task_name, argv in named:
            task_dir = outputs / task_name
            task_dir.mkdir(exist_ok=True)
            (task_dir / _LOGS[0]).write_bytes(b"")
            (task_dir / _LOGS[1]).write_text(text, encoding="utf-8")
            outcomes.append(
                TaskOutcome(
                    name=task_name,
                    argv=argv,
                    status=TaskStatus.FAILED,
                    returncode=None,
                    seconds=0.0,
                    outputs=(),
                )
            )
        write_manifest(outputs, JobManifest(job=name, tasks=tuple(outcomes), finished=True))
    except (OSError, ValueError):
        return


def _named_tasks(data: object) -> tuple[str, list[tuple[str, tuple[str, ...]]]] | None:
    """The job's name and each task's name and argv, from a spec that could not be read whole."""
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        return None
    try:
        check_name("job", data.get("name", ""))
        named: list[tuple[str, tuple[str, ...]]] = []
        for task in data["tasks"]:
            if not isinstance(task, dict):
                return None
            check_name("task", task.get("name", ""))
            argv = task.get("argv")
            shown = (
                tuple(argv)
                if isinstance(argv, list) and all(isinstance(item, str) for item in argv)
                else ()
            )
            named.append((task["name"], shown))
    except ValueError:
        return None
    if not named or len({task_name for task_name, _argv in named}) != len(named):
        return None
    return str(data["name"]), named


def _read_json(path: Path, what: str) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _BadInput(f"{path}: cannot read the {what}: {error}") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise _BadInput(f"{path}: the {what} is not JSON ({error})") from None


def _load(args: argparse.Namespace) -> tuple[JobSpec, dict[str, int] | None]:
    data = _read_json(args.spec, "job spec")
    try:
        spec = read_job_spec(cast("Mapping[str, Any]", data))
    except (RecordError, RecursionError) as error:
        raise _BadInput(f"{args.spec}: {error}", data) from None
    retries = None
    if args.retries is not None:
        try:
            table = _read_json(args.retries, "retries file")
        except _BadInput as error:
            raise _BadInput(str(error), data) from None
        if not isinstance(table, dict):
            raise _BadInput(
                f"{args.retries}: the retries file is not a JSON object of counts", data
            )
        try:
            retries = check_retries(spec, table)
        except ValueError as error:
            raise _BadInput(f"{args.retries}: {error}", data) from None
    if not args.project.is_dir():
        raise _BadInput(f"--project {args.project}: not a directory", data)
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
    parser.add_argument(
        "--log-times",
        type=Path,
        help="where to record when each line of this process's output (a file) was received",
    )
    parser.add_argument(
        "--telemetry-seconds",
        type=float,
        default=DEFAULT_SECONDS,
        help="seconds between device and process samples in telemetry.jsonl (0: none)",
    )
    parser.add_argument(
        "--stall-seconds",
        type=float,
        default=DEFAULT_STALL_SECONDS,
        help="silence with idle GPUs flagged as a stall after this long",
    )
    parser.add_argument(
        "--metric-pattern",
        action="append",
        default=[],
        help="a regular expression whose named groups are metrics (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        spec, retries = _load(args)
    except _BadInput as error:
        line = "x-tui worker: " + " ".join(str(error).split())
        sys.stderr.write(line + "\n")
        _record_refusal(args.outputs, error.spec_data, line)
        return 2
    cancel = Cancellation()
    main_thread = threading.current_thread() is threading.main_thread()
    previous = cancel.install() if main_thread else {}
    try:
        manifest = run_job(
            spec,
            project=args.project,
            outputs=args.outputs,
            retries=retries,
            cancel=cancel,
            log_times=args.log_times,
            watch=WatchSettings(
                seconds=args.telemetry_seconds,
                stall_seconds=args.stall_seconds,
                patterns=tuple(args.metric_pattern),
            ),
        )
    except WorkerCancelled as stopped:
        emit(sys.stderr, f"x-tui worker: {stopped}; the manifest is left unfinished\n".encode())
        return 128 + stopped.signum
    finally:
        Cancellation.uninstall(previous)
        cancel.close()
    return 0 if manifest.succeeded else 1
