"""The processes of the local backend: start a detached worker, recognise it later, stop it.

A worker is started in a session of its own, so closing x-tui, its terminal or the SSH connection
never stops it, and it is reaped by a daemon thread, so a long-running TUI leaves no zombies.
A worker is recognised by its pid, its start time (so a reused pid is not mistaken for it) and
the run id in its command line. Linux answers from ``/proc``; elsewhere ``ps`` does.

This module never reads or writes a run's files; ``local.py`` does.
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

_PROC = Path("/proc")
_POLL_SECONDS = 0.05


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessInfo:
    """What the system says about one process.

    Attributes:
        zombie: Whether it has exited and waits to be reaped.
        start_time: When it started, in the system's own notation (clock ticks since boot from
            ``/proc``, or ``ps``'s ``lstart`` text).
        session: Its session id; ``None`` when the system does not say.
        command: Its command line, arguments joined by spaces.
    """

    zombie: bool
    start_time: str
    session: int | None
    command: str


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
    info = process_info(process.pid)
    start_time = info.start_time if info is not None else ""
    threading.Thread(target=process.wait, name=f"x-tui-reap-{process.pid}", daemon=True).start()
    return process.pid, start_time


def process_info(pid: int) -> ProcessInfo | None:
    """What the system says about process ``pid``; ``None`` when there is no such process."""
    if pid <= 0:
        return None
    if _PROC.joinpath("self", "stat").exists():
        return _proc_info(pid)
    return _ps_info(pid)


def _proc_info(pid: int) -> ProcessInfo | None:
    base = _PROC / str(pid)
    try:
        stat = (base / "stat").read_bytes()
        raw_command = (base / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may hold anything, ')' included.
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    command = raw_command.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return ProcessInfo(
        zombie=fields[0] in (b"Z", b"X"),
        start_time=fields[19].decode("ascii"),
        session=int(fields[3]),
        command=command,
    )


def _ps_info(pid: int) -> ProcessInfo | None:
    columns = {}
    for column in ("stat", "lstart", "sess", "command"):
        try:
            result = subprocess.run(
                # -ww: without a terminal, ps would cut the command line at 80 columns.
                ["ps", "-ww", "-o", f"{column}=", "-p", str(pid)],
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if result.returncode != 0:
            return None
        columns[column] = result.stdout.strip()
    session = columns["sess"]
    return ProcessInfo(
        zombie=columns["stat"].startswith("Z") or "<defunct>" in columns["command"],
        start_time=" ".join(columns["lstart"].split()),
        session=int(session) if session.isdigit() else None,
        command=columns["command"],
    )


def is_worker(pid: int, *, run_id: str, start_time: str | None) -> bool:
    """Whether process ``pid`` is the live worker of run ``run_id``.

    Args:
        pid: The worker's pid, as the handle records it.
        run_id: The run; its worker's command line holds it (through the run directory).
        start_time: The start time the handle records; ``None`` for a handle written by
            substrax, which records none, so only the command line is checked.

    Returns:
        ``True`` when the process exists, has not exited, started when the handle says (if it
        says) and runs this run's worker.
    """
    info = process_info(pid)
    if info is None or info.zombie:
        return False
    if start_time and info.start_time != start_time:
        return False
    return run_id in info.command


def wait_until_gone(pid: int, *, run_id: str, start_time: str | None, seconds: float) -> bool:
    """Wait up to ``seconds`` for the worker to end.

    Returns:
        Whether it has ended.
    """
    deadline = time.monotonic() + seconds
    while is_worker(pid, run_id=run_id, start_time=start_time):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_SECONDS)
    return True


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
    if not _PROC.joinpath("self", "stat").exists():
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
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        info = _proc_info(int(entry.name))
        if info is not None and not info.zombie and info.session == session:
            members.append(int(entry.name))
    return members


def find_worker(spec: str) -> tuple[int, str] | None:
    """The live process that runs the worker of the staged spec ``spec``, if there is one.

    A worker is recognised by its arguments, never by a mention: ``--spec`` followed by exactly
    ``spec`` (a run's own directory, unique to the run). Without ``/proc`` nothing is found.

    Args:
        spec: The staged run's ``<run_dir>/spec.json``.

    Returns:
        Its pid and start time (see :attr:`ProcessInfo.start_time`), or ``None``.
    """
    if not _PROC.joinpath("self", "stat").exists():
        return None
    wanted = spec.encode("utf-8", "surrogateescape")
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = entry.joinpath("cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        pairs = itertools.pairwise(argv)
        if not any(flag == b"--spec" and value == wanted for flag, value in pairs):
            continue
        info = _proc_info(int(entry.name))
        if info is not None and not info.zombie:
            return int(entry.name), info.start_time
    return None
