"""Run handles and the store that keeps them, in substrax's layout so both tools share one store.

``<state>/compute/runs/<run_id>.json`` holds one :class:`RunHandle`. Version 2 (the default)
carries the frozen backend ``settings``. Version 1, the handle substrax 0.1.x writes and reads,
has no ``settings``: a version 1 handle x-tui wrote keeps its frozen settings in a side record of
x-tui's own (``<state>/x-tui/handles/<run_id>.json``), and one without a side record (written by
substrax 0.1.x) takes them from the project's current configuration, as substrax 0.1.x does. A
handle of any other version is refused, naming the version. Writes are atomic (a uniquely named
partial file, then a rename), so any number of processes can save and read at once without a
torn or lost record. Run ids are validated before they touch a path, so a record can never lead
outside its directory.
"""

from __future__ import annotations

import datetime as dt
import enum
import itertools
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from x_tui.compute.store_index import (
    HEAD_NAME,
    INDEX_NAME,
    HandleFields,
    IndexedFiles,
    indexed_head,
    indexed_runs,
)
from x_tui.compute.worker.errors import BadRecordError, RunNotFoundError
from x_tui.compute.worker.record_files import (
    HANDLE_BYTES,
    MAX_REASON,
    misfiled_reason,
    read_json_file,
    read_record_file,
)
from x_tui.compute.worker.records import (
    JsonValue,
    RecordError,
    dump_record,
    format_datetime,
    parse_datetime,
    read_record,
    write_atomic,
)

HANDLE_VERSION = 2
"""The handle layout this release writes by default: with the frozen ``settings``."""

SUBSTRAX_01_HANDLE_VERSION = 1
"""The handle layout substrax 0.1.x writes and reads: no ``settings``."""

READABLE_HANDLE_VERSIONS = (SUBSTRAX_01_HANDLE_VERSION, HANDLE_VERSION)
"""Every handle version this release reads."""

SIDE_RECORD_LIMIT = 1 << 20
"""The most bytes of a settings side record read."""

PYPROJECT_LIMIT = 4 << 20
"""The largest pyproject.toml a version 1 handle's settings are read from (the handle names it)."""

STATE_DIR_ENV = "SUBSTRAX_STATE_DIR"
"""Overrides the directory runs are kept in (shared with substrax)."""

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")
"""A run id: ``<job>-<UTC %Y%m%dT%H%M%SZ>-<6 hex>``."""


_RUN_FILE = re.compile(RUN_ID_PATTERN.pattern + r"\.json")
"""The name of a run's handle file."""


def default_state_dir() -> Path:
    """The directory run handles and local runs are kept in.

    Returns:
        ``$SUBSTRAX_STATE_DIR`` when set, else ``$XDG_STATE_HOME/substrax``, else
        ``~/.local/state/substrax``; always absolute (a relative variable is taken from the
        current directory now), so no record stores a path that means another place elsewhere.
    """
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(os.path.abspath(explicit))
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(os.path.abspath(xdg)) / "substrax"
    return Path.home() / ".local" / "state" / "substrax"


def backend_state_dir(state_dir: str | None, backend: str) -> Path:
    """The directory a backend keeps its runs' local files in: ``<state_dir>/compute/<backend>``.

    Always absolute: a relative ``state_dir`` is taken from the current directory.
    """
    root = Path(os.path.abspath(state_dir)) if state_dir else default_state_dir()
    return root / "compute" / backend


def new_run_id(job: str, *, now: dt.datetime | None = None) -> str:
    """Name a new run of ``job`` by its UTC start and a random suffix.

    Returns:
        An id such as ``examples-20260919T120000Z-3f9a1c``.
    """
    import secrets  # (with the job spec's rules: loaded with the first run named, not at start-up)

    from x_tui.compute.worker.spec import check_name

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
        schema_version: The layout of this record: 2, or 1 as substrax 0.1.x writes it (then
            ``settings`` is not written into the handle's file; see :class:`SettingsOrigin`).
        run_id: The run's name, unique across backends; also its outputs' directory name.
        backend: The name of the backend that ran it.
        job: The job's name.
        project: The project root it was submitted from.
        submitted_at: When it was submitted, in UTC.
        settings: The backend's settings it was submitted with; every later operation rebuilds
            the backend from them. For a version 1 handle, the side record's frozen settings,
            or the project's current ones.
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
            ValueError: If the version is not one this release reads or the run id is malformed.
        """
        if self.schema_version not in READABLE_HANDLE_VERSIONS or isinstance(
            self.schema_version, bool
        ):
            raise ValueError(_version_message(self.schema_version))
        if not RUN_ID_PATTERN.fullmatch(self.run_id):
            raise ValueError(f"run id {self.run_id!r} is not of the form <job>-<time>-<hex>")


def _version_message(version: object) -> str:
    readable = " or ".join(map(str, READABLE_HANDLE_VERSIONS))
    return f"run handle version {version!r} is not a version this x-tui reads ({readable})"


def read_handle(data: object) -> RunHandle:
    """Read a handle from its parsed JSON object, as it is in the file.

    A version 1 handle is read with empty ``settings`` (its file holds none); :class:`RunStore`
    fills them in from the side record or the project.

    Raises:
        RecordError: If the version is not 1 or 2 (naming it), a version 1 handle holds
            ``settings``, or a field is wrong.
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a run handle is a JSON object, not {type(data).__name__}")
    version = data.get("schema_version")
    if version not in READABLE_HANDLE_VERSIONS or isinstance(version, bool):
        raise RecordError(_version_message(version))
    if version == SUBSTRAX_01_HANDLE_VERSION and "settings" in data:
        raise RecordError("unknown key 'settings': a version 1 run handle holds no settings")
    return read_record(RunHandle, data)


def handle_fields(data: object) -> HandleFields:
    """A handle's fields, as the store's index keeps them, from its parsed JSON object.

    A handle of the usual shape (every value of its type, no unknown key) is taken at once;
    any other goes through :func:`read_handle`, which accepts and refuses exactly as here and
    names what is wrong.

    Raises:
        RecordError: As :func:`read_handle`.
    """
    fields = _usual_handle_fields(data)
    if fields is not None:
        return fields
    handle = read_handle(data)
    return HandleFields(
        schema_version=handle.schema_version,
        run_id=handle.run_id,
        backend=handle.backend,
        job=handle.job,
        project=handle.project,
        submitted_at=format_datetime(handle.submitted_at),
        settings=dict(handle.settings),
        details=dict(handle.details),
    )


_HANDLE_KEYS = frozenset({"schema_version", "run_id", "backend", "job", "project", "submitted_at"})
"""The keys every handle holds."""

_KEYS_OF_VERSION = {
    SUBSTRAX_01_HANDLE_VERSION: _HANDLE_KEYS | {"details"},
    HANDLE_VERSION: _HANDLE_KEYS | {"settings", "details"},
}
"""The keys a handle of each version may hold."""


def _usual_handle_fields(data: object) -> HandleFields | None:
    """A handle's fields when it is of the usual shape and sound; else ``None``."""
    if type(data) is not dict:
        return None
    version = data.get("schema_version")
    if type(version) is not int:
        return None
    allowed = _KEYS_OF_VERSION.get(version)
    if allowed is None or not _HANDLE_KEYS <= data.keys() <= allowed:
        return None
    texts = (data["run_id"], data["backend"], data["job"], data["project"], data["submitted_at"])
    settings, details = data.get("settings", {}), data.get("details", {})
    if (
        set(map(type, texts)) != {str}
        or type(settings) is not dict
        or type(details) is not dict
        or not set(map(type, details.values())) <= {str}
        or not RUN_ID_PATTERN.fullmatch(texts[0])
    ):
        return None
    try:
        submitted_at = format_datetime(parse_datetime(texts[4]))
    except ValueError:
        return None
    run_id, backend, job, project = texts[:4]
    return HandleFields(version, run_id, backend, job, project, submitted_at, settings, details)


def handle_json(handle: RunHandle) -> str:
    """The text of a handle's file, as substrax writes it: indented by 2, ending in a newline.

    A version 1 handle is written without ``settings``, as substrax 0.1.x reads it.
    """
    data = dump_record(handle)
    if handle.schema_version == SUBSTRAX_01_HANDLE_VERSION:
        del data["settings"]
    return json.dumps(data, indent=2) + "\n"


class SettingsOrigin(enum.Enum):
    """Where a stored run's backend settings come from."""

    HANDLE = "handle"
    """Frozen into the handle (version 2)."""
    SIDE_RECORD = "side record"
    """Frozen into x-tui's side record of a version 1 handle x-tui wrote."""
    PROJECT = "project"
    """The project's current configuration: a version 1 handle substrax 0.1.x wrote."""

    def describe(self) -> str:
        """One phrase for the user, such as ``settings from the project, as substrax 0.1.x``."""
        return {
            SettingsOrigin.HANDLE: "settings frozen in the handle",
            SettingsOrigin.SIDE_RECORD: "settings frozen in x-tui's side record",
            SettingsOrigin.PROJECT: "settings from the project, as substrax 0.1.x",
        }[self]


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredRuns:
    """What a :class:`RunStore` holds: the handles it can read, and why it cannot read the rest.

    Attributes:
        handles: The readable handles, newest first.
        unreadable: Each record that cannot be read, by path, with the reason.
    """

    handles: tuple[RunHandle, ...]
    unreadable: Mapping[Path, str]


class IndexedRun(NamedTuple):
    """One handle file of the store as the index gives it.

    Attributes:
        stamp: The file's modified time (ns) and size.
        handle: The handle, when it can be read.
        reason: Why it cannot be read, when it cannot.
    """

    stamp: tuple[int, int]
    handle: RunHandle | None
    reason: str | None


class ListedRun(NamedTuple):
    """A readable run of a :class:`RunListing`: what a list of runs shows, without its handle.

    Attributes:
        run_id: The run.
        backend: Its backend's name.
        job: Its job's name.
        project: The project root it was submitted from.
        submitted_at: When it was submitted.
        schema_version: Its handle's version.
        origin: Where its backend settings come from.
        row: Where the listing keeps the rest of its handle.
    """

    run_id: str
    backend: str
    job: str
    project: str
    submitted_at: dt.datetime
    schema_version: int
    origin: SettingsOrigin
    row: int


@dataclass(frozen=True, slots=True)
class RunListing:
    """What a :class:`RunStore` holds, as its index gives it: a run's handle made when asked for.

    Listing a store of 100,000 runs makes one small tuple a run (:class:`ListedRun`); the handle
    of a run, with its settings and details, is made by :meth:`handle`.

    Attributes:
        runs: The readable runs, newest first (by submitted time, then run id).
        files: The store's handle files as its index gives them.
        settings: Each file's backend settings (a version 1 handle's filled in), by row.
        problems: Why each file that is not listed in ``runs`` cannot be read, by row.
        root: The store's directory of handles.
        total: How many handle files the store holds (more than ``files`` for the index's
            head, :meth:`RunStore.head`).
    """

    runs: tuple[ListedRun, ...]
    files: IndexedFiles
    settings: list[Mapping[str, JsonValue]]
    problems: dict[int, str]
    root: Path
    total: int

    @property
    def complete(self) -> bool:
        """Whether this is every handle file of the store (not only its newest)."""
        return self.total == len(self.files)

    @property
    def unreadable(self) -> dict[Path, str]:
        """Each record that cannot be read, by path (sorted), with the reason."""
        names = self.files.names
        return dict(sorted((self.root / names[row], why) for row, why in self.problems.items()))

    def handle(self, run: ListedRun) -> RunHandle:
        """The handle of a listed run."""
        return RunHandle(
            schema_version=run.schema_version,
            run_id=run.run_id,
            backend=run.backend,
            job=run.job,
            project=run.project,
            submitted_at=run.submitted_at,
            settings=dict(self.settings[run.row]),
            details=self.files.details_of(run.row),
        )


class RunStore:
    """The handles of submitted runs, one JSON file per run."""

    def __init__(self, root: Path | None = None) -> None:
        """Keep handles under ``root``.

        Args:
            root: The directory; ``default_state_dir() / "compute" / "runs"`` when ``None``.
        """
        self.root = root if root is not None else default_state_dir() / "compute" / "runs"
        self.side_records = self.root.parent.parent / "x-tui" / "handles"
        """Where the frozen settings of version 1 handles x-tui wrote are kept."""
        self.index_path = self.root.parent.parent / "x-tui" / INDEX_NAME
        """x-tui's index of the store (:mod:`x_tui.compute.store_index`)."""
        self.head_path = self.index_path.with_name(HEAD_NAME)
        """The index's head: its newest rows, written with it."""
        self._origins: dict[str, tuple[RunHandle, SettingsOrigin]] = {}
        """Where the settings of each version 1 handle last listed came from (by the very
        handle object listed)."""

    def side_record_of(self, run_id: str) -> Path:
        """The side record that holds the frozen settings of a version 1 handle x-tui wrote.

        Raises:
            RunNotFoundError: If ``run_id`` is not a run id.
        """
        return self.side_records / f"{check_run_id(run_id)}.json"

    def settings_origin(self, handle: RunHandle) -> SettingsOrigin:
        """Where the settings of ``handle`` (as this store read it) come from."""
        if handle.schema_version == HANDLE_VERSION:
            return SettingsOrigin.HANDLE
        known = self._origins.get(handle.run_id)
        if known is not None and known[0] is handle:
            return known[1]
        if self.side_record_of(handle.run_id).is_file():
            return SettingsOrigin.SIDE_RECORD
        return SettingsOrigin.PROJECT

    def path_of(self, run_id: str) -> Path:
        """The file that holds the handle of ``run_id``.

        Raises:
            RunNotFoundError: If ``run_id`` is not a run id.
        """
        return self.root / f"{check_run_id(run_id)}.json"

    def save(self, handle: RunHandle, *, step: Callable[[str], None] | None = None) -> Path:
        """Write a handle atomically, replacing an earlier one of the same run.

        A version 1 handle's settings go to its side record first, so a crash between the two
        writes leaves at most a side record without a handle, never a handle whose frozen
        settings are lost.

        Args:
            handle: The handle.
            step: Called after each step of the write (see ``records.write_atomic``).

        Returns:
            The handle's file.
        """
        path = self.path_of(handle.run_id)
        if handle.schema_version == SUBSTRAX_01_HANDLE_VERSION:
            side = {"run_id": handle.run_id, "settings": dict(handle.settings)}
            write_atomic(self.side_record_of(handle.run_id), json.dumps(side, indent=2) + "\n")
        write_atomic(path, handle_json(handle), step=step)
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
            handle = read_record_file(path, self._read, max_bytes=HANDLE_BYTES)
        except FileNotFoundError:
            raise RunNotFoundError(f"no run '{run_id}' in {self.root}") from None
        if handle.run_id != run_id:
            raise BadRecordError(f"{path}: {misfiled_reason('run', handle.run_id, path.stem)}")
        return handle

    def read_all(self) -> StoredRuns:
        """Every kept handle, newest first, and each record that cannot be read, with the reason.

        Listed through the store's index (:mod:`x_tui.compute.store_index`): only the handle
        files that changed since it was last brought up to date are read.
        """
        listing = self.listing()
        handles = tuple(map(listing.handle, listing.runs))
        self._keep_origins(listing, handles)
        return StoredRuns(handles=handles, unreadable=listing.unreadable)

    def indexed(self) -> dict[str, IndexedRun]:
        """Every handle file by name, with its stamp and its handle or why it cannot be read.

        A version 1 handle's settings are filled in now (from its side record or its project),
        so a project changed since the index was made is read as it is now.
        """
        listing = self.listing()
        files = listing.files
        handles = tuple(map(listing.handle, listing.runs))
        self._keep_origins(listing, handles)
        found = {
            files.names[run.row]: IndexedRun(files.stamp(run.row)[:2], handle, None)
            for run, handle in zip(listing.runs, handles, strict=True)
        }
        for row, reason in listing.problems.items():
            found[files.names[row]] = IndexedRun(files.stamp(row)[:2], None, reason)
        return found

    def listing(self) -> RunListing:
        """The store's runs, newest first, as its index gives them, without a handle object each.

        A version 1 handle's settings are had now (from its side record or its project, each
        project read once), so a handle whose settings cannot be had is unreadable, as in
        :meth:`read_all`.
        """
        files = indexed_runs(self.root, self.index_path, self._read_fields, _RUN_FILE.fullmatch)
        return self._listing_of(files, len(files))

    def head(self, project: str | None = None) -> RunListing | None:
        """The store's newest runs, from its index's head, when that is believed.

        Reads a few kilobytes (no directory listing, no handle file), so the first screenful of
        a store of 100,000 runs shows at once; the head is believed only while the runs
        directory is as it was when the head was made (:func:`indexed_head`).

        Args:
            project: A project's root: its newest runs too, from its own head, when the
                store's newest runs are not all of them.

        Returns:
            The newest runs (``total`` says how many files the store holds), or ``None`` when
            there is no head to believe (:meth:`listing` then lists the store).
        """
        head = indexed_head(self.root, self.head_path, _RUN_FILE.fullmatch, project=project)
        if head is None:
            return None
        return self._listing_of(head.files, head.total)

    def _listing_of(self, files: IndexedFiles, total: int) -> RunListing:
        """The listing of the files ``files`` of the ``total`` the store holds."""
        count = len(files)
        problems: dict[int, str] = {}
        if files.reasons.count(None) != count:
            problems = {row: why for row, why in enumerate(files.reasons) if why is not None}
        origins = [SettingsOrigin.HANDLE] * count
        settings: list[Mapping[str, JsonValue]] = list(files.settings)
        if SUBSTRAX_01_HANDLE_VERSION in files.versions:
            self._fill_version_1(files, origins, settings, problems)
        readable: Sequence[int] = range(count)
        columns: list[Sequence[Any]] = [
            files.backends,
            files.jobs,
            files.projects,
            files.submitted_at,
            files.versions,
            origins,
        ]
        if problems:
            readable = [row for row in range(count) if row not in problems]
            columns = [list(map(column.__getitem__, readable)) for column in columns]
        run_ids = [files.names[row][:-5] for row in readable]
        runs = tuple(map(ListedRun, run_ids, *columns, readable))
        return RunListing(
            runs=runs,
            files=files,
            settings=settings,
            problems=problems,
            root=self.root,
            total=total,
        )

    def _fill_version_1(
        self,
        files: IndexedFiles,
        origins: list[SettingsOrigin],
        settings: list[Mapping[str, JsonValue]],
        problems: dict[int, str],
    ) -> None:
        """Fill in where each version 1 handle's settings come from, and the settings, by row.

        A handle whose settings cannot be had gets its reason in ``problems``. Each project is
        read once, and the side records' directory listed once.
        """
        side_names = _names_in(self.side_records)
        projects: dict[tuple[str, str], dict[str, JsonValue] | str] = {}
        rows = [row for row, version in enumerate(files.versions) if version == 1]
        names, backends = files.names, files.backends
        if side_names is not None and side_names.isdisjoint(map(names.__getitem__, rows)):
            # substrax's runs only (no side record): each project's settings read once.
            projects_of = map(files.projects.__getitem__, rows)
            keys = list(zip(projects_of, map(backends.__getitem__, rows), strict=True))
            for project, backend in set(keys):
                try:
                    projects[(project, backend)] = project_settings(Path(project), backend)
                except RecordError as error:
                    projects[(project, backend)] = str(error)
            if not any(isinstance(known, str) for known in projects.values()):
                frozen = map(projects.__getitem__, keys)
                if len(rows) == len(settings):  # every run is one of substrax's: lists at once
                    settings[:] = frozen  # type: ignore[assignment]
                    origins[:] = itertools.repeat(SettingsOrigin.PROJECT, len(rows))
                    return
                for row, value in zip(rows, frozen, strict=True):
                    settings[row] = value  # type: ignore[assignment]
                    origins[row] = SettingsOrigin.PROJECT
                return
        for row, project in zip(rows, map(files.projects.__getitem__, rows), strict=True):
            name, backend = names[row], backends[row]
            known = projects.get((project, backend))
            if known is None or side_names is None or name in side_names:
                try:
                    origins[row], settings[row] = self._version_1_settings(
                        name, project, backend, side_names, projects
                    )
                except RecordError as error:
                    problems[row] = _short(str(error))
            elif isinstance(known, str):
                problems[row] = _short(known)
            else:
                # The common case, made short: substrax's run of a project already read.
                origins[row], settings[row] = SettingsOrigin.PROJECT, known

    def _version_1_settings(
        self,
        name: str,
        project: str,
        backend: str,
        side_names: frozenset[str] | None,
        projects: dict[tuple[str, str], dict[str, JsonValue] | str],
    ) -> tuple[SettingsOrigin, Mapping[str, JsonValue]]:
        """Where a listed version 1 handle's settings come from, and the settings.

        ``side_names`` are the names of the side records (``None``: they could not be listed,
        and every handle's side record is looked for).

        Raises:
            RecordError: If its side record or its project cannot be read.
        """
        if (
            side_names is None or name in side_names
        ):  # a side record is named as its handle's file is
            frozen = self._side_settings(name[:-5])
            if frozen is not None:
                return SettingsOrigin.SIDE_RECORD, frozen
        key = (project, backend)
        if key not in projects:
            try:
                projects[key] = project_settings(Path(project), backend)
            except RecordError as error:
                projects[key] = str(error)
        known = projects[key]
        if isinstance(known, str):
            raise RecordError(known)
        return SettingsOrigin.PROJECT, known

    def _keep_origins(self, listing: RunListing, handles: tuple[RunHandle, ...]) -> None:
        """Keep where each listed version 1 handle's settings come from, by the very handle."""
        self._origins = {
            handle.run_id: (handle, run.origin)
            for run, handle in zip(listing.runs, handles, strict=True)
            if run.schema_version == SUBSTRAX_01_HANDLE_VERSION
        }

    def _read_fields(self, path: Path) -> tuple[HandleFields | None, str | None]:
        """A handle file's fields as the index keeps them, or why it cannot be read."""
        stem = path.stem
        if not RUN_ID_PATTERN.fullmatch(stem):
            return None, f"{stem!r} is not a run id, so it holds no run"
        try:
            fields = read_record_file(path, handle_fields, max_bytes=HANDLE_BYTES)
        except FileNotFoundError:
            return None, None
        except BadRecordError as error:
            return None, str(error).removeprefix(f"{path}: ")
        if fields.run_id != stem:
            return None, misfiled_reason("run", fields.run_id, stem)
        return fields, None

    def delete(self, run_id: str) -> None:
        """Forget a run's handle and its side record (its files elsewhere are left)."""
        self.path_of(run_id).unlink(missing_ok=True)
        self.side_record_of(run_id).unlink(missing_ok=True)

    def _read(self, data: object) -> RunHandle:
        """A handle from its parsed JSON, a version 1 handle with its settings filled in."""
        handle = read_handle(data)
        if handle.schema_version != SUBSTRAX_01_HANDLE_VERSION:
            return handle
        frozen = self._side_settings(handle.run_id)
        if frozen is None:
            frozen = project_settings(Path(handle.project), handle.backend)
        return RunHandle(
            schema_version=handle.schema_version,
            run_id=handle.run_id,
            backend=handle.backend,
            job=handle.job,
            project=handle.project,
            submitted_at=handle.submitted_at,
            settings=frozen,
            details=handle.details,
        )

    def _side_settings(self, run_id: str) -> dict[str, JsonValue] | None:
        """The frozen settings of a version 1 handle x-tui wrote; ``None`` when it has none.

        Raises:
            RecordError: If the side record is there but cannot be read.
        """
        path = self.side_record_of(run_id)
        problem = f"its settings side record {path} is not x-tui's record of {run_id}"
        try:
            side = read_json_file(path, max_bytes=SIDE_RECORD_LIMIT)
        except FileNotFoundError:
            return None
        except (OSError, RecordError) as error:
            raise RecordError(f"{problem}: {error}") from None
        if (
            not isinstance(side, dict)
            or side.get("run_id") != run_id
            or not isinstance(side.get("settings"), dict)
            or set(side) != {"run_id", "settings"}
        ):
            raise RecordError(problem)
        settings: dict[str, JsonValue] = side["settings"]
        return settings


def _names_in(directory: Path) -> frozenset[str] | None:
    """The names in a directory (empty when it is missing); ``None`` when it cannot be listed."""
    try:
        return frozenset(os.listdir(directory))
    except FileNotFoundError:
        return frozenset()
    except OSError:
        return None


def _short(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON else f"{reason[: MAX_REASON - 3]}..."


def project_settings(project: Path, backend: str) -> dict[str, JsonValue]:
    """A backend's settings as substrax 0.1.x rebuilds them for a stored run: the project's now.

    Args:
        project: The project the run was submitted from (the handle's ``project``).
        backend: The backend's name.

    Returns:
        ``[tool.substrax.compute.backends.<backend>]`` of the project's pyproject.toml; empty when
        the project has no pyproject.toml or that table is absent.

    Raises:
        RecordError: If the pyproject.toml cannot be read or has no compute table (substrax
            refuses the run then too); the message says the settings come from the project.
    """
    from x_tui.compute.config import PYPROJECT, read_compute_config
    from x_tui.compute.worker.errors import UserError

    path = project / PYPROJECT
    try:
        if not path.is_file():
            return {}
        stat = path.stat()
    except OSError:
        return {}
    if stat.st_size > PYPROJECT_LIMIT:
        raise RecordError(
            f"{SettingsOrigin.PROJECT.describe()}, but {path} is over {PYPROJECT_LIMIT} bytes"
        )
    key = (str(path), stat.st_mtime_ns, stat.st_size, backend)
    if key not in _PROJECT_SETTINGS:
        try:
            settings = dict(read_compute_config(project).backend_settings(backend))
        except UserError as error:
            raise RecordError(
                f"{SettingsOrigin.PROJECT.describe()}, which cannot be read: {error}"
            ) from None
        if len(_PROJECT_SETTINGS) > 256:
            _PROJECT_SETTINGS.clear()
        _PROJECT_SETTINGS[key] = settings
    return dict(_PROJECT_SETTINGS[key])


_PROJECT_SETTINGS: dict[tuple[str, int, int, str], dict[str, JsonValue]] = {}
