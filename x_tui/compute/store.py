"""Run handles and the store that keeps them, in substrax's layout so both tools share one store.

``<state>/compute/runs/<run_id>.json`` holds one :class:`RunHandle` (version 2, with the frozen
backend ``settings``). Writes are atomic (a uniquely named partial file, then a rename), so any
number of processes can save and read at once without a torn or lost record. Run ids are
validated before they touch a path, so a record can never lead outside its directory.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from x_tui.compute.errors import BadRecordError, RunNotFoundError
from x_tui.compute.record_files import (
    HANDLE_BYTES,
    misfiled_reason,
    read_record_dir,
    read_record_file,
)
from x_tui.compute.records import JsonValue, RecordError, dumps_pretty, read_record, write_atomic
from x_tui.compute.spec import check_name

HANDLE_VERSION = 2
"""The handle layout this release writes and reads."""

STATE_DIR_ENV = "SUBSTRAX_STATE_DIR"
"""Overrides the directory runs are kept in (shared with substrax)."""

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")
"""A run id: ``<job>-<UTC %Y%m%dT%H%M%SZ>-<6 hex>``."""


def default_state_dir() -> Path:
    """The directory run handles and local runs are kept in.

    Returns:
        ``$SUBSTRAX_STATE_DIR`` when set, else ``$XDG_STATE_HOME/substrax``, else
        ``~/.local/state/substrax``.
    """
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg) / "substrax"
    return Path.home() / ".local" / "state" / "substrax"


def backend_state_dir(state_dir: str | None, backend: str) -> Path:
    """The directory a backend keeps its runs' local files in: ``<state_dir>/compute/<backend>``."""
    root = Path(state_dir) if state_dir else default_state_dir()
    return root / "compute" / backend


def new_run_id(job: str, *, now: dt.datetime | None = None) -> str:
    """Name a new run of ``job`` by its UTC start and a random suffix.

    Returns:
        An id such as ``examples-20260919T120000Z-3f9a1c``.
    """
    check_name("job", job)
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return f"{job}-{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def check_run_id(run_id: str) -> str:
    """Refuse a run id that is not of the run id form (and so could not be a safe file name).

    Returns:
        ``run_id``.

    Raises:
        RunNotFoundError: If it is not ``<job>-<YYYYMMDDTHHMMSSZ>-<6 hex>``.
    """
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
        raise RunNotFoundError(
            f"{run_id!r} is not a run id (such as 'examples-20260919T120000Z-3f9a1c')"
        )
    return run_id


def run_id_time(run_id: str) -> dt.datetime | None:
    """The UTC time a run id was made at, or ``None`` if it is not of the run id form."""
    match = re.search(r"-([0-9]{8}T[0-9]{6})Z-[0-9a-f]{6}$", run_id)
    if match is None:
        return None
    try:
        return dt.datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class RunHandle:
    """Everything needed to find a submitted run again.

    Attributes:
        schema_version: The layout of this record.
        run_id: The run's name, unique across backends; also its outputs' directory name.
        backend: The name of the backend that ran it.
        job: The job's name.
        project: The project root it was submitted from.
        submitted_at: When it was submitted, in UTC.
        settings: The backend's settings it was submitted with; every later operation rebuilds
            the backend from them.
        details: The provider's own references to the run, such as a pid or an app id.
    """

    schema_version: int = HANDLE_VERSION
    run_id: str
    backend: str
    job: str
    project: str
    submitted_at: dt.datetime
    settings: Mapping[str, JsonValue] = field(default_factory=dict)
    details: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Validate the version and the run id.

        Raises:
            ValueError: If the version is not this release's or the run id is malformed.
        """
        if self.schema_version != HANDLE_VERSION:
            raise ValueError(_version_message(self.schema_version))
        if not RUN_ID_PATTERN.fullmatch(self.run_id):
            raise ValueError(f"run id {self.run_id!r} is not of the form <job>-<time>-<hex>")


def _version_message(version: object) -> str:
    return f"run handle version {version!r} is not the version this x-tui reads ({HANDLE_VERSION})"


def read_handle(data: object) -> RunHandle:
    """Read a handle from its parsed JSON object.

    Raises:
        RecordError: If the version is not 2 (naming both) or a field is wrong.
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a run handle is a JSON object, not {type(data).__name__}")
    version = data.get("schema_version")
    if version != HANDLE_VERSION or isinstance(version, bool):
        raise RecordError(_version_message(version))
    return read_record(RunHandle, data)


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredRuns:
    """What a :class:`RunStore` holds: the handles it can read, and why it cannot read the rest.

    Attributes:
        handles: The readable handles, newest first.
        unreadable: Each record that cannot be read, by path, with the reason.
    """

    handles: tuple[RunHandle, ...]
    unreadable: Mapping[Path, str]


class RunStore:
    """The handles of submitted runs, one JSON file per run."""

    def __init__(self, root: Path | None = None) -> None:
        """Keep handles under ``root``.

        Args:
            root: The directory; ``default_state_dir() / "compute" / "runs"`` when ``None``.
        """
        self.root = root if root is not None else default_state_dir() / "compute" / "runs"

    def path_of(self, run_id: str) -> Path:
        """The file that holds the handle of ``run_id``.

        Raises:
            RunNotFoundError: If ``run_id`` is not a run id.
        """
        return self.root / f"{check_run_id(run_id)}.json"

    def save(self, handle: RunHandle) -> Path:
        """Write a handle atomically, replacing an earlier one of the same run.

        Returns:
            The handle's file.
        """
        path = self.path_of(handle.run_id)
        write_atomic(path, dumps_pretty(handle))
        return path

    def load(self, run_id: str) -> RunHandle:
        """Read the handle of a run.

        Raises:
            RunNotFoundError: If no handle of that run is kept (the message names the directory),
                or ``run_id`` is not a run id.
            BadRecordError: If the record cannot be read; the message names the file and why.
        """
        path = self.path_of(run_id)
        try:
            handle = read_record_file(path, read_handle, max_bytes=HANDLE_BYTES)
        except FileNotFoundError:
            raise RunNotFoundError(f"no run '{run_id}' in {self.root}") from None
        if handle.run_id != run_id:
            raise BadRecordError(f"{path}: {misfiled_reason('run', handle.run_id, path.stem)}")
        return handle

    def read_all(self) -> StoredRuns:
        """Every kept handle, newest first, and each record that cannot be read, with the reason."""
        handles, unreadable = read_record_dir(
            self.root,
            read_handle,
            id_of=lambda handle: handle.run_id,
            is_id=lambda name: RUN_ID_PATTERN.fullmatch(name) is not None,
            kind="run",
            max_bytes=HANDLE_BYTES,
        )
        handles.sort(key=lambda handle: (handle.submitted_at, handle.run_id), reverse=True)
        return StoredRuns(handles=tuple(handles), unreadable=unreadable)

    def delete(self, run_id: str) -> None:
        """Forget a run's handle (its files elsewhere are left)."""
        self.path_of(run_id).unlink(missing_ok=True)
