"""One watcher per state directory: an ``flock`` on ``<state>/x-tui/watch.lock`` holding its pid.

The lock is held for as long as the watcher's process lives (the kernel drops it when the
process ends, however it ends), so a stale file from a killed watcher never blocks the next one.
The pid written into the file only names the holder in messages and for ``--stop``; whether a
watcher runs is always asked of the lock itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from x_tui.compute.worker.errors import UserError

PATIENCE_TRIES = 20
PATIENCE_STEP = 0.05
"""A lock held by a process that wrote no pid is asked again this often, this long apart."""

LOCK_NAME = "watch.lock"
"""The lock file's name in ``<state>/x-tui``."""


def lock_path(state_dir: Path) -> Path:
    """The watcher's lock file of ``state_dir``."""
    return state_dir / "x-tui" / LOCK_NAME


class WatcherRunning(UserError):
    """Another watcher holds the lock.

    Attributes:
        pid: Its process id, as it wrote it (``None`` when the file does not say).
    """

    def __init__(self, path: Path, pid: int | None) -> None:
        """Name the lock file and the holder's pid."""
        who = f"pid {pid}" if pid is not None else "a process that has not written its pid yet"
        super().__init__(f"a watcher already runs for this state directory ({who}; {path})")
        self.pid = pid


class WatchLock:
    """The held lock; :meth:`release` (or the process's end) lets the next watcher start."""

    def __init__(self, path: Path, fd: int) -> None:
        """Wrap the open, locked file ``fd`` of ``path``."""
        self.path = path
        self._fd = fd

    def write_pid(self, pid: int | None = None) -> None:
        """Write ``pid`` (this process's by default) into the lock file."""
        data = str(pid if pid is not None else os.getpid()).encode("ascii")
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def close_copy(self) -> None:
        """Close this process's copy after a fork, leaving the lock to the process that goes on.

        An ``flock`` belongs to the open file, not the process: it is held as long as any copy
        of the descriptor is open, so the forked child keeps it.
        """
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def release(self) -> None:
        """Unlock and close (once)."""
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)
        self._fd = -1


def acquire(state_dir: Path) -> WatchLock:
    """Take the watcher lock of ``state_dir`` at once, or say who holds it.

    Returns:
        The held lock (the pid is not written yet: see :meth:`WatchLock.write_pid`).

    Raises:
        WatcherRunning: If another watcher holds it.
        OSError: If the state directory cannot be written.
    """
    path = lock_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        for attempt in range(PATIENCE_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return WatchLock(path, fd)
            except BlockingIOError:
                pid = holder_pid(state_dir)
                # A holder that wrote no pid may be a probe (``running_pid``) letting go at once.
                if pid is not None or attempt == PATIENCE_TRIES - 1:
                    raise WatcherRunning(path, pid) from None
                time.sleep(PATIENCE_STEP)
    except BaseException:
        os.close(fd)
        raise
    raise AssertionError("unreachable")  # pragma: no cover


def running_pid(state_dir: Path) -> int | None:
    """The pid of the watcher of ``state_dir`` while one holds the lock; ``None`` otherwise.

    Returns ``0`` when one holds it but has not written its pid yet.
    """
    try:
        held = acquire(state_dir)
    except WatcherRunning as running:
        return running.pid if running.pid is not None else 0
    except OSError:
        return None
    held.release()
    return None


def holder_pid(state_dir: Path) -> int | None:
    """The pid written into the lock file, if it holds one."""
    try:
        text = lock_path(state_dir).read_bytes()[:32].decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
