"""The run store's records as the monitor reads them: newest first, each with the stamp (modified
time and size) that says whether it changed since it was last read, and the reason when it
cannot be read.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.errors import UserError

Stamp = tuple[int, int]
"""A file's modification time (ns) and size."""


def stamp_of(path: Path | None) -> Stamp | None:
    """The file's stamp, or ``None`` when it cannot be read (or there is no file)."""
    if path is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


@dataclass(frozen=True, slots=True)
class Record:
    """One handle file as last read.

    Attributes:
        stamp: The file's stamp when it was read.
        handle: The handle, when it could be read.
        reason: Why it cannot be read, when it cannot.
    """

    stamp: Stamp
    handle: RunHandle | None
    reason: str | None


def listing(runs_dir: Path) -> list[Path]:
    """Every handle file of the store, the newest run first (by the time in its run id).

    Args:
        runs_dir: The store's directory.

    Returns:
        The files; a name not of the run id form sorts last. Empty when the directory cannot
        be listed.
    """
    return [runs_dir / name for name in listing_names(runs_dir)]


def listing_names(runs_dir: Path) -> list[str]:
    """The names of :func:`listing`'s files, in its order (no path made for each: cheaper)."""
    names = _handle_names(runs_dir)
    names.sort(key=_newest_first, reverse=True)
    return names


def newest_names(runs_dir: Path, count: int) -> tuple[list[str], int]:
    """The first ``count`` names of :func:`listing_names`, and how many it has, without sorting
    them all (100,000 names: the listing, then 30 ms rather than 50 ms to pick the newest).

    Returns:
        The newest names, in :func:`listing_names`'s order, and the number of handle files.
    """
    names = _handle_names(runs_dir)
    return heapq.nlargest(count, names, key=_newest_first), len(names)


def _handle_names(runs_dir: Path) -> list[str]:
    try:
        return [
            name
            for name in os.listdir(runs_dir)
            if name.endswith(".json") and not name.startswith(".")
        ]
    except OSError:
        return []


def _newest_first(name: str) -> str:
    # A run id ends in "-YYYYMMDDTHHMMSSZ-xxxxxx", so its time sorts as text; a name of another
    # form sorts last.
    moment = name[-28:-13]
    return moment if name[-29:-28] == "-" and name[-13:-11] == "Z-" else ""


def read_handle_record(store: RunStore, path: Path, stamp: Stamp) -> Record:
    """Read one handle file of ``store``.

    Args:
        store: The store.
        path: The file, ``<run_id>.json``.
        stamp: Its stamp now.

    Returns:
        The record: the handle, or why it cannot be read (the file's name left out).
    """
    run_id = path.stem
    try:
        handle = store.load(run_id)
    except UserError as error:
        return Record(stamp, None, str(error).removeprefix(f"{path}: "))
    return Record(stamp, handle, None)
