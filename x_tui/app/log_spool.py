"""Remote runs' logs, copied line by line into local files so one log view serves every backend.

A daemon thread per run reads the backend's ``logs(handle, follow=True)`` stream (opened within
the logs deadline) and appends each line to ``<logs_dir>/<run_id>.log``; a ``.done`` marker
beside it says the copy is complete, so a finished log is never copied again (a copy or marker
that is not a regular file is not trusted: the log is copied anew over it). A stream that
breaks keeps what came and says why in its :class:`SpoolState`. When each line came is kept in
``<run_id>.log.times`` (``x_tui.compute.worker.log_times``), so the log view can show it (``t``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from x_tui.app.deadlines import call_with_deadline
from x_tui.compute.backend import ComputeBackend
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.log_times import TimesWriter, times_path


@dataclass(kw_only=True, slots=True)
class SpoolState:
    """How the copy of a remote run's log into a local file is going.

    Attributes:
        path: The local file the log lines are appended to.
        finished: Whether the backend's log stream has ended.
        error: Why the stream stopped early, if it did (untrusted text).
        lines: How many lines were copied so far.
    """

    path: Path
    finished: bool = False
    error: str | None = None
    lines: int = 0


class LogSpools:
    """The log copies of this process, one per run, started on first use."""

    def __init__(self, logs_dir: Path, *, open_seconds: float) -> None:
        """Copy logs into ``logs_dir``.

        Args:
            logs_dir: Where each run's copy goes (``<run_id>.log``).
            open_seconds: How long a backend may take to open a run's log stream.
        """
        self.logs_dir = logs_dir
        self.open_seconds = open_seconds
        self._lock = threading.Lock()
        self._spools: dict[str, SpoolState] = {}

    def state(self, run_id: str) -> SpoolState | None:
        """How the copy of a run's log is going, or ``None`` if it was never started."""
        with self._lock:
            return self._spools.get(run_id)

    def spool(self, handle: RunHandle, backend: Callable[[], ComputeBackend]) -> SpoolState:
        """Start copying the run's log, unless a copy is going or complete (once per run).

        Args:
            handle: The run.
            backend: Builds the run's backend (called only when a copy starts).

        Returns:
            The copy's state.

        Raises:
            UserError: If the backend cannot be built.
        """
        path = self.logs_dir / f"{handle.run_id}.log"
        done_marker = path.with_suffix(".done")
        with self._lock:
            existing = self._spools.get(handle.run_id)
            if existing is not None and existing.error is None:
                return existing
            state = SpoolState(path=path)
            if _is_regular(done_marker) and _is_regular(path):
                state.finished = True
                self._spools[handle.run_id] = state
                return state
            self._spools[handle.run_id] = state
        built = backend()
        thread = threading.Thread(
            target=self._copy_log,
            args=(built, handle, state, done_marker),
            name=f"x-tui spool {handle.run_id}",
            daemon=True,
        )
        thread.start()
        return state

    def _copy_log(
        self, backend: ComputeBackend, handle: RunHandle, state: SpoolState, done_marker: Path
    ) -> None:
        times: TimesWriter | None = None
        try:
            state.path.parent.mkdir(parents=True, exist_ok=True)
            lines: Iterator[str] = call_with_deadline(
                lambda: iter(backend.logs(handle, follow=True)),
                seconds=self.open_seconds,
                backend=handle.backend,
                what=f"logs of {handle.run_id}",
            )
            times = _open_times(state.path)
            offset = 0
            with _open_copy(state.path) as out:
                for line in lines:
                    data = (line.rstrip("\n") + "\n").encode("utf-8", "replace")
                    if times is not None:
                        times.mark(offset, time.time())
                    out.write(data)
                    out.flush()
                    offset += len(data)
                    state.lines += 1
        except Exception as error:  # a provider's stream failing is shown, not raised
            state.error = str(error) or type(error).__name__
        else:
            done_marker.touch()
        finally:
            state.finished = True
            if times is not None:
                times.close()


def _open_times(log: Path) -> TimesWriter | None:
    """The times file beside a spooled log: when x-tui received each line (``t``)."""
    try:
        return TimesWriter(times_path(log), base=time.time())
    except OSError:
        return None


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _open_copy(path: Path) -> BinaryIO:
    """Open a log copy for writing; whatever else was left in its place (a FIFO, a link) goes.

    Raises:
        OSError: If it cannot be written (a directory in its place, say).
    """
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(path.lstat().st_mode) and not stat.S_ISDIR(path.lstat().st_mode):
            path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o644), "wb")
