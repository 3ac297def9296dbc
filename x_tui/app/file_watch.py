"""Watching the run store, the sweep records and the project's pyproject.toml for changes.

``watchfiles`` (inotify and its kin) tells which files changed, debounced; where the system gives
no file notifications (an inotify limit, a file system without them) the three are read again
every :data:`POLL_SECONDS` instead. Either way this only says what changed, through callbacks
called on the watching thread; the caller reads what it needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from x_tui.app.run_records import stamp_of

POLL_SECONDS = 2.0
"""How often everything is read again when there are no file notifications."""


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
    """

    runs_dir: Path
    sweeps_dir: Path
    pyproject: Path | None
    runs_changed: Callable[[Iterable[Path] | None], object]
    sweeps_changed: Callable[[], object]
    project_changed: Callable[[], object]


def watch(watched: Watched, stop: threading.Event) -> None:
    """Call ``watched``'s callbacks as things change, until ``stop`` is set.

    Args:
        watched: What to watch and whom to tell.
        stop: Ends the watch (within about two seconds).
    """
    try:
        _notified(watched, stop)
    except OSError:
        _polled(watched, stop)


def _polled(watched: Watched, stop: threading.Event) -> None:
    seen = stamp_of(watched.pyproject)
    while not stop.wait(POLL_SECONDS):
        watched.sweeps_changed()
        watched.runs_changed(None)
        now = stamp_of(watched.pyproject)
        if watched.pyproject is not None and now != seen:
            seen = now
            watched.project_changed()


def _notified(watched: Watched, stop: threading.Event) -> None:
    import watchfiles

    project = watched.pyproject.parent if watched.pyproject is not None else None
    paths = [watched.runs_dir, watched.sweeps_dir] + ([project] if project is not None else [])
    first_quiet = True
    for changes in watchfiles.watch(
        *paths,
        watch_filter=None,
        recursive=False,
        debounce=400,
        step=50,
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
            continue
        touched = {Path(path) for _, path in changes}
        if any(path.parent == watched.sweeps_dir and path.suffix == ".json" for path in touched):
            watched.sweeps_changed()
        runs = {path for path in touched if path.parent == watched.runs_dir}
        if any(path.suffix == ".json" and not path.name.startswith(".") for path in runs):
            watched.runs_changed([path for path in runs if path.suffix == ".json"])
        if watched.pyproject is not None and watched.pyproject in touched:
            watched.project_changed()
