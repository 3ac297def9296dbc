"""Following runs: watches the run store and the project's pyproject.toml, and polls run states.

Two daemon threads (three, with the launch records below), started with the app and stopped
with it:

- the **watcher** reads the store (the newest records first, so the first screenful shows while
  the rest is read: from the store's index head and the newest runs' kept final states when
  they are believed, a few kilobytes, else from the newest files) and the sweep records, then
  waits (:mod:`x_tui.app.file_watch`) for changes
  to ``<state>/compute/runs/``, to ``<state>/x-tui/sweeps/`` and to the project's
  ``pyproject.toml``; a run or a sweep saved by another shell or by substrax appears without a
  key press, and only the records that changed are read again (:mod:`x_tui.app.run_records`);
- the **poller** asks each unfinished run's backend for its state through the service (which puts
  a deadline on every call), 1 s after the run appears and then backing off to 10 s while the
  state stays the same. The runs of one backend (and settings) that are due together are asked
  for in one call where the backend declares ``Capability.STATUSES`` (a run due within the next
  ``first_interval`` joins them, so runs stay in step), else one call per run. A batch that
  misses its deadline is asked again one run per call, so a run whose state hangs hides none of
  the others'. A final state
  is kept in ``<state>/x-tui/final-states.json`` (:mod:`x_tui.app.final_states`) and that run is
  never polled again, in this session or the next.

A third thread reads the launch records (:mod:`x_tui.compute.launches`) every second while there are
some (while there are none, it sleeps until their directory changes, where inotify tells it, else
looks whether it changed each second): a run still being submitted is listed ``submitting``, one
whose submitter died before it started ``failed``.

No thread touches a widget, and this module imports no Textual: what the threads learn goes to the
``on_*`` hooks, which do nothing here. The TUI's :class:`~x_tui.app.monitor.RunMonitor` turns them
into messages; the headless watcher (:mod:`x_tui.app.watcher`) into events.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from x_tui.app.deadlines import DeadlinePassed
from x_tui.app.final_states import (
    keep_final_states,
    keep_recent_final_states,
    read_final_states,
    read_recent_final_states,
)
from x_tui.app.run_records import Record, Stamp, newest_names, read_handle_record, stamp_of
from x_tui.app.run_records import listing as list_records
from x_tui.app.service import Service, frozen_settings
from x_tui.compute.backend import RunState
from x_tui.compute.deadline import DaemonPool
from x_tui.compute.store import RunHandle, RunListing, StoredRuns
from x_tui.compute.sweeps import StoredSweeps

if TYPE_CHECKING:  # (the project's module is loaded when a project is read, not at start-up)
    from x_tui.app.inotify import Inotify, Interrupt
    from x_tui.compute.launches import LaunchRecord
    from x_tui.compute.operations import Project

PYPROJECT = "pyproject.toml"
FIRST_BATCH = 100
"""How many of the newest records are read and shown before the rest of the store."""

FIRST_PAUSE = 0.1
"""Seconds the first read waits, after posting the newest records, before reading the rest
(unless told sooner that they are shown, :meth:`RunFollower.first_shown`)."""

LAUNCH_SECONDS = 1.0
"""How often the launch records (runs whose submit has not finished) are read while there are
some."""

LAUNCH_WRITE_SECONDS = 0.05
"""How long after their directory changed the launch records are read (a record is written to a
temporary file first, then renamed into place)."""

SETTLED_SECONDS = 2.0
"""How long a directory must have been still for its modification time to vouch for it."""

_UNSET = (-1, -1)
"""A stamp no directory has: the launch records are read at the next look."""

FIRST_INTERVAL = 1.0
"""Seconds before a new (or changed) run is polled, by default."""

MAX_INTERVAL = 10.0
"""The longest wait between two polls of an unfinished run, by default."""


@dataclass(frozen=True, slots=True)
class PollIntervals:
    """How often a follower asks backends for the states of unfinished runs.

    Attributes:
        first: Seconds before a new (or changed) run is polled.
        max: The longest wait between two polls of an unfinished run (the wait doubles from
            ``first`` up to this while a run's state stays the same).
    """

    first: float = FIRST_INTERVAL
    max: float = MAX_INTERVAL

    def scaled(self, factor: float) -> PollIntervals:
        """These intervals ``factor`` times longer."""
        return PollIntervals(first=self.first * factor, max=self.max * factor)


class FollowerOptions(TypedDict, total=False):
    """The keyword arguments of :class:`RunFollower` (a subclass passes them on as they are)."""

    project: Path | None
    first_interval: float
    max_interval: float
    error_interval: float
    parallel: int
    poll: bool


@dataclass(slots=True)
class _Poll:
    due: float
    interval: float
    busy: bool = False
    last_error: str | None = None
    told: bool = False


class RunFollower:
    """Keeps a view of the run store and of each run's state current, and reports what changes."""

    first_pause: float = FIRST_PAUSE
    """Seconds the first read waits, after posting the newest runs, before reading the rest
    (:meth:`first_shown` ends the wait sooner)."""

    def __init__(
        self,
        service: Service,
        *,
        project: Path | None = None,
        first_interval: float = FIRST_INTERVAL,
        max_interval: float = MAX_INTERVAL,
        error_interval: float = 60.0,
        parallel: int = 4,
        poll: bool = True,
    ) -> None:
        """Watch ``service``'s store (and ``project``'s pyproject.toml) and post what changes.

        Args:
            service: Reads the store and asks backends for states.
            project: The project root whose pyproject.toml is watched; ``None`` watches none.
            first_interval: Seconds before a new (or changed) run is polled.
            max_interval: The longest wait between two polls of an unfinished run.
            error_interval: The longest wait after a backend failed to answer.
            parallel: How many status calls may be in flight at once.
            poll: Whether to ask backends for states at all (off, only the final states kept
                from earlier sessions are known; for tests that need a still picture).
        """
        self.service = service
        self.project = project
        self._polling = poll
        self._first = first_interval
        self._max = max_interval
        self._error_max = error_interval
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._first_read = threading.Event()
        """Set once the newest records are read with the final states kept from earlier
        sessions: the first poll round waits for it, so the runs found together are asked for
        together, and a run kept as ended is never asked about."""
        self._shown = threading.Event()
        """Set once the first records posted are shown (the rest of the store is read then)."""
        self._lock = threading.Lock()
        self._tellings: dict[str, threading.Lock] = {}
        """Each run's telling lock, held from a change of the run's state to its telling (the
        hooks), so that what different threads found of one run is told in the order it was
        found: else its ``running``, told late, could follow its ``succeeded`` and be what a
        screen shows last. One lock per run: a hook that takes long (the watcher resubmitting a
        preempted run) holds up only that run's next telling. A run's lock goes once it has ended
        (or its launch record went without a handle), so the table holds the runs going now."""
        self._listing_telling = threading.Lock()
        """Held from reading the listing to its telling, for the same reason (an older listing
        told after a newer one)."""
        self._records: dict[Path, Record] = {}
        self._handles: dict[str, RunHandle] = {}
        self._states: dict[str, RunState] = {}
        self._ended: dict[str, float | None] = {}
        """Each finished run, with when it ended (``None`` when that is not known)."""
        self._polls: dict[str, _Poll] = {}
        self._launches: dict[str, LaunchRecord] = {}
        self._launch_unreadable: dict[Path, str] = {}
        """Each run whose submit has not finished (or never did), from its launch record."""
        self._stored = StoredRuns(handles=(), unreadable={})
        self._sweeps = StoredSweeps(sweeps=(), unreadable={})
        self._pool = DaemonPool(parallel, name="x-tui status")
        self._threads: list[threading.Thread] = []
        self._head: RunListing | None = None
        """The store's index head, read by :meth:`start` (``None``: none to believe)."""
        self._cache_path = service.state_dir / "x-tui" / "final-states.json"
        self._dirty = False
        self._kept_at_start: frozenset[str] | None = None
        self._scanned = False
        self._published: set[str] = set()
        """The runs of the last listing posted."""
        self._saved_at = 0.0
        self._save_lock = threading.Lock()
        self._pyproject_stamp: Stamp | None = None
        self._launch_stamp: tuple[int, int] | None = _UNSET
        self._recent_believed = False
        """Whether the newest runs' final states kept beside the cache were read and believed."""
        self._interrupts_lock = threading.Lock()
        self._interrupts: list[Interrupt] = []
        """What ends the waits of the threads asleep on inotify (set by :meth:`stop`)."""

    # Public API -------------------------------------------------------------------------------

    @property
    def first_interval(self) -> float:
        """Seconds before a new (or changed) run is polled."""
        return self._first

    @property
    def max_interval(self) -> float:
        """The longest wait between two polls of an unfinished run."""
        return self._max

    @property
    def runs_dir(self) -> Path:
        """The directory of run handles being watched."""
        return self.service.store.root

    @property
    def stored(self) -> StoredRuns:
        """The store as last read (empty before the first read)."""
        with self._lock:
            return self._stored

    @property
    def sweeps(self) -> StoredSweeps:
        """The sweep records as last read (empty before the first read)."""
        with self._lock:
            return self._sweeps

    def state_of(self, run_id: str) -> RunState | None:
        """The run's state as last reported, or ``None`` before its backend has answered."""
        with self._lock:
            return self._states.get(run_id)

    def unfinished(self) -> list[RunHandle]:
        """The runs whose state is known and not final, a run still being submitted among
        them (looked up among the runs not known to have ended, not among every run listed)."""
        with self._lock:
            states = self._states
            candidates = [
                *(handle for run_id in self._polls if (handle := self._handles.get(run_id))),
                *(
                    record.handle()
                    for run_id, record in self._launches.items()
                    if run_id not in self._handles
                ),
            ]
            return [
                handle
                for handle in candidates
                if (state := states.get(handle.run_id)) is not None and state not in _FINAL_STATES
            ]

    def known_states(self) -> tuple[dict[str, RunState], dict[str, float | None]]:
        """A copy of every state known, and of when each finished run ended, by run id."""
        with self._lock:
            return dict(self._states), dict(self._ended)

    @property
    def kept_at_start(self) -> frozenset[str] | None:
        """The runs whose final state was kept when the watcher started (ended before this
        session), or ``None`` until the watcher has read them."""
        with self._lock:
            return self._kept_at_start

    def ended_at(self, run_id: str) -> float | None:
        """When a finished run ended (an epoch time), or ``None`` if it has not (or is unknown)."""
        with self._lock:
            return self._ended.get(run_id)

    def start(self) -> None:
        """Start the watcher and the poller threads (once)."""
        if self._threads:
            return
        # Taken before anything is read: an edit made before the watch begins is told then.
        self._pyproject_stamp = stamp_of(self.project / PYPROJECT if self.project else None)
        # The newest runs, from the store's index head (a few kilobytes), are read and posted
        # here, before any thread: a screen mounted next shows them in its first frame.
        self._head = self._read_head()
        if self._head is not None:
            self._publish(complete=False)
        loops = [("watch", self._watch_loop)]
        if self._polling:
            loops.append(("poll", self._poll_loop))
            loops.append(("launches", self._launch_loop))
        for name, target in loops:
            thread = threading.Thread(target=target, name=f"x-tui monitor {name}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop both threads soon and keep the final states learnt so far.

        Status calls in flight are abandoned, not waited for.
        """
        self._stop.set()
        self._wake.set()
        self._shown.set()
        with self._interrupts_lock:
            for interrupt in self._interrupts:
                interrupt.set()
        self._pool.shutdown()
        self._save_final_states()

    def first_shown(self) -> None:
        """The first screenful is shown (the first runs posted and whatever else the screen
        shows first): read the rest of the store now, without waiting.

        While the first screenful is being shown the watcher leaves the interpreter to the
        screen; it waits :attr:`first_pause` seconds at most for this.
        """
        self._shown.set()

    def poll_soon(self, run_id: str) -> None:
        """Ask for the run's state now (after a submit or a cancel), then back off again."""
        with self._lock:
            poll = self._polls.get(run_id)
            if poll is None and run_id in self._handles and run_id not in self._ended:
                poll = self._polls[run_id] = _Poll(due=0.0, interval=self._first)
            if poll is not None:
                poll.due = 0.0
                poll.interval = self._first
        self._wake.set()

    def rescan(self) -> None:
        """Read the whole store again (changed records only) and post what it holds."""
        self._scan_all()

    # Hooks (called from the follower's threads; each does nothing here) ---------------------
    #
    # ``on_state_changed``, ``on_launch_state``, ``on_status_failed`` and ``on_status_recovered``
    # are called in the order the follower found what they tell of a run (it holds that run's
    # telling lock meanwhile, so the run's next one waits), ``on_runs_changed`` in the order the
    # listings were read.

    def on_runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
        """The store changed (``complete`` is false while it is still being read at start)."""

    def on_sweeps_changed(self, sweeps: StoredSweeps) -> None:
        """The sweep records changed."""

    def on_project_changed(self, project: Project) -> None:
        """The project's pyproject.toml changed; ``project`` is it read again."""

    def on_state_changed(
        self, handle: RunHandle, state: RunState, previous: RunState | None
    ) -> None:
        """The run's backend reports ``state``, not ``previous`` (``None``: its first answer)."""

    def on_polled(self, handle: RunHandle, state: RunState) -> None:
        """The run's backend answered (called after every answer, changed or not)."""

    def on_status_failed(self, run_id: str, reason: str) -> None:
        """The run's backend could not say where the run is (said once per distinct reason)."""

    def on_status_recovered(self, run_id: str) -> None:
        """The run's backend answers again after it could not say (a new state it answered
        with is told first, by :meth:`on_state_changed`)."""

    def on_launch_state(self, run_id: str, state: RunState) -> None:
        """A run with no handle yet is ``state`` by its launch record, not by its backend.

        ``submitting`` while its submitter works, ``failed`` when that died before it started.
        """

    def on_kept_state(self, run_id: str, state: RunState) -> None:
        """A run listed (from a head) before the kept final states were read ended as
        ``state``, as they say (not its backend: the newest runs' are read with the head, but a
        project's own newest may be older)."""

    # The watcher ------------------------------------------------------------------------------

    def _watch_loop(self) -> None:
        for directory in (self.runs_dir, self.service.sweeps_dir):
            # A path that is not a directory is read as holding nothing, never fatal here.
            with contextlib.suppress(OSError):
                directory.mkdir(parents=True, exist_ok=True)
        self._read_sweeps()
        self._initial_scan()
        # Loaded here, once the first screenful is shown: the watch starts after it.
        from x_tui.app.file_watch import Watched, watch

        interrupt = self._interrupt()
        try:
            watch(
                Watched(
                    runs_dir=self.runs_dir,
                    sweeps_dir=self.service.sweeps_dir,
                    pyproject=self.project / PYPROJECT if self.project is not None else None,
                    runs_changed=self._runs_changed,
                    sweeps_changed=self._read_sweeps,
                    project_changed=self._project_changed,
                    pyproject_stamp=self._pyproject_stamp,
                ),
                self._stop,
                interrupt=interrupt,
            )
        finally:
            interrupt.close()

    def _runs_changed(self, paths: Iterable[Path] | None) -> None:
        if paths is None:
            self._scan_all()
        else:
            self._scan_paths(paths)

    def _project_changed(self) -> None:
        if self.project is not None:
            self.on_project_changed(self.service.open_project(self.project))

    def _read_sweeps(self) -> None:
        sweeps = self.service.read_sweeps()
        with self._lock:
            if sweeps == self._sweeps:
                return
            problems_changed = sweeps.unreadable != self._sweeps.unreadable
            self._sweeps = sweeps
            scanned = self._scanned
        self.on_sweeps_changed(sweeps)
        if problems_changed and scanned:
            self._publish(complete=True)

    def _initial_scan(self) -> None:
        """Read the store for the first time: the newest runs first, posted, then the rest.

        The kept final states are read here, not in ``__init__`` (100,000 of them take a
        while, and the app builds its first frame meanwhile), and before the poller starts.
        """
        try:
            head = self._head  # read and posted by start
            if head is not None:
                if head.complete:
                    self._load_final_states()
                else:
                    self._wait_shown()
                    self._load_final_states()
                    self._first_read.set()  # the newest runs still going are polled from now
                    self._keep_indexed(None)
                self._first_read.set()
                self._publish(complete=True)
                return
            # No head to believe: the newest files are read one by one, then the rest (the kept
            # final states first, unless the newest runs' are believed: then after them). The
            # poller starts once the newest files are all read, so they are asked for together.
            states_loaded = not self._keep_recent_states()
            if states_loaded:
                self._load_final_states()
            newest, total = newest_names(self.runs_dir, FIRST_BATCH)
            self._read_paths([self.runs_dir / name for name in newest])
            if states_loaded:
                self._first_read.set()
            if total > FIRST_BATCH:
                self._publish(complete=False)
                self._wait_shown()
            if not self._first_read.is_set():
                self._load_final_states()
                self._first_read.set()
            if total > FIRST_BATCH:
                self._keep_indexed(None)  # the rest, as the index has them (and what it lacks)
            self._publish(complete=True)
        finally:
            self._first_read.set()

    def _wait_shown(self) -> None:
        """Let the UI show the first screenful before this thread takes the interpreter to read
        the rest (from the store's index: only the files that changed are read)."""
        self._shown.wait(self.first_pause)

    def _wait_first_screenful(self) -> None:
        """Where the newest runs were posted from the index head and the rest is still to read,
        let the UI show them first (:meth:`_wait_shown`); otherwise go on at once.

        The launch records' thread starts with the app: its first read (loading the launch
        records' module and the inotify binding, about 9 ms of CPU) would otherwise take the
        interpreter from the screen building its first frame.
        """
        head = self._head
        if head is not None and not head.complete:
            self._wait_shown()

    def _read_head(self) -> RunListing | None:
        """Keep the store's newest runs from its index head, with the newest runs' final states.

        Returns:
            The head, or ``None`` when there is none to believe (nothing is kept then).
        """
        try:
            project = str(self.project) if self.project is not None else None
            head = self.service.store.head(project)  # with the project's newest runs
        except Exception:  # the head never stops the watcher: the store is read as without it
            return None
        if head is None:
            return None
        self._keep_recent_states()
        names = head.files.names
        for run in head.runs:
            stamp = head.files.stamp(run.row)[:2]
            self._keep(self.runs_dir / names[run.row], Record(stamp, head.handle(run), None))
        # A file that cannot be read is named as when it is read alone.
        self._read_paths([self.runs_dir / names[row] for row in head.problems])
        return head

    def _keep_recent_states(self) -> bool:
        """Keep the newest runs' final states kept beside the cache; whether they are believed."""
        recent = read_recent_final_states(self._cache_path)
        self._recent_believed = recent is not None
        if recent:
            with self._lock:
                for run_id, (state, ended) in recent.items():
                    self._states.setdefault(run_id, state)
                    self._ended.setdefault(run_id, ended)
        return self._recent_believed

    def _keep_indexed(self, paths: list[Path] | None) -> None:
        """Keep the records of ``paths`` as the store's index gives them (files read if not).

        ``None``: every file the index lists, and a record kept of a file it does not list is
        forgotten (the head's, when the head was not the store).
        """
        try:
            indexed = self.service.store.indexed()
        except Exception:  # the index never stops the watcher: the files are read one by one
            self._read_paths(paths if paths is not None else list_records(self.runs_dir))
            return
        if paths is None:
            paths = [self.runs_dir / name for name in indexed]
            with self._lock:
                gone = [path for path in self._records if path.name not in indexed]
            self._forget(gone)
        missing: list[Path] = []
        for path in paths:
            run = indexed.get(path.name)
            if run is None or run.handle is None:
                missing.append(path)  # an unreadable record is named as when it is read alone
                continue
            with self._lock:
                known = self._records.get(path)
            if known is None or known.stamp != run.stamp:
                self._keep(path, Record(run.stamp, run.handle, run.reason), wake=False)
        self._wake.set()
        self._read_paths(missing)

    def _scan_all(self) -> None:
        listing = list_records(self.runs_dir)
        present = set(listing)
        with self._lock:
            gone = [path for path in self._records if path not in present]
        changed = self._read_paths(listing) | self._forget(gone)
        if changed:
            self._publish(complete=True)

    def _scan_paths(self, paths: Iterable[Path]) -> None:
        existing: list[Path] = []
        gone: list[Path] = []
        for path in paths:
            # A link is a record file of its own (named unreadable), dangling or not.
            (existing if os.path.lexists(path) else gone).append(path)
        if self._read_paths(existing) | self._forget(gone):
            self._publish(complete=True)

    def _forget(self, paths: Iterable[Path]) -> bool:
        changed = False
        with self._lock:
            for path in paths:
                record = self._records.pop(path, None)
                if record is not None:
                    changed = True
                    if record.handle is not None:
                        self._handles.pop(record.handle.run_id, None)
                        self._polls.pop(record.handle.run_id, None)
        return changed

    def _read_paths(self, paths: Iterable[Path]) -> bool:
        changed = False
        for path in paths:
            try:
                info = path.lstat()
            except FileNotFoundError:
                changed |= self._forget([path])
                continue
            except OSError as error:
                record = Record((0, 0), None, f"cannot be read: {error}")
            else:
                stamp = (info.st_mtime_ns, info.st_size)
                with self._lock:
                    known = self._records.get(path)
                if known is not None and known.stamp == stamp:
                    continue
                try:
                    record = read_handle_record(self.service.store, path, stamp)
                except Exception as error:  # no record may stop the watcher (a bug included)
                    record = Record(stamp, None, f"cannot be read: {error!r}")
            changed = True
            self._keep(path, record)
        return changed

    def _keep(self, path: Path, record: Record, *, wake: bool = True) -> None:
        with self._lock:
            old = self._records.get(path)
            if old is not None and old.handle is not None:
                self._handles.pop(old.handle.run_id, None)
            self._records[path] = record
            handle = record.handle
            if handle is None:
                self._polls.pop(path.stem, None)
                return
            self._handles[handle.run_id] = handle
            if handle.run_id not in self._ended and handle.run_id not in self._polls:
                self._polls[handle.run_id] = _Poll(due=0.0, interval=self._first)
        if wake:
            self._wake.set()

    def _publish(self, *, complete: bool) -> None:
        with self._listing_telling:
            with self._lock:
                launched = [
                    record.handle()
                    for run_id, record in self._launches.items()
                    if run_id not in self._handles
                ]
                handles = [*self._handles.values(), *launched]
                # An unreadable sweep record is named beside the unreadable handles, as by status.
                problems = [
                    *((path, record.reason) for path, record in self._records.items()),
                    *self._sweeps.unreadable.items(),
                ]
                launches_unreadable = dict(self._launch_unreadable)
                if complete:
                    self._scanned = True
            # Sorted outside the lock: 100,000 handles take a while, and the screen asks for
            # states under it (a key waited on it while they were sorted).
            handles.sort(key=lambda handle: (handle.submitted_at, handle.run_id), reverse=True)
            unreadable = {path: reason for path, reason in sorted(problems) if reason is not None}
            unreadable.update(launches_unreadable)
            stored = StoredRuns(handles=tuple(handles), unreadable=unreadable)
            published = {handle.run_id for handle in handles}
            with self._lock:
                self._stored = stored
                self._published = published
            self.on_runs_changed(stored, complete=complete)

    def _interrupt(self) -> Interrupt:
        """A new interrupt, set by :meth:`stop` (closed by the thread that waits on it)."""
        from x_tui.app.inotify import Interrupt  # (with the watch, after the first frame)

        interrupt = Interrupt()
        with self._interrupts_lock:
            self._interrupts.append(interrupt)
            if self._stop.is_set():
                interrupt.set()
        return interrupt

    # Launch records ---------------------------------------------------------------------------

    def _launch_loop(self) -> None:
        """Read the launch records each :data:`LAUNCH_SECONDS` while there are some (a
        submitter may die); while there are none, sleep until their directory changes (where
        inotify tells it, else look at it each :data:`LAUNCH_SECONDS`)."""
        self._wait_first_screenful()
        from x_tui.compute.launches import launches_dir  # (in this thread, after the first frame)

        directory = launches_dir(self.service.store.root)
        with contextlib.suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)
        notify = _watch_directory(directory)
        if notify is None:
            while not self._stop.wait(LAUNCH_SECONDS):
                self._read_launches()
            return
        interrupt = self._interrupt()
        try:
            # Watched before the first read: a record written meanwhile wakes the next wait.
            wait = LAUNCH_SECONDS
            while not self._stop.wait(wait):
                self._read_launches()
                wait = LAUNCH_SECONDS
                with self._lock:
                    idle = not self._launches and not self._launch_unreadable
                # The stamp is kept once the directory has been still a while: until then it
                # is looked at each second, as a coarse clock could hide a change.
                while idle and self._launch_stamp != _UNSET and not self._stop.is_set():
                    if notify.wait(None, interrupt=interrupt):
                        if notify.read().gone:
                            raise OSError(f"{directory} went away")
                        wait = LAUNCH_WRITE_SECONDS
                        break
        except OSError:  # the directory went away: looked at each second from now on
            while not self._stop.wait(LAUNCH_SECONDS):
                self._read_launches()
        finally:
            interrupt.close()
            notify.close()

    def _read_launches(self) -> None:
        """Resolve the launch records (adopting a dead submitter's run) and show the rest.

        A run still being submitted reads ``submitting``, one whose submitter died before it
        started ``failed``; neither is polled, and once its handle is saved it is polled as
        every other run. While there are none, their directory is only looked at: records are
        written by a rename, so a new one changes it.
        """
        from x_tui.compute.launches import SUBMITTING, launches_dir
        from x_tui.compute.operations import read_launches

        stamp = _directory_stamp(launches_dir(self.service.store.root))
        with self._lock:
            idle = not self._launches and not self._launch_unreadable
        if idle and stamp == self._launch_stamp:
            return
        # Kept once the directory has been still a while: a coarse clock could hide a change
        # made within the same tick as this read.
        settled = stamp is None or time.time() - stamp[1] / 1e9 > SETTLED_SECONDS
        try:
            stored = read_launches(self.service.store)
        except Exception:  # a launch record never takes the monitor down; read again soon
            self._launch_stamp = _UNSET
            return
        self._launch_stamp = stamp if settled else _UNSET
        records = {record.run_id: record for record in stored.records}
        changes: list[tuple[str, RunState]] = []
        with self._lock:
            if records == self._launches and stored.unreadable == self._launch_unreadable:
                return
            self._launch_unreadable = dict(stored.unreadable)
            for run_id in self._launches.keys() - records.keys():
                if run_id not in self._handles:
                    self._states.pop(run_id, None)
                    self._tellings.pop(run_id, None)
            for run_id, record in records.items():
                state = RunState.SUBMITTING if record.state == SUBMITTING else RunState.FAILED
                if run_id not in self._handles and self._states.get(run_id) is not state:
                    self._states[run_id] = state
                    changes.append((run_id, state))
            self._launches = records
        self._publish(complete=True)
        for run_id, state in changes:
            with self._telling_of(run_id):
                with self._lock:  # told only while it still holds: the poller may have answered
                    current = self._states.get(run_id) is state and run_id not in self._handles
                if current:
                    self.on_launch_state(run_id, state)

    # The poller -------------------------------------------------------------------------------

    def _poll_loop(self) -> None:
        while not self._first_read.is_set() and not self._stop.is_set():
            self._first_read.wait(0.1)
        while not self._stop.is_set():
            now = time.monotonic()
            groups: dict[tuple[str, str], list[RunHandle]] = {}
            next_due: float | None = None
            with self._lock:
                for run_id, poll in self._polls.items():
                    if poll.busy:
                        continue
                    if poll.due <= now:
                        poll.busy = True
                        handle = self._handles[run_id]
                        groups.setdefault(_group(handle), []).append(handle)
                for run_id, poll in self._polls.items():  # those due soon join their group
                    if poll.busy or poll.due > now + self._first:
                        continue
                    handle = self._handles[run_id]
                    joined = groups.get(_group(handle))
                    if joined is not None:
                        poll.busy = True
                        joined.append(handle)
                for poll in self._polls.values():
                    if not poll.busy and (next_due is None or poll.due < next_due):
                        next_due = poll.due
            newest_first = sorted(
                groups.values(),
                key=lambda handles: max(h.submitted_at.timestamp() for h in handles),
                reverse=True,
            )
            for handles in newest_first:
                try:
                    if len(handles) == 1:
                        self._pool.submit(self._poll_one, handles[0])
                    else:
                        self._pool.submit(self._poll_group, handles)
                except RuntimeError:  # the pool was shut down: the monitor is stopping
                    return
            if self._dirty and (not groups or now - self._saved_at >= 2.0):
                self._save_final_states()
            self._wake.wait(None if next_due is None else max(0.0, next_due - now))
            self._wake.clear()
        if self._dirty:
            self._save_final_states()

    def _poll_one(self, handle: RunHandle) -> None:
        try:
            self._ask(handle)
        finally:
            self._wake.set()

    def _poll_group(self, handles: list[RunHandle]) -> None:
        """Ask for the states of runs of one backend in one call; one call each if it cannot."""
        try:
            try:
                states = self.service.statuses(handles)
            except DeadlinePassed as error:
                if len(handles) > 1:
                    # One hung run must not hide the others' states: each is asked alone, with
                    # a deadline of its own, and only one that hangs is told as not answering.
                    self._ask_each(handles)
                else:
                    self._status_failed(handles[0].run_id, str(error))
                return
            except Exception as error:  # any failure is shown on the runs' rows, never raised
                for handle in handles:
                    self._status_failed(handle.run_id, str(error) or type(error).__name__)
                return
            if states is None:
                self._ask_each(handles)
                return
            for handle in handles:
                state = states.get(handle.run_id)
                if isinstance(state, RunState):
                    self._settle(handle, state)
                else:
                    reason = str(state) if state is not None else "its backend did not say"
                    self._status_failed(handle.run_id, reason or type(state).__name__)
        finally:
            self._wake.set()

    def _ask_each(self, handles: list[RunHandle]) -> None:
        """Ask for each run's state in a call of its own, the newest run first."""
        for handle in sorted(handles, key=lambda h: h.submitted_at, reverse=True):
            try:
                self._pool.submit(self._poll_one, handle)
            except RuntimeError:  # the pool was shut down: the monitor is stopping
                return

    def _ask(self, handle: RunHandle) -> None:
        try:
            state = self.service.status(handle)
        except Exception as error:  # any failure is shown on the run's row, never raised
            self._status_failed(handle.run_id, str(error) or type(error).__name__)
            return
        self._settle(handle, state)

    def _settle(self, handle: RunHandle, state: RunState) -> None:
        run_id = handle.run_id
        ended: float | None = None
        if state.is_final:
            # The files' time when the backend keeps them here; else now, if this session saw
            # the run unfinished; else unknown (a run found finished has no end time to show).
            ended = self.service.ended_at_hint(handle)
            with self._lock:
                seen_running = self._states.get(run_id) is not None
            if ended is None and seen_running:
                ended = time.time()
        with self._telling_of(run_id):
            with self._lock:
                poll = self._polls.get(run_id)
                previous = self._states.get(run_id)
                changed = previous is not state
                recovered = poll is not None and poll.last_error is not None
                self._states[run_id] = state
                if state.is_final:
                    self._ended[run_id] = ended
                    self._polls.pop(run_id, None)
                    self._tellings.pop(run_id, None)  # nothing more is told of it: kept no longer
                    self._dirty = True
                elif poll is not None:
                    poll.interval = self._first if changed else min(poll.interval * 2, self._max)
                    poll.due = time.monotonic() + poll.interval
                    poll.busy = False
                    poll.last_error = None
            if changed:
                self.on_state_changed(handle, state, previous)
            if recovered:
                self.on_status_recovered(run_id)
        self.on_polled(handle, state)

    def _telling_of(self, run_id: str) -> threading.Lock:
        """The run's telling lock (see ``_tellings``)."""
        with self._lock:
            return self._tellings.setdefault(run_id, threading.Lock())

    def _status_failed(self, run_id: str, reason: str) -> None:
        with self._telling_of(run_id):
            with self._lock:
                poll = self._polls.get(run_id)
                if poll is None:
                    return
                repeated = poll.last_error == reason and poll.told
                # Told before the run was in a posted listing, the screen had no row to show it
                # on: it is told again at the next failure.
                poll.told = run_id in self._published
                poll.last_error = reason
                poll.interval = min(max(poll.interval, self._first) * 2, self._error_max)
                poll.due = time.monotonic() + poll.interval
                poll.busy = False
            if not repeated:
                self.on_status_failed(run_id, reason)

    # Final states, kept across sessions ------------------------------------------------------

    def _load_final_states(self) -> None:
        kept = read_final_states(self._cache_path)
        if kept is None:
            # Unreadable: rebuilt from the backends' answers, written over it at the next save.
            with self._lock:
                self._dirty = True
                self._kept_at_start = frozenset()
            return
        with self._lock:
            # A run kept as ended is not polled, though it was kept (from the head) before.
            for run_id in [run_id for run_id in self._polls if run_id in kept]:
                del self._polls[run_id]
            listed_unknown = [
                run_id
                for run_id in self._handles
                if run_id in kept and self._states.get(run_id) is None
            ]
            for run_id, (state, ended) in kept.items():
                self._states.setdefault(run_id, state)
                self._ended.setdefault(run_id, ended)
            self._kept_at_start = frozenset(kept)
        for run_id in listed_unknown:  # shown (from a head) as not known yet: told now
            self.on_kept_state(run_id, kept[run_id][0])
        if (
            kept
            and not self._recent_believed
            and read_recent_final_states(self._cache_path) is None
        ):
            # A cache written without its newest runs beside it: kept for the next start.
            keep_recent_final_states(self._cache_path, kept)

    def _save_final_states(self) -> None:
        # One save at a time, and a caller that finds one under way waits for it to be written
        # (so ``stop`` returns only once every final state it knows of is on disk).
        with self._save_lock:
            with self._lock:
                if not self._dirty:
                    return
                self._dirty = False
                runs = {
                    run_id: (self._states[run_id], ended) for run_id, ended in self._ended.items()
                }
            self._saved_at = time.monotonic()
            keep_final_states(self._cache_path, runs)


_FINAL_STATES = frozenset(state for state in RunState if state.is_final)


def _directory_stamp(directory: Path) -> tuple[int, int] | None:
    """The directory's inode and modification time (ns); ``None`` when it cannot be read."""
    try:
        info = directory.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns


def _watch_directory(directory: Path) -> Inotify | None:
    """An inotify watch on ``directory``'s entries; ``None`` where there is none to have."""
    from x_tui.app.inotify import open_inotify  # (with the watch, after the first frame)

    try:
        notify = open_inotify()
    except OSError:
        return None
    if notify is None:
        return None
    try:
        notify.watch(directory)
    except OSError:
        notify.close()
        return None
    return notify


def _group(handle: RunHandle) -> tuple[str, str]:
    """Runs asked for together: those of one backend with the same settings."""
    return handle.backend, frozen_settings(handle.settings)
