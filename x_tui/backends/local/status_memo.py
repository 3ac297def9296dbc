"""What the local backend's ``status`` may take from its last answer instead of reading it again.

The monitor asks for every unfinished run's state every few seconds; a run that runs on unchanged
costs one ``lstat`` of its manifest and one read of its worker's ``/proc/<pid>/stat`` this way:

- a manifest parsed is kept with its file's inode, modification time and size, and given again
  while the file has the same three; it is kept only once the file has been still for
  :data:`SETTLED_SECONDS` (a coarse clock could hide a rewrite made within the same tick);
- a process proven to be a run's worker (:func:`x_tui.backends.local.process.is_worker`: its
  arguments, marker and start time) stays proven while ``/proc`` shows the same pid with the same
  start time and not exited: a pid reused by another process has another start time (the worker
  never replaces its own program);
- a run's process marker, once read, is kept (it is written before the worker starts, never
  again).

Where there is no ``/proc`` every check is made in full, as before. Each table holds at most
:data:`MAX_ENTRIES` entries (emptied when full: a run that ended is never asked about again).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

from x_tui.backends.local import process as local_process
from x_tui.compute.worker import run_processes
from x_tui.compute.worker.manifest import JobManifest, load_manifest

SETTLED_SECONDS = 2.0
"""How long a manifest must have been still for its stamp to vouch for its content."""

MAX_ENTRIES = 4096
"""Entries each table holds at most."""

_Stamp = tuple[int, int, int]


class StatusMemo:
    """The manifests, proven workers and markers of runs asked about before (thread-safe)."""

    def __init__(self) -> None:
        """Start with nothing known."""
        self._lock = threading.Lock()
        self._manifests: dict[Path, tuple[_Stamp, JobManifest]] = {}
        self._workers: dict[tuple[int, Path, str | None, str | None], str] = {}
        self._markers: dict[tuple[Path, str], str] = {}

    def manifest(self, path: Path) -> JobManifest | None:
        """The manifest at ``path`` as :func:`load_manifest` reads it (and raises), parsed again
        only when the file changed."""
        try:
            info = os.lstat(path)
        except OSError:
            info = None
        stamp = None
        if info is not None and stat.S_ISREG(info.st_mode):
            stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
            with self._lock:
                known = self._manifests.get(path)
            if known is not None and known[0] == stamp:
                return known[1]
        manifest = load_manifest(path)
        if (
            stamp is not None
            and manifest is not None
            and time.time() - stamp[1] / 1e9 > SETTLED_SECONDS
        ):
            with self._lock:
                _make_room(self._manifests)
                self._manifests[path] = (stamp, manifest)
        return manifest

    def is_worker(self, run: local_process.RunProcesses) -> bool:
        """Whether ``run.pid`` is the run's live worker, as
        :func:`~x_tui.backends.local.process.is_worker` says (in full the first time)."""
        if not run_processes.has_proc():
            return local_process.is_worker(run)
        key = (run.pid, run.run_dir, run.marker, run.start_time)
        with self._lock:
            proven_start = self._workers.get(key)
        if proven_start is not None:
            start = _live_start(run.pid)
            if start == proven_start:
                return True
            with self._lock:
                self._workers.pop(key, None)
            return False
        before = _live_start(run.pid)
        if not local_process.is_worker(run):
            return False
        # Kept only if the pid had the same start time before and after the proof: the process
        # proven is the one whose start time is kept.
        if before is not None and _live_start(run.pid) == before:
            with self._lock:
                _make_room(self._workers)
                self._workers[key] = before
        return True

    def marker(self, run_dir: Path, run_id: str) -> str | None:
        """The run's process marker (:func:`run_processes.read_marker`), read until found."""
        key = (run_dir, run_id)
        with self._lock:
            known = self._markers.get(key)
        if known is not None:
            return known
        found = run_processes.read_marker(run_dir, run_id)
        if found is not None:
            with self._lock:
                _make_room(self._markers)
                self._markers[key] = found
        return found


def _live_start(pid: int) -> str | None:
    """The start time of process ``pid`` if it lives and has not exited."""
    found = run_processes.proc_stat(pid)
    if found is None:
        return None
    state, _parent, _session, start = found
    return None if state in ("Z", "X") else start


def _make_room(table: dict[Any, Any]) -> None:
    if len(table) >= MAX_ENTRIES:
        table.clear()
