"""An index of the run store, kept in x-tui's own file, so a store of 100,000 runs lists at once.

``<state>/x-tui/runs-index.json`` holds, for each handle file of ``<state>/compute/runs/``, the
file's stamp (modified time, size, inode) and what reading it gave: the handle's fields, or the
reason it cannot be read. Listing the store then costs one directory listing and one read of the
index, not one read and parse of every handle.

The index is never believed over the store:

- when the runs directory's modified time is the one the index was made from, and the index was
  made well after it (so no write in the same clock tick was missed), the file names are those of
  the index. Every writer of a handle, x-tui and substrax alike, writes a partial file and renames
  it into place, and every rename, creation and removal changes the directory's time;
- otherwise each file is looked at (``lstat``): one whose stamp is the index's keeps its entry,
  and any other is read through the store's bounded reader, as without an index;
- the index is itself a record of the store: read through the bounded reader (a FIFO, a link, an
  enormous or deeply nested file in its place is refused), every column checked for its type and
  length, every entry for its fields (a run id as its file is named, a date and time, settings
  that are an object). An entry of the wrong shape is left out and its file read again; an index
  that cannot be read is made anew; one that cannot be written is no error (the store is read as
  without one).

The index is columns, one value per handle file in each (not one object per run), in listing
order: the readable handles newest first, then the unreadable files. So loading it makes no
object per run beyond its values, it stays within the reader's limit on arrays and objects, its
order is checked in a few passes in C, and a few files read anew (a run saved since) are put in
their places by bisection.

Beside the index, each time it is written, ``<state>/x-tui/runs-head.json`` keeps its first
:data:`HEAD_ROWS` rows (the newest runs) in the same layout, with the count of every file, so
that a screenful of the newest runs shows from a few kilobytes before the whole index is read.
The head is believed under the index's rule alone (the runs directory's modified time is the one
it was made from, and it was made well after it), and read and checked as the index is; a head
that is not believed is no error (:func:`indexed_head` gives nothing, and the store is listed
whole).

The newest runs of the store may all be another project's (a sweep of a colleague's): so with
the head, ``<state>/x-tui/runs-heads/`` keeps, for each of the :data:`PROJECT_HEADS` projects
with the newest runs whose own newest :data:`PROJECT_HEAD_ROWS` runs the head lacks, a head of
those runs, named by a hash of the project's root (a root is the handles' text, never a path
here). Asked for a project, :func:`indexed_head` adds its rows to the head's, under the same
rule, and only when every row is that project's.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import itertools
import json
import operator
import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, cast

from x_tui.compute.slices import slices
from x_tui.compute.worker.record_files import UnreadableRecordError, read_cache_lines
from x_tui.compute.worker.records import RecordError, parse_datetime, write_atomic

INDEX_NAME = "runs-index.json"
"""The index's file, in ``<state>/x-tui/``."""

HEAD_NAME = "runs-head.json"
"""The index's head (its newest rows), in ``<state>/x-tui/``."""

HEAD_ROWS = 100
"""How many of the index's first rows (the newest runs) its head keeps."""

HEAD_BYTES = 4 << 20
"""The largest head read (some hundred runs with large details)."""

PROJECT_HEADS_NAME = "runs-heads"
"""The directory of the projects' heads, in ``<state>/x-tui/``."""

PROJECT_HEADS = 16
"""How many projects (those with the newest runs) have a head of their own."""

PROJECT_HEAD_ROWS = 50
"""How many of a project's newest runs its head keeps (a screenful and more)."""

INDEX_VERSION = 3
"""The layout of the index this release reads and writes (an index of another is made anew)."""

INDEX_CHUNK = 5000
"""The most values of a column on one line of the index (a line is parsed at a time)."""

INDEX_BYTES = 1 << 30
"""The largest index read (some 4,000,000 runs)."""

SETTLED_NS = 2_000_000_000
"""How long after the directory's last change an index must have been made for its file names
to be believed without looking at each file (clock ticks and file system time granularity)."""

Stamp = tuple[int, int, int]
"""A handle file's modified time (ns), size and inode."""


class HandleFields(NamedTuple):
    """A handle file's content as the store read it (a version 1 handle without ``settings``).

    Attributes:
        schema_version: The handle's version.
        run_id: The run.
        backend: Its backend's name.
        job: Its job's name.
        project: Its project's root.
        submitted_at: When it was submitted, as the handle's text has it.
        settings: The frozen settings (empty for a version 1 handle).
        details: The provider's references.
    """

    schema_version: int
    run_id: str
    backend: str
    job: str
    project: str
    submitted_at: str
    settings: Mapping[str, Any]
    details: Mapping[str, str]


ReadFile = Callable[[Path], tuple[HandleFields | None, str | None]]
"""Reads one handle file: its fields, or the reason it cannot be read (neither: it is gone)."""

IsRunFile = Callable[[str], object]
"""Whether a file name is ``<run_id>.json`` for a run id (truthy when it is)."""


@dataclass(frozen=True, slots=True)
class IndexedFiles:
    """The handle files of a runs directory, one row per file, in listing order.

    The readable handles come first, newest first (by submitted time, then run id), then the
    files that cannot be read, by name. Row ``i`` of every column is the ``i``-th file. Nothing
    here is changed once made: the rows with the same settings share one settings object.

    Attributes:
        names: Each file's name (``<run_id>.json`` for a readable handle).
        stamps: Each file's stamp, three values a file (see :data:`Stamp`).
        reasons: Why the file cannot be read (``None`` for a readable handle).
        versions: The handle's version (0 when unreadable).
        backends: The handle's backend ("" when unreadable, as every text column).
        jobs: The handle's job.
        projects: The handle's project root.
        submitted: When the handle was submitted, as its text has it.
        submitted_at: The same, read (``None`` when unreadable).
        settings: The handle's frozen settings (empty for a version 1 handle).
        detail_starts: Where each file's details begin in ``details``, and one past the last.
        details: The details of every handle, key then value.
    """

    names: list[str]
    stamps: list[int]
    reasons: list[str | None]
    versions: list[int]
    backends: list[str]
    jobs: list[str]
    projects: list[str]
    submitted: list[str]
    submitted_at: list[dt.datetime | None]
    settings: list[Mapping[str, Any]]
    detail_starts: list[int]
    details: list[str]

    def __len__(self) -> int:
        """The number of files."""
        return len(self.names)

    def stamp(self, row: int) -> Stamp:
        """The stamp of the file of ``row``."""
        at = 3 * row
        return (self.stamps[at], self.stamps[at + 1], self.stamps[at + 2])

    def details_of(self, row: int) -> dict[str, str]:
        """The details of the handle of ``row`` (a new dict)."""
        pairs = self.details[self.detail_starts[row] : self.detail_starts[row + 1]]
        return dict(zip(pairs[0::2], pairs[1::2], strict=True))


def is_handle_name(name: str) -> bool:
    """Whether a directory entry is a handle file (``*.json``; dot-named partial files are not)."""
    return name.endswith(".json") and not name.startswith(".")


@dataclass(frozen=True, slots=True)
class IndexHead:
    """The newest handle files of a runs directory, as the index's head gives them.

    Attributes:
        files: The first rows of the listing (see :class:`IndexedFiles`).
        total: How many handle files the whole listing holds (``len(files)``: the head is all).
    """

    files: IndexedFiles
    total: int

    @property
    def complete(self) -> bool:
        """Whether the head is every handle file of the directory."""
        return self.total == len(self.files)


def indexed_head(
    runs_dir: Path, head_path: Path, is_run_file: IsRunFile, *, project: str | None = None
) -> IndexHead | None:
    """The newest handle files of ``runs_dir``, from the index's head, when it is believed.

    Believed under the index's rule: the directory's modified time is the one the head was made
    from, and the head was made well after it. Nothing is read but the head (no directory
    listing, no handle file), and with ``project`` that project's head beside it.

    Args:
        runs_dir: The store's directory of handles.
        head_path: The head's file.
        is_run_file: Whether a file is named for a run id (a head with an entry of one that is
            not is not believed).
        project: A project's root: its newest runs are added, from its own head, when the
            store's newest are not all of them (a project head not believed adds none).

    Returns:
        The head; ``None`` when it is missing, cannot be read, is not of this store or is not
        believed (the store is then listed whole).
    """
    try:
        directory = os.stat(runs_dir)
    except OSError:
        return None
    head = _believed_head(head_path, runs_dir, directory.st_mtime_ns, is_run_file)
    if head is None or project is None or head.complete:
        return head
    root = os.path.normpath(project)
    path = head_path.with_name(PROJECT_HEADS_NAME) / project_head_name(root)
    own = _believed_head(path, runs_dir, directory.st_mtime_ns, is_run_file)
    if own is None or own.total != head.total:
        return head
    if any(os.path.normpath(text) != root for text in set(own.files.projects)):
        return head  # (another project's runs under this name: a hash's collision, or a hand)
    shown = set(head.files.names)
    rows = [row for row, name in enumerate(own.files.names) if name not in shown]
    return IndexHead(files=_merged(head.files, _rows_of(own.files, rows)), total=head.total)


def project_head_name(project: str) -> str:
    """The file name of the head of the project whose root is ``project`` (normalised, as by
    ``os.path.normpath``): a hash of it, so no root is ever a path here."""
    import hashlib  # (here: only a project's start or a head's writing needs it)

    digest = hashlib.sha256(project.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:32]}.json"


def _believed_head(
    path: Path, runs_dir: Path, dir_mtime_now: int, is_run_file: IsRunFile
) -> IndexHead | None:
    """The head in ``path``, if it is believed (see :func:`indexed_head`)."""
    kept = _load(path, runs_dir, is_run_file, max_bytes=HEAD_BYTES)
    if kept is None:
        return None
    dir_mtime, built, complete, files, total = kept
    if (
        not complete
        or dir_mtime != dir_mtime_now
        or built - dir_mtime < SETTLED_NS
        or total < len(files)
    ):
        return None
    return IndexHead(files=files, total=total)


def indexed_runs(
    runs_dir: Path, index_path: Path, read: ReadFile, is_run_file: IsRunFile
) -> IndexedFiles:
    """Every handle file of ``runs_dir``, from the index where it still holds, in listing order.

    The index is brought up to date (written only when something changed).

    Args:
        runs_dir: The store's directory of handles.
        index_path: The index's file.
        read: Reads a file the index does not hold as it is now.
        is_run_file: Whether a file is named for a run id (an entry of one that is not is left
            out, and its file read).

    Returns:
        Each file; none when the directory is missing or cannot be listed.
    """
    try:
        directory = os.stat(runs_dir)
    except OSError:
        return _no_files()
    kept = _load(index_path, runs_dir, is_run_file)
    if kept is not None:
        dir_mtime, built, complete, files, _ = kept
        if complete and dir_mtime == directory.st_mtime_ns and built - dir_mtime >= SETTLED_NS:
            head_path = index_path.with_name(HEAD_NAME)
            if indexed_head(runs_dir, head_path, is_run_file) is None:
                # (an index made by a release that wrote no head, or a head damaged since)
                _save_head(head_path, runs_dir, dir_mtime, built, files)
            return files
    else:
        files = _no_files()
    try:
        directory_fd = os.open(runs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return _no_files()
    kept_rows: list[int] = []  # the index's rows whose files are as they were, in its order
    fresh = _Rows()  # the files read again
    try:
        present = {name for name in os.listdir(directory_fd) if is_handle_name(name)}
        stamps = files.stamps
        for row, name in enumerate(files.names):
            if name not in present:
                continue  # removed
            present.discard(name)
            try:
                info = os.lstat(name, dir_fd=directory_fd)
            except OSError:
                continue  # removed since it was listed
            at = 3 * row
            if (
                stamps[at] == info.st_mtime_ns
                and stamps[at + 1] == info.st_size
                and stamps[at + 2] == info.st_ino
            ):
                kept_rows.append(row)
            else:
                fresh.read(runs_dir / name, info, read)
        for name in present:  # new since the index was made
            try:
                info = os.lstat(name, dir_fd=directory_fd)
            except OSError:
                continue  # removed since it was listed
            fresh.read(runs_dir / name, info, read)
    except OSError:
        return _no_files()
    finally:
        os.close(directory_fd)
    changed = (
        kept is None
        or kept[0] != directory.st_mtime_ns
        or not kept[2]
        or fresh.count > 0
        or len(kept_rows) != len(files)
    )
    result = _merged(_rows_of(files, kept_rows), fresh.done())
    if changed or time.time_ns() - directory.st_mtime_ns >= SETTLED_NS:
        _save(index_path, runs_dir, directory.st_mtime_ns, result)
    return result


class _Row(NamedTuple):
    """One file just read, as :class:`_Rows` keeps it until the rows are put in order."""

    submitted_at: dt.datetime | None
    run_id: str
    name: str
    stamp: Stamp
    reason: str | None
    version: int
    backend: str
    job: str
    project: str
    submitted: str
    settings: Mapping[str, Any]
    details: tuple[str, ...]


class _Rows:
    """Builds an :class:`IndexedFiles` of files read one by one, in listing order."""

    def __init__(self) -> None:
        self.rows: list[_Row] = []
        self._settings_by_text: dict[str, Mapping[str, Any]] = {}

    def _shared(self, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        """One settings object for all the rows with the same settings (written once)."""
        if not settings:
            return _NO_SETTINGS
        text = json.dumps(settings, sort_keys=True)
        return self._settings_by_text.setdefault(text, dict(settings))

    @property
    def count(self) -> int:
        """The rows added so far."""
        return len(self.rows)

    def read(self, path: Path, info: os.stat_result, read: ReadFile) -> None:
        """Read a file of the directory, ``lstat`` as ``info``, and add it (not if it is gone)."""
        fields, reason = read(path)
        if fields is not None or reason is not None:
            self.add(path.name, (info.st_mtime_ns, info.st_size, info.st_ino), fields, reason)

    def add(self, name: str, stamp: Stamp, fields: HandleFields | None, reason: str | None) -> None:
        """Add a file just read: its fields, or why it cannot be read."""
        moment = _moment(fields.submitted_at) if fields is not None else None
        if fields is None or moment is None:
            if fields is not None:
                reason = f"submitted_at {fields.submitted_at!r} is not a date and time"
            row = _Row(None, "", name, stamp, reason, 0, "", "", "", "", _NO_SETTINGS, ())
        else:
            row = _Row(
                moment,
                name[:-5],
                name,
                stamp,
                None,
                fields.schema_version,
                fields.backend,
                fields.job,
                fields.project,
                fields.submitted_at,
                self._shared(fields.settings),
                tuple(text for pair in fields.details.items() for text in pair),
            )
        self.rows.append(row)

    def done(self) -> IndexedFiles:
        """The rows, in listing order (sorted, then turned into columns, in C)."""
        readable = [row for row in self.rows if row.submitted_at is not None]
        readable.sort(key=operator.itemgetter(1), reverse=True)  # stable: then by time
        readable.sort(key=operator.itemgetter(0), reverse=True)
        unreadable = sorted(
            (row for row in self.rows if row.submitted_at is None), key=operator.itemgetter(2)
        )
        ordered = readable + unreadable
        if not ordered:
            return _no_files()
        columns = list(zip(*ordered, strict=True))
        return IndexedFiles(
            names=list(columns[2]),
            stamps=list(itertools.chain.from_iterable(columns[3])),
            reasons=list(columns[4]),
            versions=list(columns[5]),
            backends=list(columns[6]),
            jobs=list(columns[7]),
            projects=list(columns[8]),
            submitted=list(columns[9]),
            submitted_at=list(columns[0]),
            settings=list(columns[10]),
            detail_starts=list(itertools.accumulate(map(len, columns[11]), initial=0)),
            details=list(itertools.chain.from_iterable(columns[11])),
        )


def _in_listing_order(files: IndexedFiles) -> IndexedFiles:
    """``files`` with the readable rows newest first (by time, then run id), then the others.

    Rows already in that order (as read back from the index) are seen so in a few passes in C;
    rows in a few ordered runs (the index's, then the files read again) are sorted in one pass.
    """
    if _is_listing_order(files.names, files.submitted_at):
        return files
    names, moments = files.names, files.submitted_at
    run_ids = [name[:-5] for name in names]
    readable = [row for row, moment in enumerate(moments) if moment is not None]
    readable.sort(key=run_ids.__getitem__, reverse=True)  # stable: then by time, ties kept
    readable.sort(key=moments.__getitem__, reverse=True)  # type: ignore[arg-type]
    unreadable = [row for row, moment in enumerate(moments) if moment is None]
    unreadable.sort(key=names.__getitem__)
    return _rows_of(files, readable + unreadable)


def _no_files() -> IndexedFiles:
    """An index of no file."""
    return IndexedFiles([], [], [], [], [], [], [], [], [], [], [0], [])


def _rows_of(files: IndexedFiles, rows: list[int]) -> IndexedFiles:
    """The rows ``rows`` of ``files``, in that order."""
    if rows == list(range(len(files))):
        return files
    stamps, starts, details = files.stamps, files.detail_starts, files.details
    return IndexedFiles(
        names=list(map(files.names.__getitem__, rows)),
        stamps=[stamps[3 * row + part] for row in rows for part in range(3)],
        reasons=list(map(files.reasons.__getitem__, rows)),
        versions=list(map(files.versions.__getitem__, rows)),
        backends=list(map(files.backends.__getitem__, rows)),
        jobs=list(map(files.jobs.__getitem__, rows)),
        projects=list(map(files.projects.__getitem__, rows)),
        submitted=list(map(files.submitted.__getitem__, rows)),
        submitted_at=list(map(files.submitted_at.__getitem__, rows)),
        settings=list(map(files.settings.__getitem__, rows)),
        detail_starts=list(
            itertools.accumulate((starts[row + 1] - starts[row] for row in rows), initial=0)
        ),
        details=[text for row in rows for text in details[starts[row] : starts[row + 1]]],
    )


_FEW = 256
"""The most files read anew that are put in their places one by one (more: all sorted again)."""


def _merged(files: IndexedFiles, fresh: IndexedFiles) -> IndexedFiles:
    """The rows of ``files`` and ``fresh`` (each in listing order), in listing order.

    A few rows (a run or two saved since the index was made) are put in their places, found by
    bisection, and the columns made of slices between them, so a new run costs no sort and no
    object per row of the other 100,000.
    """
    if not len(fresh):
        return files
    if len(fresh) > _FEW or not _is_listing_order(files.names, files.submitted_at):
        return _in_listing_order(_joined(files, fresh))
    moments = files.submitted_at
    readable = moments.index(None) if None in moments else len(moments)
    places = [_place(files, readable, fresh, row) for row in range(len(fresh))]
    if places != sorted(places):
        return _in_listing_order(_joined(files, fresh))

    def woven(mine: list[Any], theirs: list[Any], width: int = 1) -> list[Any]:
        out: list[Any] = []
        start = 0
        for row, place in enumerate(places):
            out += mine[start * width : place * width]
            out += theirs[row * width : (row + 1) * width]
            start = place
        out += mine[start * width :]
        return out

    def lengths(starts: list[int]) -> list[int]:
        return list(map(operator.sub, itertools.islice(starts, 1, None), starts))

    detail_lengths = woven(lengths(files.detail_starts), lengths(fresh.detail_starts))
    details: list[str] = []
    start = 0
    for row, place in enumerate(places):
        details += files.details[files.detail_starts[start] : files.detail_starts[place]]
        details += fresh.details[fresh.detail_starts[row] : fresh.detail_starts[row + 1]]
        start = place
    details += files.details[files.detail_starts[start] :]
    return IndexedFiles(
        names=woven(files.names, fresh.names),
        stamps=woven(files.stamps, fresh.stamps, 3),
        reasons=woven(files.reasons, fresh.reasons),
        versions=woven(files.versions, fresh.versions),
        backends=woven(files.backends, fresh.backends),
        jobs=woven(files.jobs, fresh.jobs),
        projects=woven(files.projects, fresh.projects),
        submitted=woven(files.submitted, fresh.submitted),
        submitted_at=woven(files.submitted_at, fresh.submitted_at),
        settings=woven(files.settings, fresh.settings),
        detail_starts=list(itertools.accumulate(detail_lengths, initial=0)),
        details=details,
    )


def _place(files: IndexedFiles, readable: int, fresh: IndexedFiles, row: int) -> int:
    """Where ``fresh``'s row ``row`` goes among the rows of ``files`` (before the row there).

    ``files``' first ``readable`` rows are its readable ones.
    """
    names, moments = files.names, files.submitted_at
    moment = fresh.submitted_at[row]
    if moment is None:  # among the unreadable files, by name
        return bisect.bisect_right(names, fresh.names[row], lo=readable)
    key = (moment, fresh.names[row][:-5])
    low, high = 0, readable
    while low < high:  # the first row older than it (the rows go newest first)
        middle = (low + high) // 2
        if (moments[middle], names[middle][:-5]) > key:
            low = middle + 1
        else:
            high = middle
    return low


def _joined(first: IndexedFiles, second: IndexedFiles) -> IndexedFiles:
    """The rows of ``first``, then those of ``second``."""
    if not len(second):
        return first
    offset = first.detail_starts[-1]
    return IndexedFiles(
        names=first.names + second.names,
        stamps=first.stamps + second.stamps,
        reasons=first.reasons + second.reasons,
        versions=first.versions + second.versions,
        backends=first.backends + second.backends,
        jobs=first.jobs + second.jobs,
        projects=first.projects + second.projects,
        submitted=first.submitted + second.submitted,
        submitted_at=first.submitted_at + second.submitted_at,
        settings=first.settings + second.settings,
        detail_starts=first.detail_starts + [offset + start for start in second.detail_starts[1:]],
        details=first.details + second.details,
    )


def _is_listing_order(names: list[str], moments: list[dt.datetime | None]) -> bool:
    """Whether rows are in listing order: strictly newer first, then the unreadable by name.

    Rows submitted at the same moment are taken as out of order (sorting puts them right).
    """
    readable = moments.index(None) if None in moments else len(moments)
    if moments.count(None) != len(moments) - readable:
        return False
    times = cast(list[dt.datetime], moments[:readable])
    if not all(map(operator.gt, times, itertools.islice(times, 1, None))):
        return False
    rest = names[readable:]
    return all(map(operator.le, rest, itertools.islice(rest, 1, None)))


def _save(path: Path, runs_dir: Path, dir_mtime: int, files: IndexedFiles) -> None:
    """Write the index, then its head beside it (a failure to write is ignored).

    The head is written after the index and carries the same directory time, so each is
    believed on its own (a head left from an earlier index is not, once the directory changed).
    """
    built = time.time_ns()
    with contextlib.suppress(OSError):
        write_atomic(path, _document(runs_dir, dir_mtime, built, files, len(files)))
        _save_head(path.with_name(HEAD_NAME), runs_dir, dir_mtime, built, files)


def _save_head(path: Path, runs_dir: Path, dir_mtime: int, built: int, files: IndexedFiles) -> None:
    """Write the head of the index of ``files``, then the projects' heads (a failure to write is
    ignored)."""
    head = _rows_of(files, list(range(min(HEAD_ROWS, len(files)))))
    with contextlib.suppress(OSError):
        write_atomic(path, _document(runs_dir, dir_mtime, built, head, len(files)))
    heads = path.with_name(PROJECT_HEADS_NAME)
    own_heads = {  # the projects whose newest runs the head lacks
        project: rows for project, rows in _project_rows(files).items() if rows[-1] >= HEAD_ROWS
    }
    try:
        if not stat.S_ISDIR(os.lstat(heads).st_mode):
            return  # a file or a link in its place is left alone, and no head written there
    except FileNotFoundError:
        if not own_heads:
            return
    except OSError:
        return
    written: set[str] = set()
    with contextlib.suppress(OSError):
        heads.mkdir(exist_ok=True)
        for project, rows in own_heads.items():
            name = project_head_name(project)
            own = _rows_of(files, rows)
            write_atomic(heads / name, _document(runs_dir, dir_mtime, built, own, len(files)))
            written.add(name)
    with contextlib.suppress(OSError), os.scandir(heads) as entries:
        for entry in entries:  # a project's head from an earlier index is believed no more
            if (
                entry.name not in written
                and is_handle_name(entry.name)
                and entry.is_file(follow_symlinks=False)
            ):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _project_rows(files: IndexedFiles) -> dict[str, list[int]]:
    """The newest :data:`PROJECT_HEAD_ROWS` readable rows of each of the :data:`PROJECT_HEADS`
    projects with the newest runs, in listing order, by root (``os.path.normpath``'s, as the
    runs table's project filter matches a root)."""
    chosen: dict[str, list[int]] = {}
    normal: dict[str, str] = {}  # each root as the runs table matches it, made once
    full = 0
    for row, (text, reason) in enumerate(zip(files.projects, files.reasons, strict=True)):
        if reason is not None:
            break  # the unreadable files come last
        project = normal.get(text)
        if project is None:
            project = normal[text] = os.path.normpath(text)
        rows = chosen.get(project)
        if rows is None:
            if len(chosen) == PROJECT_HEADS:
                continue
            rows = chosen[project] = []
        if len(rows) < PROJECT_HEAD_ROWS:
            rows.append(row)
            if len(rows) == PROJECT_HEAD_ROWS:
                full += 1
                if full == PROJECT_HEADS:
                    break
    return chosen


def _document(runs_dir: Path, dir_mtime: int, built: int, files: IndexedFiles, total: int) -> str:
    """The text of an index (or of its head: ``files`` its first rows of ``total``)."""
    texts: dict[int, str] = {}  # the JSON text of each settings object, made once
    settings = []
    for value in files.settings:
        text = texts.get(id(value))
        if text is None:
            text = texts[id(value)] = json.dumps(value, sort_keys=True)
        settings.append(text)
    document: dict[str, object] = {
        "version": INDEX_VERSION,
        "runs_dir": str(runs_dir),
        "dir_mtime_ns": dir_mtime,
        "built_ns": built,
        "total": total,
        "names": files.names,
        "stamps": files.stamps,
        "reasons": files.reasons,
        "versions": files.versions,
        "backends": files.backends,
        "jobs": files.jobs,
        "projects": files.projects,
        "submitted": files.submitted,
        "settings": settings,
        "detail_starts": files.detail_starts,
        "details": files.details,
    }
    return index_text(document)


def index_text(document: Mapping[str, object]) -> str:
    """An index's text: its fields on the first line, then each column's values, at most
    :data:`INDEX_CHUNK` to a line (``["names", [...]]``), so that no one parse is long."""
    fields = {name: value for name, value in document.items() if name not in _COLUMN_TYPES}
    lines = [json.dumps(fields, separators=(",", ":"))]
    for name, column in document.items():
        if name not in _COLUMN_TYPES or not isinstance(column, list):
            continue
        for start in range(0, max(len(column), 1), INDEX_CHUNK):
            lines.append(
                json.dumps([name, column[start : start + INDEX_CHUNK]], separators=(",", ":"))
            )
    return "\n".join(lines) + "\n"


def joined_document(lines: Sequence[object]) -> dict[str, object] | None:
    """The index :func:`index_text` wrote as ``lines`` (each line's value), its columns joined;
    ``None`` when a line is not its fields or a known column's values (the index is made anew).
    """
    if not lines or not isinstance(lines[0], dict):
        return None
    document: dict[str, object] = dict(lines[0])
    for line in lines[1:]:
        if not (
            isinstance(line, list)
            and len(line) == 2
            and line[0] in _COLUMN_TYPES
            and isinstance(line[1], list)
        ):
            return None
        column = document.setdefault(line[0], [])
        if not isinstance(column, list):
            return None
        column.extend(line[1])
    return document


def _load(
    path: Path, runs_dir: Path, is_run_file: IsRunFile, *, max_bytes: int = INDEX_BYTES
) -> tuple[int, int, bool, IndexedFiles, int] | None:
    """The index's directory time, when it was made, whether every entry held, its entries, and
    how many files the whole listing holds (an index's own count, or more for a head).

    ``None`` when the index cannot be read, is of another version or store, or a column is not
    a list of values of its type and length (it is made anew). An entry that is not a handle of
    its file's run, of a readable version, with a date and time and settings that are an object,
    is left out (its file is read again: the index is not complete).
    """
    try:
        data = joined_document(read_cache_lines(path, max_bytes=max_bytes))
    except (FileNotFoundError, UnreadableRecordError, RecordError):
        return None
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
        return None
    if data.get("runs_dir") != str(runs_dir):
        return None
    dir_mtime, built = data.get("dir_mtime_ns"), data.get("built_ns")
    total = data.get("total", _NO_TOTAL)
    if type(dir_mtime) is not int or type(built) is not int or type(total) is not int:
        return None
    columns = {name: data.get(name) for name in _COLUMN_TYPES}
    for name, allowed in _COLUMN_TYPES.items():
        column = columns[name]
        if not isinstance(column, list) or not set(map(type, column)) <= allowed:
            return None
    names: list[str] = columns["names"]  # type: ignore[assignment]
    reasons: list[str | None] = columns["reasons"]  # type: ignore[assignment]
    versions: list[int] = columns["versions"]  # type: ignore[assignment]
    submitted: list[str] = columns["submitted"]  # type: ignore[assignment]
    setting_texts: list[str] = columns["settings"]  # type: ignore[assignment]
    starts: list[int] = columns["detail_starts"]  # type: ignore[assignment]
    count = len(names)
    if total == _NO_TOTAL:  # an index written before the count was kept: it is every file
        total = count
    if not (
        len(columns["stamps"]) == 3 * count  # type: ignore[arg-type]
        and all(len(columns[name]) == count for name in _PER_FILE)  # type: ignore[arg-type]
        and len(set(names)) == count
        and len(starts) == count + 1
        and starts[0] == 0
        and starts[-1] == len(columns["details"])  # type: ignore[arg-type]
        and all(start % 2 == 0 for start in starts)
        and all(start <= end for start, end in itertools.pairwise(starts))
    ):
        return None
    parsed = {text: _settings(text) for text in set(setting_texts)}
    settings = [parsed[text] for text in setting_texts]
    moments = _moments(submitted, reasons)
    if (
        reasons.count(None) == count
        and set(versions) <= _VERSIONS
        and None not in moments
        and None not in settings
        and all(all(map(is_run_file, part)) for part in slices(names))  # (30 ms at once)
    ):
        good = None  # every entry is a readable handle (found so in C, as in a sound index)
    else:
        good = [
            "/" not in name and is_handle_name(name)
            if reason is not None
            else version in _VERSIONS
            and moment is not None
            and frozen is not None
            and bool(is_run_file(name))
            for name, reason, version, moment, frozen in zip(
                names, reasons, versions, moments, settings, strict=True
            )
        ]
    files = IndexedFiles(
        names=names,
        stamps=columns["stamps"],  # type: ignore[arg-type]
        reasons=reasons,
        versions=versions,
        backends=columns["backends"],  # type: ignore[arg-type]
        jobs=columns["jobs"],  # type: ignore[arg-type]
        projects=columns["projects"],  # type: ignore[arg-type]
        submitted=submitted,
        submitted_at=moments,
        settings=[value if value is not None else {} for value in settings]
        if good is not None
        else settings,  # type: ignore[arg-type]
        detail_starts=starts,
        details=columns["details"],  # type: ignore[arg-type]
    )
    if good is not None and not all(good):
        sound = _rows_of(files, list(itertools.compress(range(count), good)))
        return dir_mtime, built, False, _in_listing_order(sound), total
    return dir_mtime, built, True, _in_listing_order(files), total


_COLUMN_TYPES: dict[str, set[type]] = {
    "names": {str},
    "stamps": {int},
    "reasons": {str, type(None)},
    "versions": {int},
    "backends": {str},
    "jobs": {str},
    "projects": {str},
    "submitted": {str},
    "settings": {str},
    "detail_starts": {int},
    "details": {str},
}
"""Each column of the index, with the types its values may have."""

_NO_TOTAL = -1
"""The count of an index written before it was kept (a count no listing has)."""

_PER_FILE = ("reasons", "versions", "backends", "jobs", "projects", "submitted", "settings")
"""The columns with one value per file (besides ``names``)."""

_NO_SETTINGS: Mapping[str, Any] = {}
"""The settings of every row that has none (never changed)."""

_VERSIONS = frozenset({1, 2})
"""The handle versions an entry may have (the store reads no other)."""


def _moments(texts: list[str], reasons: list[str | None]) -> list[dt.datetime | None]:
    """Each readable row's submitted time from its text (``None``: unreadable, or not a time).

    All at once in C where every text is an ISO-8601 time with its offset or ``Z`` (as
    ``records.format_datetime`` writes it), else one by one through ``records.parse_datetime``.
    """
    if reasons.count(None) == len(reasons):
        moments: list[dt.datetime | None] = []
        try:
            for part in slices(texts):
                moments += map(dt.datetime.fromisoformat, part)
        except ValueError:
            pass
        else:
            if None not in map(operator.attrgetter("tzinfo"), moments):
                return moments
    return [
        _moment(text) if reason is None else None
        for text, reason in zip(texts, reasons, strict=True)
    ]


def _moment(text: str) -> dt.datetime | None:
    """A submitted time from its text; ``None`` if it is not a date and time."""
    try:
        return parse_datetime(text)
    except ValueError:
        return None


def _settings(text: str) -> dict[str, Any] | None:
    """Settings from their JSON text; ``None`` if they are not a JSON object."""
    try:
        value = json.loads(text) if len(text) <= 1 << 20 else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
