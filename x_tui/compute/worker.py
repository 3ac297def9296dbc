"""The worker: runs a job's tasks in order on the machine a backend provisioned.

Every backend runs this same program (``python worker.pyz --spec spec.json --project DIR
--outputs DIR [--retries FILE]``), so every backend behaves the same: a device probe first, then
each task from the project's root with its own budget, raw logs, an echo of every line prefixed
``[<task>] `` and ``<outputs>/manifest.json`` rewritten after every task.

Standard library only, for Python 3.10 and later: the worker runs in the user's project
environment, where x-tui is not installed. It imports nothing from x-tui but ``records``,
``spec``, ``manifest`` and ``probe``, which the zipapp ships beside it.

Each task leads its own process group. Its budget running out, the worker being stopped, or its
own process ending all end the whole group, so no grandchild outlives its task or holds the worker
on an open pipe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, cast

from x_tui.compute import probe
from x_tui.compute.manifest import (
    DEVICES_LOG,
    JobManifest,
    RunDevices,
    TaskOutcome,
    TaskStatus,
    write_manifest,
)
from x_tui.compute.records import RecordError, write_atomic
from x_tui.compute.spec import JaxRuntime, JobSpec, Task, read_job_spec

OUTPUT_DIR_VARIABLE = "AVITAI_OUTPUT_DIR"
"""The variable that gives each task its own directory under the run's outputs."""

ATTEMPTS_NAME = "attempts.json"
"""x-tui's record of every attempt when retries were asked for, at the top of the outputs."""

ATTEMPTS_DIR = "attempts"
"""Where an earlier attempt's logs are kept: ``<outputs>/attempts/<task>/<n>/``."""

TERM_GRACE_SECONDS = 3.0
"""How long a task may take to end after the worker forwards SIGTERM, before SIGKILL."""

DRAIN_SECONDS = 1.0
"""How long the pipes are still read after a task's group is gone (an escaped grandchild)."""

_LOGS = ("stdout.log", "stderr.log")
_CHUNK = 65536
_POLL_SECONDS = 0.05  # only where the OS offers no pidfd to wait on
_PROBE_OUTPUT_CAP = 1 << 20
_STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


class EnvironmentConflict(ValueError):
    """The job's ``env`` and ``runtime`` ask for two different values of one setting."""


class WorkerCancelled(Exception):
    """The worker was asked to stop; the running task's group was ended, the manifest left."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class Cancellation:
    """A request to stop the job, settable from a signal handler.

    A pipe wakes the worker when the request comes, so the running task's group gets SIGTERM
    at once rather than at the worker's next poll.
    """

    def __init__(self) -> None:
        """Create the wake-up pipe; nothing is requested yet."""
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self.signum: int | None = None
        """The signal that asked to stop, or ``None`` while none did."""

    def request(self, signum: int = signal.SIGTERM) -> None:
        """Ask the worker to stop (safe inside a signal handler).

        Args:
            signum: The signal that asked; the first request wins.
        """
        if self.signum is None:
            self.signum = signum
        with contextlib.suppress(OSError):  # a full pipe: a wake-up is pending already
            os.write(self._write_fd, b"\0")

    def fileno(self) -> int:
        """The descriptor that becomes readable once a stop is requested."""
        return self._read_fd

    def check(self) -> None:
        """Raise if a stop was requested.

        Raises:
            WorkerCancelled: If :meth:`request` was called.
        """
        if self.signum is not None:
            raise WorkerCancelled(self.signum)

    def install(self) -> dict[int, Any]:
        """Make SIGTERM, SIGINT and SIGHUP request a stop (main thread only).

        Returns:
            The handlers it replaced, by signal number, for :meth:`uninstall`.
        """
        previous: dict[int, Any] = {}
        for name in _STOP_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(
                    number, lambda signum, _frame: self.request(signum)
                )
        return previous

    @staticmethod
    def uninstall(previous: Mapping[int, Any]) -> None:
        """Put back the handlers :meth:`install` replaced.

        Args:
            previous: What :meth:`install` returned.
        """
        for number, handler in previous.items():
            signal.signal(number, handler)

    def close(self) -> None:
        """Close the wake-up pipe."""
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def child_environment(
    runtime: JaxRuntime, env: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a task or the probe runs in, in substrax's three layers.

    Args:
        runtime: The job's JAX settings, applied last.
        env: The job's variables (and a task's ``AVITAI_OUTPUT_DIR``), over the base.
        base: The worker's own environment; ``os.environ`` when ``None``. Every ``JAX_*`` and
            ``XLA_*`` variable in it is dropped.

    Returns:
        The variables, with the runtime's ``XLA_FLAGS`` merged by flag name into any ``env`` gave.

    Raises:
        EnvironmentConflict: If an XLA flag gets two values, or ``memory_fraction`` meets an
            ``XLA_PYTHON_CLIENT_MEM_FRACTION`` from ``env``.
    """
    source = os.environ if base is None else base
    result = {
        name: value for name, value in source.items() if not name.startswith(("JAX_", "XLA_"))
    }
    result.update(env)
    inherited = result.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
    if runtime.memory_fraction is not None and inherited is not None:
        raise EnvironmentConflict(
            f"the job's env sets XLA_PYTHON_CLIENT_MEM_FRACTION={inherited!r}, which overrides"
            f" its runtime memory_fraction {runtime.memory_fraction}; keep one of them"
        )
    result.update(runtime.environment())
    if runtime.xla_flags:
        existing = result.get("XLA_FLAGS", "")
        try:
            result["XLA_FLAGS"] = runtime.merge_xla_flags(existing)
        except ValueError as error:
            raise EnvironmentConflict(
                f"{error}: the job's env sets XLA_FLAGS={existing!r} and its runtime xla_flags"
                f" {' '.join(runtime.xla_flags)!r}"
            ) from None
    return result


def resolve_argv(argv: Sequence[str], python: str) -> tuple[str, ...]:
    """A task's command as it runs: a leading ``"python"`` becomes the worker's interpreter.

    Args:
        argv: The task's command.
        python: The interpreter that replaces ``"python"``.

    Returns:
        The command.
    """
    return (python, *argv[1:]) if argv and argv[0] == "python" else tuple(argv)


@dataclass(frozen=True)
class _Exit:
    returncode: int
    timed_out: bool


def _start(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start a child as the leader of a new process group, its output on two pipes."""
    if sys.version_info >= (3, 11):  # noqa: UP036 - the worker runs on Python 3.10 too
        group: dict[str, Any] = {"process_group": 0}
    else:  # pragma: no cover - Python 3.10 has no process_group
        group = {"preexec_fn": os.setpgrp}
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **group,
    )


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(OSError):  # the group is gone already
        os.killpg(pgid, signum)


def _has_exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the child ended; it is not reaped, so its group id cannot be reused yet."""
    waitid = getattr(os, "waitid", None)
    if process.returncode is not None or waitid is None:
        return process.poll() is not None
    try:
        return waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return process.poll() is not None


def _exit_fd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


_WAKE = "wake"
_EXITED = "exited"


class _Child:
    """One running child: its pipes copied to sinks chunk by chunk, its group ended at the end.

    The group gets SIGKILL when the limit runs out, SIGTERM and then SIGKILL when a stop is
    requested, and SIGKILL once the child itself exits, taking whatever it left running. The
    pipes are read for at most :data:`DRAIN_SECONDS` after that, in case a grandchild escaped the
    group and still holds them.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        limit: float,
        sinks: tuple[Callable[[bytes], None], Callable[[bytes], None]],
        cancel: Cancellation | None,
    ) -> None:
        assert process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._pipes = (process.stdout, process.stderr)
        self._cancel = cancel
        self._selector = selectors.DefaultSelector()
        for pipe, sink in zip(self._pipes, sinks, strict=True):
            self._selector.register(pipe.fileno(), selectors.EVENT_READ, sink)
        self._exit_fd = _exit_fd(process.pid)
        if self._exit_fd is not None:
            self._selector.register(self._exit_fd, selectors.EVENT_READ, _EXITED)
        if cancel is not None:
            self._selector.register(cancel.fileno(), selectors.EVENT_READ, _WAKE)
        self._kill_at = time.monotonic() + limit
        self._killed = self._timed_out = self._terminated = False
        self._returncode: int | None = None
        self._drain_end = 0.0

    def wait(self) -> _Exit:
        """Copy the output until the child and its group are gone.

        Returns:
            The child's exit code, and whether the limit ended it.

        Raises:
            WorkerCancelled: If a stop was requested; the group has been ended by then.
        """
        try:
            while True:
                now = time.monotonic()
                if self._returncode is None:
                    self._enforce(now)
                if self._returncode is not None and (now >= self._drain_end or not self._reading()):
                    break
                self._copy(self._timeout(now))
        finally:
            self._close()
        if self._cancel is not None:
            self._cancel.check()
        assert self._returncode is not None
        return _Exit(returncode=self._returncode, timed_out=self._timed_out)

    def _enforce(self, now: float) -> None:
        pgid = self._process.pid
        if _has_exited(self._process):  # before the limit: a child that ended in time did
            _signal_group(pgid, signal.SIGKILL)  # whatever it left running in its group
            self._returncode = self._process.wait()
            self._drain_end = time.monotonic() + DRAIN_SECONDS
            return
        if self._cancel is not None and self._cancel.signum is not None and not self._terminated:
            self._terminated = True
            _signal_group(pgid, signal.SIGTERM)
            self._kill_at = min(self._kill_at, now + TERM_GRACE_SECONDS)
        if not self._killed and now >= self._kill_at:
            self._killed, self._timed_out = True, not self._terminated
            _signal_group(pgid, signal.SIGKILL)

    def _reading(self) -> bool:
        return any(key.data not in (_WAKE, _EXITED) for key in self._selector.get_map().values())

    def _timeout(self, now: float) -> float | None:
        if self._returncode is not None:
            return max(0.0, self._drain_end - now)
        timeout = None if self._killed else max(0.0, self._kill_at - now)
        if self._exit_fd is None:  # nothing wakes us when it exits: poll
            timeout = _POLL_SECONDS if timeout is None else min(timeout, _POLL_SECONDS)
        return timeout

    def _copy(self, timeout: float | None) -> None:
        for key, _events in self._selector.select(timeout):
            if key.data == _WAKE:
                _drain_wakeups(key.fd)
            elif key.data == _EXITED:
                self._selector.unregister(key.fd)
                os.close(key.fd)
                self._exit_fd = None
            else:
                chunk = _read(key.fd)
                if chunk:
                    key.data(chunk)
                else:
                    self._selector.unregister(key.fd)

    def _close(self) -> None:
        self._selector.close()
        if self._exit_fd is not None:
            os.close(self._exit_fd)
            self._exit_fd = None
        for pipe in self._pipes:
            pipe.close()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, _CHUNK)
    except OSError:
        return b""


def _drain_wakeups(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except OSError:
        pass


def _emit(stream: IO[str] | None, data: bytes) -> None:
    """Write bytes to one of the worker's own streams, as they are; a broken stream is skipped."""
    if stream is None or not data:
        return
    try:
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode("utf-8", "replace"))
            stream.flush()
    except (OSError, ValueError):
        pass


class _Echo:
    """Copies a task's bytes to a worker stream with ``[<task>] `` at the start of each line."""

    def __init__(self, stream: IO[str] | None, task: str) -> None:
        self._stream = stream
        self._prefix = f"[{task}] ".encode()
        self._at_line_start = True

    def __call__(self, chunk: bytes) -> None:
        if self._stream is None:
            return
        pieces = chunk.split(b"\n")
        out = bytearray()
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if self._at_line_start and (piece or not last):
                out += self._prefix
            out += piece
            if not last:
                out += b"\n"
                self._at_line_start = True
            elif piece:
                self._at_line_start = False
        _emit(self._stream, bytes(out))

    def line(self, text: str) -> None:
        """Echo a line of the worker's own, prefixed, starting a new line if one is open."""
        if self._stream is not None:
            self(("" if self._at_line_start else "\n").encode() + text.encode() + b"\n")


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
    job: _Job, task: Task, argv: tuple[str, ...], budget: float, echoes: tuple[_Echo, _Echo]
) -> _Attempt:
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
            return _Attempt(TaskStatus.FAILED, None, time.perf_counter() - started)
        try:
            process = _start(argv, cwd=job.project, env=env)
        except (OSError, subprocess.SubprocessError) as error:
            message = f"{argv[0]} could not start: {error}\n".encode()
            _write_all(err_log, message)
            err_echo(message)
            return _Attempt(TaskStatus.FAILED, None, time.perf_counter() - started)

        def to_stdout(chunk: bytes) -> None:
            _write_all(out_log, chunk)
            out_echo(chunk)

        def to_stderr(chunk: bytes) -> None:
            _write_all(err_log, chunk)
            err_echo(chunk)

        result = _Child(
            process, limit=budget, sinks=(to_stdout, to_stderr), cancel=job.cancel
        ).wait()
    seconds = time.perf_counter() - started
    if result.timed_out:
        err_echo.line(f"x-tui: ran past its {budget:g} s budget; its group was killed")
        return _Attempt(TaskStatus.TIMED_OUT, result.returncode, seconds)
    status = TaskStatus.SUCCEEDED if result.returncode == 0 else TaskStatus.FAILED
    return _Attempt(status, result.returncode, seconds)


@dataclass(frozen=True)
class _Attempt:
    status: TaskStatus
    returncode: int | None
    seconds: float


def _run_task(job: _Job, task: Task, attempts: list[dict[str, Any]] | None) -> TaskOutcome:
    """Run a task, again after a failure while it has retries and the job has time left."""
    argv = resolve_argv(task.argv, job.python)
    task_dir = job.outputs / task.name
    allowed = 1 + job.retries.get(task.name, 0)
    echoes = (
        _Echo(sys.stdout if job.echo else None, task.name),
        _Echo(sys.stderr if job.echo else None, task.name),
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
            attempt = _Attempt(TaskStatus.TIMED_OUT, None, 0.0)
        if attempts is not None:
            attempts.append(
                {
                    "task": task.name,
                    "attempt": number,
                    "status": attempt.status.value,
                    "returncode": attempt.returncode,
                    "seconds": attempt.seconds,
                }
            )
            write_atomic(job.outputs / ATTEMPTS_NAME, json.dumps(attempts, indent=2) + "\n")
        if (
            attempt.status is TaskStatus.SUCCEEDED
            or number >= allowed
            or job.deadline - time.monotonic() <= 0
        ):
            break
        _keep_attempt_logs(job.outputs, task.name, number)
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


def _keep_attempt_logs(outputs: Path, task: str, number: int) -> None:
    kept = outputs / ATTEMPTS_DIR / task / str(number)
    kept.mkdir(parents=True, exist_ok=True)
    for name in _LOGS:
        source = outputs / task / name
        if source.exists():
            os.replace(source, kept / name)


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
        process = _start([job.python, "-c", probe.PROGRAM], cwd=job.project, env=env)
    except EnvironmentConflict as error:
        return _probe_failed(job, log, f"{error}\n")
    except (OSError, subprocess.SubprocessError) as error:
        return _probe_failed(job, log, f"{job.python} could not start: {error}\n")
    out, err = bytearray(), bytearray()
    sinks = (_capped(out), _capped(err))
    result = _Child(process, limit=limit, sinks=sinks, cancel=job.cancel).wait()
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
        _emit(sys.stderr, f"x-tui worker: the device probe failed; see {DEVICES_LOG}\n".encode())
    return None


def _capped(buffer: bytearray) -> Callable[[bytes], None]:
    def keep(chunk: bytes) -> None:
        buffer.extend(chunk[: max(0, _PROBE_OUTPUT_CAP - len(buffer))])

    return keep


def check_retries(spec: JobSpec, retries: Mapping[str, object]) -> dict[str, int]:
    """Check a retries table against a job.

    Args:
        spec: The job.
        retries: More attempts per task name.

    Returns:
        The table as task name to a count of at least 0.

    Raises:
        ValueError: If a name is not one of the job's tasks or a count is not an integer >= 0.
    """
    names = [task.name for task in spec.tasks]
    checked: dict[str, int] = {}
    for name, count in retries.items():
        if name not in names:
            raise ValueError(
                f"retries name the task {name!r}, which job {spec.name!r} does not have"
                f" (tasks: {', '.join(names)})"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"retries for task {name!r} must be an integer >= 0, not {count!r}")
        checked[name] = count
    return checked


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
    attempts: list[dict[str, Any]] | None = [] if checked else None
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
        _emit(sys.stderr, f"x-tui worker: {stopped}; the manifest is left unfinished\n".encode())
        return 128 + stopped.signum
    finally:
        Cancellation.uninstall(previous)
        cancel.close()
    return 0 if manifest.succeeded else 1
