"""Watching the run store, the sweep records and the project's pyproject.toml for changes.

On Linux the watching thread sleeps on an inotify descriptor (:mod:`x_tui.app.inotify`) until
something changes, so an idle app spends nothing on it; elsewhere ``watchfiles`` (kqueue and its
kin) tells which files changed. Changes are gathered until :data:`QUIET_SECONDS` pass without
another (at most :data:`GATHER_SECONDS`), then told. Where the system gives no file
notifications (an inotify limit, a file system without them, a watched directory removed) the
three are read again every :data:`POLL_SECONDS` instead. Either way this only says what changed,
through callbacks called on the watching thread; the caller reads what it needs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from x_tui.app.inotify import MAX_PATHS, Changes, Interrupt, open_inotify
from x_tui.app.run_records import Stamp, stamp_of

POLL_SECONDS = 2.0
"""How often everything is read again when there are no file notifications."""

QUIET_SECONDS = 0.05
"""Changes are told once this long passed without another."""

GATHER_SECONDS = 0.4
"""Changes are told at the latest this long after the first of them."""

STOP_SECONDS = 1.0
"""How soon an inotify watch without an interrupt sees that it was asked to stop (its only
wake-up while idle)."""

FIRST_QUIET_SECONDS = 2.0
"""Once this long passed quietly after the watch began, everything is read again once (records
saved between the first read and the watch starting are caught then)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Watched:
    """What is watched, and what to call when it changes (each called on the watching thread).

    Attributes:
        runs_dir: The store's directory of handles.
        sweeps_dir: The directory of sweep records.
        pyproject: The project's ``pyproject.toml``; ``None`` outside a project.
        runs_changed: Called with the handle files that changed, or ``None`` to read them all.
        sweeps_changed: Called when a sweep record changed (before the runs of the same batch,
            so a sweep's runs arrive already grouped).
        project_changed: Called when ``pyproject.toml`` changed.
        pyproject_stamp: ``pyproject.toml``'s stamp when the caller began: if it differs once
            the watch has begun, ``project_changed`` is called then.
    """

    runs_dir: Path
    sweeps_dir: Path
    pyproject: Path | None
    runs_changed: Callable[[Iterable[Path] | None], object]
    sweeps_changed: Callable[[], object]
    project_changed: Callable[[], object]
    pyproject_stamp: Stamp | None = None


def watch(watched: Watched, stop: threading.Event, *, interrupt: Interrupt | None = None) -> None:
    """Call ``watched``'s callbacks as things change, until ``stop`` is set.

    Args:
        watched: What to watch and whom to tell.
        stop: Ends the watch (within :data:`STOP_SECONDS` with inotify, else about two seconds).
        interrupt: Set after ``stop``, ends an inotify watch at once; with it, the watching
            thread does not wake at all while nothing changes.
    """
    try:
        if not _inotified(watched, stop, interrupt):
            _notified(watched, stop)
    except OSError:
        _polled(watched, stop)


def _polled(watched: Watched, stop: threading.Event) -> None:
    seen = watched.pyproject_stamp
    while not stop.wait(POLL_SECONDS):
        watched.sweeps_changed()
        watched.runs_changed(None)
        now = stamp_of(watched.pyproject)
        if watched.pyproject is not None and now != seen:
            seen = now
            watched.project_changed()


def _directories(watched: Watched) -> list[Path]:
    project = watched.pyproject.parent if watched.pyproject is not None else None
    return [watched.runs_dir, watched.sweeps_dir] + ([project] if project is not None else [])


def _inotified(watched: Watched, stop: threading.Event, interrupt: Interrupt | None) -> bool:
    """Watch with inotify until ``stop``; ``False`` at once where there is none.

    Raises:
        OSError: If a directory cannot be watched, or one went away (then polling takes over).
    """
    notify = open_inotify()
    if notify is None:
        return False
    try:
        for directory in _directories(watched):
            notify.watch(directory)
        _tell_edited_project(watched)
        quiet_until: float | None = time.monotonic() + FIRST_QUIET_SECONDS
        while not stop.is_set():
            if quiet_until is not None:
                wait: float | None = min(STOP_SECONDS, max(0.0, quiet_until - time.monotonic()))
            else:
                wait = STOP_SECONDS if interrupt is None else None
            if not notify.wait(wait, interrupt=interrupt):
                if quiet_until is not None and time.monotonic() >= quiet_until:
                    quiet_until = None
                    watched.sweeps_changed()
                    watched.runs_changed(None)
                continue
            changes = notify.read()
            give_up = time.monotonic() + GATHER_SECONDS
            while not changes.gone and (left := give_up - time.monotonic()) > 0:
                if not notify.wait(min(QUIET_SECONDS, left)):
                    break
                more = notify.read()
                lost = changes.lost or more.lost
                lost = lost or len(changes.paths) + len(more.paths) > MAX_PATHS
                changes = Changes(
                    frozenset() if lost else changes.paths | more.paths,
                    lost=lost,
                    gone=changes.gone or more.gone,
                )
            if stop.is_set():
                break
            if changes.lost or changes.gone:
                watched.sweeps_changed()
                watched.runs_changed(None)
                if watched.pyproject is not None:
                    watched.project_changed()
                if changes.gone:
                    raise OSError("a watched directory went away")
                continue
            _tell(watched, set(changes.paths))
    finally:
        notify.close()
    return True


def _notified(watched: Watched, stop: threading.Event) -> None:
    import watchfiles

    first_quiet = True
    for changes in watchfiles.watch(
        *_directories(watched),
        watch_filter=None,
        recursive=False,
        debounce=int(GATHER_SECONDS * 1000),
        step=int(QUIET_SECONDS * 1000),
        stop_event=stop,
        yield_on_timeout=True,
        rust_timeout=2000,
        raise_interrupt=False,
    ):
        if stop.is_set():
            return
        if not changes:
            if first_quiet:
                # Records saved between the first read and the watch starting are caught here.
                first_quiet = False
                watched.sweeps_changed()
                watched.runs_changed(None)
                _tell_edited_project(watched)
            continue
        _tell(watched, {Path(path) for _, path in changes})


def _tell_edited_project(watched: Watched) -> None:
    """Call ``project_changed`` if ``pyproject.toml`` changed before the watch began."""
    if watched.pyproject is not None and stamp_of(watched.pyproject) != watched.pyproject_stamp:
        watched.project_changed()


def _tell(watched: Watched, touched: set[Path]) -> None:
    """Call ``watched``'s callbacks for the files ``touched``."""
    if any(path.parent == watched.sweeps_dir and path.suffix == ".json" for path in touched):
        watched.sweeps_changed()
    runs = {path for path in touched if path.parent == watched.runs_dir}
    if any(path.suffix == ".json" and not path.name.startswith(".") for path in runs):
        watched.runs_changed([path for path in runs if path.suffix == ".json"])
    if watched.pyproject is not None and watched.pyproject in touched:
        watched.project_changed()
