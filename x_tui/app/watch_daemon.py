"""Running the watcher as a process: in the foreground, detached from the terminal, stopped.

``x-tui watch`` takes the state directory's watcher lock (:mod:`x_tui.app.watch_lock`) first, so
a second start fails at once naming the first. ``--detach`` then forks twice with a new session
between the forks (no controlling terminal, not the child of the shell, so losing the SSH link
or the shell's SIGHUP does not reach it), points stdin at ``/dev/null`` and stdout and stderr at
``<state>/x-tui/watch.log``, and reports the watcher's pid through a pipe. The lock, inherited
across the forks, is held by the watcher alone once the starting process exits.

This module imports no Textual.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from x_tui.app.watch_lock import WatchLock, acquire, running_pid

LOG_NAME = "watch.log"
"""The detached watcher's log, in ``<state>/x-tui``."""

STOP_SECONDS = 15.0
"""How long ``--stop`` waits for the watcher to let go of its lock."""


def log_path(state_dir: Path) -> Path:
    """The detached watcher's log file of ``state_dir``."""
    return state_dir / "x-tui" / LOG_NAME


def serve_until_stopped(lock: WatchLock, run: Callable[[threading.Event], None]) -> None:
    """Run ``run(stop)`` in this process until SIGTERM or SIGINT sets ``stop``; SIGHUP ignored.

    Args:
        lock: The held watcher lock; this process's pid is written into it first.
        run: Follows runs until ``stop`` is set, then returns.
    """
    lock.write_pid()
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        run(stop)
    finally:
        lock.release()


def start_detached(state_dir: Path, run: Callable[[threading.Event], None]) -> int:
    """Start the watcher in a detached process and return its pid (in the calling process).

    Args:
        state_dir: The state directory (its lock is taken here, before any fork).
        run: What the detached process runs (see :func:`serve_until_stopped`).

    Returns:
        The detached watcher's pid.

    Raises:
        WatcherRunning: If a watcher already runs for ``state_dir``.
        OSError: If the state directory cannot be written or a fork fails.
    """
    lock = acquire(state_dir)
    log = log_path(state_dir)
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    first = os.fork()
    if first > 0:
        # The starting process: let go of its copy of the lock, wait for the watcher's pid.
        os.close(write_end)
        lock.close_copy()
        os.waitpid(first, 0)
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read(32)
        if not data.strip().isdigit():
            raise OSError(f"the watcher did not start (see {log})")
        return int(data)
    # The first child: a new session, then fork again so the watcher is no session leader
    # (and so can never acquire a controlling terminal).
    try:
        os.close(read_end)
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        _redirect(log)
        os.write(write_end, str(os.getpid()).encode("ascii"))
        os.close(write_end)
        serve_until_stopped(lock, run)
    except BaseException as error:  # anything that escapes is logged, never a traceback on a tty
        with contextlib.suppress(Exception):
            sys.stderr.write(f"x-tui watch: {error}\n")
            sys.stderr.flush()
        os._exit(1)
    os._exit(0)


def _redirect(log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    os.chdir("/")
    os.umask(0o077)


def stop_watcher(state_dir: Path, *, seconds: float = STOP_SECONDS) -> int | None:
    """Ask the watcher of ``state_dir`` to stop (SIGTERM) and wait until it has let go.

    Returns:
        The stopped watcher's pid, or ``None`` when none was running.

    Raises:
        TimeoutError: If it still holds its lock after ``seconds``.
    """
    pid = running_pid(state_dir)
    if pid is None:
        return None
    if pid > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while running_pid(state_dir) is not None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the watcher (pid {pid}) did not stop within {seconds:.0f} s")
        time.sleep(0.05)
    return pid
