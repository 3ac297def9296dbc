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
  enormous or deeply nested file in its place is refused), every entry checked field by field, and
  one entry of the wrong shape is read again from its file. An index that cannot be read is made
  anew; one that cannot be written is no error (the store is read as without one).

Columns, not one object per run, keep the index within the reader's limit on arrays and objects.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from x_tui.compute.worker.record_files import UnreadableRecordError, read_cache_file
from x_tui.compute.worker.records import RecordError, write_atomic

INDEX_NAME = "runs-index.json"
"""The index's file, in ``<state>/x-tui/``."""

INDEX_VERSION = 1
"""The layout of the index this release reads and writes."""

INDEX_BYTES = 1 << 30
"""The largest index read (some 2,000,000 runs)."""

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


class IndexEntry(NamedTuple):
    """One handle file: its stamp, and its fields or why it cannot be read.

    Attributes:
        stamp: The file's stamp when it was read.
        fields: What it holds, when it could be read.
        reason: Why it cannot be read, when it cannot.
    """

    stamp: Stamp
    fields: HandleFields | None
    reason: str | None


ReadFile = Callable[[Path], tuple[HandleFields | None, str | None]]
"""Reads one handle file: its fields, or the reason it cannot be read (neither: it is gone)."""


def is_handle_name(name: str) -> bool:
    """Whether a directory entry is a handle file (``*.json``; dot-named partial files are not)."""
    return name.endswith(".json") and not name.startswith(".")


def indexed_runs(runs_dir: Path, index_path: Path, read: ReadFile) -> dict[str, IndexEntry]:
    """Every handle file of ``runs_dir``, by name, from the index where it still holds.

    The index is brought up to date (written only when something changed).

    Args:
        runs_dir: The store's directory of handles.
        index_path: The index's file.
        read: Reads a file the index does not hold as it is now.

    Returns:
        Each file's entry; empty when the directory is missing or cannot be listed.
    """
    try:
        directory = os.stat(runs_dir)
    except OSError:
        return {}
    kept = _load(index_path, runs_dir)
    if kept is not None:
        dir_mtime, built, entries = kept
        if dir_mtime == directory.st_mtime_ns and built - dir_mtime >= SETTLED_NS:
            return entries
    else:
        entries = {}
    fresh: dict[str, IndexEntry] = {}
    fields: HandleFields | None
    reason: str | None
    changed = kept is None or kept[0] != directory.st_mtime_ns
    try:
        with os.scandir(runs_dir) as listing:
            found = [entry for entry in listing if is_handle_name(entry.name)]
    except OSError:
        return {}
    for entry in found:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # removed since it was listed
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        known = entries.get(entry.name)
        if known is not None and known.stamp == stamp:
            fresh[entry.name] = known
            continue
        fields, reason = read(runs_dir / entry.name)
        changed = True
        if fields is None and reason is None:
            continue  # removed since it was listed
        fresh[entry.name] = IndexEntry(stamp, fields, reason)
    if len(fresh) != len(entries):
        changed = True
    if changed or time.time_ns() - directory.st_mtime_ns >= SETTLED_NS > 0:
        _save(index_path, runs_dir, directory.st_mtime_ns, fresh)
    return fresh


def _save(path: Path, runs_dir: Path, dir_mtime: int, entries: Mapping[str, IndexEntry]) -> None:
    """Write the index (columns of equal length; a failure to write is ignored)."""
    names: list[str] = []
    stamps: list[int] = []
    reasons: list[str | None] = []
    versions: list[int] = []
    texts: list[str] = []
    settings: list[str] = []
    counts: list[int] = []
    details: list[str] = []
    for name, entry in entries.items():
        names.append(name)
        stamps.extend(entry.stamp)
        reasons.append(entry.reason)
        fields = entry.fields
        if fields is None:
            versions.append(0)
            texts.extend(("", "", "", "", ""))
            settings.append("{}")
            counts.append(0)
            continue
        versions.append(fields.schema_version)
        texts.extend(
            (fields.run_id, fields.backend, fields.job, fields.project, fields.submitted_at)
        )
        settings.append(json.dumps(fields.settings, sort_keys=True))
        counts.append(len(fields.details))
        for key, value in fields.details.items():
            details.extend((key, value))
    document = {
        "version": INDEX_VERSION,
        "runs_dir": str(runs_dir),
        "dir_mtime_ns": dir_mtime,
        "built_ns": time.time_ns(),
        "names": names,
        "stamps": stamps,
        "reasons": reasons,
        "versions": versions,
        "texts": texts,
        "settings": settings,
        "detail_counts": counts,
        "details": details,
    }
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps(document, separators=(",", ":")) + "\n")


def _load(path: Path, runs_dir: Path) -> tuple[int, int, dict[str, IndexEntry]] | None:
    """The index's directory time, when it was made, and its entries; ``None`` if unreadable.

    Each column is checked for its type as a whole (an index with one value of the wrong type is
    not read: it is made anew); an entry that is not a handle of its file's run is left out (its
    file is read again).
    """
    try:
        data = read_cache_file(path, max_bytes=INDEX_BYTES)
    except (FileNotFoundError, UnreadableRecordError, RecordError):
        return None
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
        return None
    if data.get("runs_dir") != str(runs_dir):
        return None
    dir_mtime, built = data.get("dir_mtime_ns"), data.get("built_ns")
    columns = {name: data.get(name) for name in _COLUMN_TYPES}
    if type(dir_mtime) is not int or type(built) is not int:
        return None
    for name, allowed in _COLUMN_TYPES.items():
        column = columns[name]
        if not isinstance(column, list) or not set(map(type, column)) <= allowed:
            return None
    names: list[str] = columns["names"]  # type: ignore[assignment]
    stamps: list[int] = columns["stamps"]  # type: ignore[assignment]
    reasons: list[str | None] = columns["reasons"]  # type: ignore[assignment]
    versions: list[int] = columns["versions"]  # type: ignore[assignment]
    texts: list[str] = columns["texts"]  # type: ignore[assignment]
    settings: list[str] = columns["settings"]  # type: ignore[assignment]
    counts: list[int] = columns["detail_counts"]  # type: ignore[assignment]
    details: list[str] = columns["details"]  # type: ignore[assignment]
    count = len(names)
    if not (
        len(stamps) == 3 * count
        and len(reasons) == count
        and len(versions) == count
        and len(texts) == 5 * count
        and len(settings) == count
        and len(counts) == count
        and min(counts, default=0) >= 0
        and 2 * sum(counts) == len(details)
    ):
        return None
    entries: dict[str, IndexEntry] = {}
    parsed: dict[str, dict[str, Any] | None] = {}
    at = 0  # the next place in ``details``
    stamp_parts, text_parts = iter(stamps), iter(texts)
    rows = zip(
        names,
        zip(stamp_parts, stamp_parts, stamp_parts, strict=True),
        reasons,
        versions,
        zip(text_parts, text_parts, text_parts, text_parts, text_parts, strict=True),
        settings,
        counts,
        strict=True,
    )
    for name, stamp, reason, version, (
        run_id,
        backend,
        job,
        project,
        submitted,
    ), text, size in rows:
        pairs = details[at : at + 2 * size] if size else []
        at += 2 * size
        if "/" in name or not is_handle_name(name):
            continue
        if reason is not None:
            entries[name] = IndexEntry(stamp, None, reason)
            continue
        if text not in parsed:
            parsed[text] = _settings(text)
        frozen = parsed[text]
        if frozen is None or run_id != name[:-5]:
            continue
        fields = HandleFields(
            version,
            run_id,
            backend,
            job,
            project,
            submitted,
            dict(frozen),
            dict(zip(pairs[0::2], pairs[1::2], strict=True)),
        )
        entries[name] = IndexEntry(stamp, fields, None)
    return dir_mtime, built, entries


_COLUMN_TYPES: dict[str, set[type]] = {
    "names": {str},
    "stamps": {int},
    "reasons": {str, type(None)},
    "versions": {int},
    "texts": {str},
    "settings": {str},
    "detail_counts": {int},
    "details": {str},
}
"""Each column of the index, with the types its values may have."""


def _settings(text: str) -> dict[str, Any] | None:
    """Settings from their JSON text; ``None`` if they are not a JSON object."""
    try:
        value = json.loads(text) if len(text) <= 1 << 20 else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
