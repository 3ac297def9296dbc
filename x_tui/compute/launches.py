"""Launch records: a run exists in the store before anything of it runs.

A submit writes ``<state>/x-tui/launches/<run_id>.json`` (a :class:`LaunchRecord`) before its
backend stages or starts anything, names the run's staging directory in it before that directory
is made, and adds the provider's references (a pid, an app id) as soon as they are known; only
then is the run's handle saved in the run store, and the launch record removed. A submitter
killed at any point therefore leaves either nothing, or a launch record naming everything it
made, which the next reader resolves (see :func:`x_tui.compute.operations.read_launches`).

The launch record is x-tui's own, beside substrax's store: a run handle never carries a key
substrax does not know. Until it is resolved, a launch record reads as a run in state
``submitting`` (its submitter still lives) or ``failed`` (with the reason).

Fault points: every step of the submit path calls :func:`fault_point`. With
``X_TUI_KILL_AT_STEP=N`` in the environment, the process kills itself with SIGKILL at the N-th
point it reaches (or at the point of that label); with ``X_TUI_STEP_TRACE=FILE``, each point
reached is appended to ``FILE`` as ``<n> <label>``. Fault-injection tests use them to kill a
submitter at every step, deterministically.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from x_tui.compute.store import RUN_ID_PATTERN, RunHandle, RunStore, check_run_id
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.record_files import RECORD_BYTES, read_record_dir, read_record_file
from x_tui.compute.worker.records import (
    JsonValue,
    RecordError,
    dumps_pretty,
    read_record,
    write_atomic,
)

LAUNCH_VERSION: Final = 1
SUBMITTING: Final = "submitting"
FAILED: Final = "failed"
KILL_AT_ENV: Final = "X_TUI_KILL_AT_STEP"
TRACE_ENV: Final = "X_TUI_STEP_TRACE"
CANCEL_SUFFIX: Final = ".cancel"

_steps_lock = threading.Lock()
_steps_reached = 0


class StoreWriteError(UserError, OSError):
    """A record of the run store that cannot be written (read-only, full disk...): nothing ran."""


def fault_point(label: str) -> None:
    """A step of the submit path, where a fault-injection test may kill this process.

    Args:
        label: What has just been done (``"launch record written"``).
    """
    wanted = os.environ.get(KILL_AT_ENV)
    trace = os.environ.get(TRACE_ENV)
    if not wanted and not trace:
        return
    global _steps_reached
    with _steps_lock:
        _steps_reached += 1
        number = _steps_reached
        if trace:
            with open(trace, "a", encoding="utf-8") as log:
                log.write(f"{number} {label}\n")
        if wanted in (str(number), label):
            os.kill(os.getpid(), signal.SIGKILL)


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or ``None`` if it does not exist.

    Without ``/proc``, a process that exists has the start time ``""``.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return ""
        return ""
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode("ascii")


@dataclass(frozen=True, kw_only=True, slots=True)
class LaunchRecord:
    """A run being submitted, recorded before anything of it runs.

    Attributes:
        schema_version: The layout of this record.
        run_id: The run's id, as its handle will have it.
        backend: The backend it goes to.
        job: The job's name.
        project: The project root.
        submitted_at: When the submit began, in UTC.
        settings: The backend's settings, as the handle will freeze them.
        submitter_pid: The submitting process.
        submitter_start: Its start time (see :func:`process_start`), to tell it from a later
            process with the same pid.
        staging: The run's directory on this machine, named before it is made; ``""`` if none.
        details: The provider's references to the run, as soon as they are known.
        state: ``submitting``, or ``failed`` once resolved as never started.
        reason: Why it failed.
    """

    schema_version: int = LAUNCH_VERSION
    run_id: str
    backend: str
    job: str
    project: str
    submitted_at: dt.datetime
    settings: Mapping[str, JsonValue] = field(default_factory=dict)
    submitter_pid: int
    submitter_start: str
    staging: str = ""
    details: Mapping[str, str] = field(default_factory=dict)
    state: str = SUBMITTING
    reason: str = ""

    def __post_init__(self) -> None:
        """Validate the version, the run id and the state.

        Raises:
            ValueError: If one of them is not of this release.
        """
        if self.schema_version != LAUNCH_VERSION:
            raise ValueError(f"launch record version {self.schema_version!r} is not 1")
        if not RUN_ID_PATTERN.fullmatch(self.run_id):
            raise ValueError(f"run id {self.run_id!r} is not of the form <job>-<time>-<hex>")
        if self.state not in (SUBMITTING, FAILED):
            raise ValueError(f"launch state {self.state!r} is not 'submitting' or 'failed'")

    def handle(
        self,
        details: Mapping[str, str] | None = None,
        *,
        settings: Mapping[str, JsonValue] | None = None,
    ) -> RunHandle:
        """The run's handle.

        Args:
            details: Its details; the recorded ones when ``None``.
            settings: The backend's settings as its handles freeze them; the recorded ones
                (the configuration's table) when ``None``.
        """
        return RunHandle(
            run_id=self.run_id,
            backend=self.backend,
            job=self.job,
            project=self.project,
            submitted_at=self.submitted_at,
            settings=dict(self.settings if settings is None else settings),
            details=dict(self.details if details is None else details),
        )

    def submitter_alive(self) -> bool:
        """Whether the submitting process still runs (same pid, same start time)."""
        start = process_start(self.submitter_pid)
        return start is not None and (start == self.submitter_start or not start)


def _read_launch(data: object) -> LaunchRecord:
    if not isinstance(data, Mapping):
        raise RecordError(f"a launch record is a JSON object, not {type(data).__name__}")
    return read_record(LaunchRecord, data)


def launches_dir(runs: Path) -> Path:
    """Where the launch records of the run store at ``runs`` are kept.

    Returns:
        ``<state>/x-tui/launches`` for ``<state>/compute/runs``; ``<runs>-launches`` beside a
        store kept elsewhere.
    """
    if runs.parent.name == "compute":
        return runs.parent.parent / "x-tui" / "launches"
    return runs.with_name(f"{runs.name}-launches")


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredLaunches:
    """The launch records kept, and why the rest cannot be read.

    Attributes:
        records: The readable records, in run id order.
        unreadable: Each file that cannot be read, with the reason.
    """

    records: tuple[LaunchRecord, ...]
    unreadable: Mapping[Path, str]


class LaunchBook:
    """The launch records of one run store."""

    def __init__(self, store: RunStore) -> None:
        """Keep launch records beside ``store`` (see :func:`launches_dir`)."""
        self.store = store
        self.root = launches_dir(store.root)

    def path_of(self, run_id: str) -> Path:
        """The file of ``run_id``'s launch record."""
        return self.root / f"{check_run_id(run_id)}.json"

    def write(self, record: LaunchRecord) -> None:
        """Write a launch record atomically (each step a fault point).

        Raises:
            StoreWriteError: If it cannot be written; the message names the file and why.
        """
        path = self.path_of(record.run_id)
        try:
            write_atomic(path, dumps_pretty(record), step=fault_point)
        except OSError as error:
            raise StoreWriteError(_refusal(path, error)) from None

    def load(self, run_id: str) -> LaunchRecord | None:
        """The launch record of ``run_id``; ``None`` when there is none or it cannot be read."""
        path = self.path_of(run_id)
        try:
            record = read_record_file(path, _read_launch, max_bytes=RECORD_BYTES)
        except (OSError, UserError):
            return None
        return record if record.run_id == run_id else None

    def read_all(self) -> StoredLaunches:
        """Every launch record, and each file that cannot be read, with the reason."""
        records, unreadable = read_record_dir(
            self.root,
            _read_launch,
            id_of=lambda record: record.run_id,
            is_id=lambda name: RUN_ID_PATTERN.fullmatch(name) is not None,
            kind="launch",
            max_bytes=RECORD_BYTES,
        )
        return StoredLaunches(records=tuple(records), unreadable=unreadable)

    def remove(self, run_id: str) -> None:
        """Forget a launch record (and a cancel asked for it)."""
        self.path_of(run_id).unlink(missing_ok=True)
        fault_point("launch record removed")
        self.root.joinpath(f"{run_id}{CANCEL_SUFFIX}").unlink(missing_ok=True)

    def ask_cancel(self, run_id: str) -> None:
        """Ask the submitter of ``run_id`` to stop the run as soon as it is submitted.

        Raises:
            StoreWriteError: If the request cannot be written.
        """
        path = self.root / f"{check_run_id(run_id)}{CANCEL_SUFFIX}"
        try:
            path.touch()
        except OSError as error:
            raise StoreWriteError(_refusal(path, error)) from None

    def cancel_asked(self, run_id: str) -> bool:
        """Whether a cancel of ``run_id`` was asked while it was submitted."""
        return self.root.joinpath(f"{check_run_id(run_id)}{CANCEL_SUFFIX}").exists()

    def mark_failed(self, record: LaunchRecord, reason: str) -> LaunchRecord:
        """Record that the run never started, and why (written when the store allows)."""
        failed = replace(record, state=FAILED, reason=reason)
        with contextlib.suppress(OSError):  # else read again next time, resolved the same way
            write_atomic(self.path_of(record.run_id), dumps_pretty(failed))
        return failed


def probe_writable(directory: Path) -> None:
    """Make sure a record can be written into ``directory`` now, and leave nothing there.

    A directory that does not exist yet is not made: the probe is written in its nearest
    existing ancestor (the file system the record will be written to), and removed.

    Raises:
        StoreWriteError: If it cannot (read-only, full, not a directory...).
    """
    where = directory
    while not where.exists() and where.parent != where:
        where = where.parent
    try:
        descriptor, name = tempfile.mkstemp(dir=where, prefix=".x-tui-probe-", suffix=".partial")
    except OSError as error:
        raise StoreWriteError(_refusal(directory, error)) from None
    try:
        fault_point("store probe made")
        with os.fdopen(descriptor, "wb") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
        fault_point("store probe written")
    except OSError as error:
        raise StoreWriteError(_refusal(directory, error)) from None
    finally:
        Path(name).unlink(missing_ok=True)
    fault_point("store probe removed")


def _refusal(path: Path, error: OSError) -> str:
    why = error.strerror or str(error)
    return f"cannot write the run's record in {path}: {why}; nothing was started"


@dataclass(kw_only=True, slots=True)
class RunLaunch:
    """A run being launched: what the shared submit path hands a backend's ``submit``.

    A backend that declares ``Capability.LAUNCH`` takes ``launch=``, names the run by
    :attr:`run_id`, calls :meth:`staging` before it makes the run's directory and :meth:`started`
    as soon as the provider has references to the run, and :meth:`step` between its steps.
    """

    book: LaunchBook
    record: LaunchRecord

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.record.run_id

    def step(self, label: str) -> None:
        """A fault point (see :func:`fault_point`)."""
        fault_point(label)

    def staging(self, run_dir: Path) -> None:
        """Record, before it is made, that ``run_dir`` is this run's directory.

        Raises:
            StoreWriteError: If the record cannot be written (nothing is made then).
        """
        self.record = replace(self.record, staging=str(run_dir))
        self.book.write(self.record)
        fault_point("staging directory recorded")

    def started(self, details: Mapping[str, str]) -> None:
        """Record the provider's references to the run, now that it runs.

        Raises:
            StoreWriteError: If the record cannot be written.
        """
        self.record = replace(self.record, details=dict(details))
        self.book.write(self.record)
        fault_point("provider references recorded")
