"""The local backend's processes: start a detached worker, recognise a run's processes, stop them.

A worker is started in a session of its own, so closing x-tui, its terminal or the SSH connection
never stops it, and it is reaped by a daemon thread, so a long-running TUI leaves no zombies.

A process is only ever taken for one of a run's, and signalled, on proof:

- a process carrying the run's marker (see :mod:`x_tui.compute.worker.run_processes`) in its
  environment belongs to it: the worker, its tasks and everything they started, ``setsid``
  grandchildren and tasks a killed worker left behind included (Linux, same user only);
- the worker's pid counts only while the process there runs this run's worker: its arguments
  hold ``--spec <run_dir>/spec.json`` and ``--outputs <run_dir>/outputs``, it carries the marker
  where one is known and ``/proc`` shows it, and it started when the handle says, if it says.
  A process that merely mentions the run id (a pager, ``sleep 1000 # <run_id>``) is never one.

Linux answers from ``/proc``; elsewhere ``ps`` does, and only the worker's pid and its process
group can be found.

This module never reads or writes a run's files; :mod:`.backend` does.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.worker import run_processes

_POLL_SECONDS = 0.05
_KILL_ROUNDS = 20
_EXEC_WAIT_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessInfo:
    """What the system says about one process.

    Attributes:
        zombie: Whether it has exited and waits to be reaped.
        start_time: When it started, in the system's own notation (clock ticks since boot from
            ``/proc``, or ``ps``'s ``lstart`` text).
        session: Its session id; ``None`` when the system does not say.
        command: Its command line, arguments joined by spaces.
        argv: Its arguments one by one; ``None`` when the system gives only ``command``.
    """

    zombie: bool
    start_time: str
    session: int | None
    command: str
    argv: tuple[str, ...] | None = None


def start_detached(
    argv: Sequence[str],
    *,
    cwd: Path,
    log: Path,
    env: Mapping[str, str],
    step: Callable[[str], None] | None = None,
) -> tuple[int, str]:
    """Start ``argv`` in a new session, its output appended to ``log``, and reap it when it ends.

    Args:
        argv: The command.
        cwd: Its working directory.
        log: The file its standard output and error go to (created or truncated).
        env: Its environment.
        step: Called once the process is forked, before its start time is read (a fault
            point of the submit).

    Returns:
        Its pid and its start time (see :attr:`ProcessInfo.start_time`).

    Raises:
        OSError: If the command cannot be started.
    """
    with log.open("wb") as output:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    if step is not None:
        step("worker process started, its start time not read yet")
    # Read the start time before anything can reap the process: a zombie still has it.
    info = _exec_finished(process)
    start_time = info.start_time if info is not None else ""
    threading.Thread(target=process.wait, name=f"x-tui-reap-{process.pid}", daemon=True).start()
    return process.pid, start_time


def _exec_finished(process: subprocess.Popen[bytes]) -> ProcessInfo | None:
    """What the system says about a process just started, once its new command line shows.

    ``Popen`` can return while the kernel is still setting up the new program, when
    ``/proc/<pid>/cmdline`` and ``environ`` read empty; the worker would then not yet be
    recognised, and a ``status`` at once would say failed.
    """
    deadline = time.monotonic() + _EXEC_WAIT_SECONDS
    while True:
        info = process_info(process.pid)
        if info is None or info.zombie or info.command or time.monotonic() >= deadline:
            return info
        time.sleep(0.001)


def process_info(pid: int) -> ProcessInfo | None:
    """What the system says about process ``pid``; ``None`` when there is no such process."""
    if pid <= 0:
        return None
    if run_processes.has_proc():
        return _proc_info(pid)
    return _ps_info(pid)


def _proc_info(pid: int) -> ProcessInfo | None:
    stat = run_processes.proc_stat(pid)
    raw_command = run_processes.proc_cmdline(pid)
    if stat is None or raw_command is None:
        return None
    state, _parent, session, start_time = stat
    argv = tuple(
        part.decode("utf-8", "replace") for part in raw_command.removesuffix(b"\0").split(b"\0")
    )
    return ProcessInfo(
        zombie=state in ("Z", "X"),
        start_time=start_time,
        session=session,
        command=" ".join(argv),
        argv=argv,
    )


def _ps_info(pid: int) -> ProcessInfo | None:
    columns = {}
    for column in ("stat", "lstart", "sess", "command"):
        # -ww: without a terminal, ps would cut the command line at 80 columns.
        output = command_output(["ps", "-ww", "-o", f"{column}=", "-p", str(pid)])
        if output is None:
            return None
        columns[column] = output.strip()
    session = columns["sess"]
    return ProcessInfo(
        zombie=columns["stat"].startswith("Z") or "<defunct>" in columns["command"],
        start_time=" ".join(columns["lstart"].split()),
        session=int(session) if session.isdigit() else None,
        command=columns["command"],
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class RunProcesses:
    """What proves a process to be one of a run's.

    Attributes:
        pid: The worker's pid, as the handle records it.
        run_dir: The run's directory; the worker's arguments name files in it.
        start_time: The worker's start time the handle records; ``None`` for a handle written by
            substrax, which records none.
        marker: The run's process marker; ``None`` for a run x-tui did not start.
    """

    pid: int
    run_dir: Path
    start_time: str | None
    marker: str | None


def is_worker(run: RunProcesses) -> bool:
    """Whether process ``run.pid`` is the live worker of the run (see the module).

    Returns:
        ``True`` when the process exists, has not exited, started when the handle says (if it
        says), runs this run's worker and, where the marker is known and ``/proc`` shows it,
        carries the marker.
    """
    info = process_info(run.pid)
    if info is None or info.zombie:
        return False
    if run.start_time and info.start_time != run.start_time:
        return False
    if not _runs_worker_of(info, run.run_dir):
        return False
    if run.marker is not None and run_processes.has_proc():
        return run_processes.carries_marker(run.pid, run.marker)
    return True


def _runs_worker_of(info: ProcessInfo, run_dir: Path) -> bool:
    pairs = (("--spec", str(run_dir / "spec.json")), ("--outputs", str(run_dir / "outputs")))
    if info.argv is None:  # ps gives one line, its arguments joined by spaces
        padded = f" {info.command} "
        return all(f" {flag} {value} " in padded for flag, value in pairs)
    found = set()
    for flag, value in itertools.pairwise(info.argv):
        if flag in ("--spec", "--outputs"):
            found.add((flag, os.path.normpath(value)))
    for argument in info.argv:  # argparse's --flag=value form
        flag, equals, value = argument.partition("=")
        if equals and flag in ("--spec", "--outputs"):
            found.add((flag, os.path.normpath(value)))
    return all((flag, os.path.normpath(value)) in found for flag, value in pairs)


def members(run: RunProcesses) -> list[int]:
    """The live processes proven to be the run's: those carrying its marker, and its worker.

    Returns:
        Their pids, the worker's first when it lives.
    """
    found = run_processes.marked_processes(run.marker) if run.marker is not None else []
    if is_worker(run):
        return [run.pid, *(pid for pid in found if pid != run.pid)]
    return found


def stop(run: RunProcesses, *, grace: float) -> list[int]:
    """Stop every process of the run: SIGTERM, up to ``grace`` seconds, then SIGKILL.

    The worker's group gets SIGTERM first (the worker then stops its task, leaving its manifest
    unfinished), then every other marked process. What is left after the grace period gets
    SIGKILL, and so does every process of the worker's session when the worker leads one (a
    task's child that cleared its environment stays in it). Each process is signalled only once
    proven the run's, at the moment it is signalled; safe to call from two places at once.

    Args:
        run: The run's proofs.
        grace: Seconds to wait after SIGTERM, and again after SIGKILL.

    Returns:
        The pids still running afterwards (empty when everything stopped).
    """
    worker = process_info(run.pid) if is_worker(run) else None
    leads_session = worker is not None and worker.session == run.pid
    if worker is not None:
        terminate_group(run.pid)
    _signal_all(run, signal.SIGTERM)
    if _wait_until_none(run, grace):
        _wait_exited(run.pid, worker, grace)
        return []
    if leads_session:
        kill_session(run.pid)
    elif worker is not None:
        # A substrax worker leads only its process group, inside the submitter's session.
        kill_group(run.pid)
    for _ in range(_KILL_ROUNDS):
        if not _signal_all(run, signal.SIGKILL):
            break
        time.sleep(_POLL_SECONDS)
    _wait_until_none(run, grace)
    _wait_exited(run.pid, worker, grace)
    return members(run)


def _signal_all(run: RunProcesses, signum: int) -> bool:
    """Signal each proven process of the run; whether there was any."""
    pids = members(run)
    for pid in pids:
        run_processes.signal_proven(pid, signum, lambda candidate: _proven(run, candidate))
    return bool(pids)


def _proven(run: RunProcesses, pid: int) -> bool:
    if run.marker is not None and run_processes.carries_marker(pid, run.marker):
        return True
    return pid == run.pid and is_worker(run)


def _wait_until_none(run: RunProcesses, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while members(run):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_SECONDS)
    return True


def _wait_exited(pid: int, proven: ProcessInfo | None, seconds: float) -> None:
    """Wait up to ``seconds`` for the worker proven at the start to finish exiting.

    A process that is exiting has already dropped its command line and environment, so it no
    longer proves to be the run's, yet it is not a zombie until its exit is complete.
    """
    if proven is None:
        return
    deadline = time.monotonic() + seconds
    while (info := process_info(pid)) is not None and not info.zombie:
        if info.start_time != proven.start_time or time.monotonic() >= deadline:
            return
        time.sleep(_POLL_SECONDS)


def terminate_group(pid: int) -> None:
    """Send SIGTERM to the process group led by ``pid`` (the worker and its tasks)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)


def kill_session(leader: int, *, rounds: int = 20) -> None:
    """SIGKILL every process of the session ``leader`` leads, its grandchildren included.

    A task may move its children to process groups of their own, but not out of the session
    (short of ``setsid``), so the session is what holds everything a worker started. Without
    ``/proc`` only the leader's process group is killed.

    Args:
        leader: The session's id, which is the worker's pid.
        rounds: How many times to scan for processes forked while the scan ran.
    """
    if not run_processes.has_proc():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, signal.SIGKILL)
        return
    for _ in range(rounds):
        members = [pid for pid in _session_members(leader) if pid != os.getpid()]
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(_POLL_SECONDS)


def kill_group(leader: int) -> None:
    """SIGKILL the process group ``leader`` leads (for a worker that leads no session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)


def _session_members(session: int) -> list[int]:
    found = []
    for pid in run_processes.process_ids():
        stat = run_processes.proc_stat(pid)
        if stat is not None and stat[0] not in ("Z", "X") and stat[2] == session:
            found.append(pid)
    return found


def find_worker(spec: str) -> tuple[int, str] | None:
    """The live process that runs the worker of the staged spec ``spec``, if there is one.

    A worker is recognised by its arguments, never by a mention: ``--spec`` followed by exactly
    ``spec`` (a run's own directory, unique to the run). Without ``/proc`` nothing is found.

    Args:
        spec: The staged run's ``<run_dir>/spec.json``.

    Returns:
        Its pid and start time (see :attr:`ProcessInfo.start_time`), or ``None``.
    """
    if not run_processes.has_proc():
        return None
    for pid in run_processes.process_ids():
        if pid == os.getpid():
            continue
        info = _proc_info(pid)
        if info is None or info.zombie:
            continue
        if any(
            flag == "--spec" and value == spec
            for flag, value in itertools.pairwise(info.argv or ())
        ):
            return pid, info.start_time
    return None


def command_output(argv: Sequence[str], *, timeout: float = 10) -> str | None:
    """What a short command writes to its standard output (undecodable bytes replaced).

    Returns:
        The text; ``None`` when the command cannot be started, runs past ``timeout`` seconds or
        exits with an error.
    """
    try:
        result = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None
