"""Process supervision for the worker: a child in its own process group, watched until it ends.

A child is started as the leader of a new process group with its stdout and stderr on pipes.
:class:`Child` copies both pipes to sinks chunk by chunk and ends the whole group when the
child's limit runs out, when the worker is asked to stop (:class:`Cancellation`), or when the
child itself exits, so no grandchild outlives its task or holds the worker on an open pipe.
Once the child has exited, what left the group (``setsid``) is ended too, where the worker is
the child subreaper of all it starts (:func:`x_tui.compute.worker.run_processes.end_strays`).

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. It never
decides what a child's outcome means for a task or a job; it only reports how the child ended.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from x_tui.compute.worker.run_processes import end_strays, wait_group_gone

TERM_GRACE_SECONDS = 3.0
"""How long a task may take to end after the worker forwards SIGTERM, before SIGKILL."""

DRAIN_SECONDS = 1.0
"""How long the pipes are still read after a task's group is gone (an escaped grandchild)."""

_CHUNK = 65536
_POLL_SECONDS = 0.05  # only where the OS offers no pidfd to wait on
_LONGEST_WAIT_SECONDS = 3600.0  # epoll takes at most INT_MAX ms; a longer limit waits in turns
_STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


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


@dataclass(frozen=True)
class ChildExit:
    """How a child ended."""

    returncode: int
    """The child's exit code (negative: the signal that ended it)."""
    timed_out: bool
    """Whether its limit ran out and its group was killed for it."""


def start_child(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start a child as the leader of a new process group, its output on two pipes.

    Args:
        argv: The command.
        cwd: The directory it runs in.
        env: Its whole environment.

    Returns:
        The started process, its stdin on ``/dev/null``, stdout and stderr on pipes.

    Raises:
        OSError: If the command cannot be started (not found, not executable, bad ``cwd``).
        subprocess.SubprocessError: If the child failed before running the command.
    """
    if sys.version_info >= (3, 11):
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


class Child:
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
        tick: Callable[[float], float | None] | None = None,
    ) -> None:
        """Watch a child that :func:`start_child` started.

        Args:
            process: The child, leading its own process group, with stdout and stderr piped.
            limit: Seconds from now until its group is killed and it counts as timed out.
            sinks: What receives each chunk of its stdout and of its stderr.
            cancel: When given, a stop it requests ends the group (SIGTERM, then SIGKILL).
            tick: Called with the monotonic time between reads; it returns when it wants to be
                called again (monotonic), or ``None`` while it does not (unfinished lines
                written after an idle time).
        """
        assert process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._pipes = (process.stdout, process.stderr)
        self._cancel = cancel
        self._tick = tick
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
        self._tick_due: float | None = None

    def wait(self) -> ChildExit:
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
                if self._tick is not None:
                    self._tick_due = self._tick(time.monotonic())
        finally:
            self._close()
        if self._cancel is not None:
            self._cancel.check()
        assert self._returncode is not None
        return ChildExit(returncode=self._returncode, timed_out=self._timed_out)

    def _enforce(self, now: float) -> None:
        pgid = self._process.pid
        if _has_exited(self._process):  # before the limit: a child that ended in time did
            _signal_group(pgid, signal.SIGKILL)  # whatever it left running in its group
            end_strays(keep=pgid)  # and outside it (setsid), once the worker is their subreaper
            self._returncode = self._process.wait()
            wait_group_gone(pgid)  # SIGKILL is acted on when each process next runs
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
        if self._tick_due is not None:
            wake = max(0.0, self._tick_due - now)
            timeout = wake if timeout is None else min(timeout, wake)
        return None if timeout is None else min(timeout, _LONGEST_WAIT_SECONDS)

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
