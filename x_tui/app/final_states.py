"""The final states of runs, kept across sessions in ``<state>/x-tui/final-states.json``.

A run seen to end is never asked about again, in this session or the next: its state and when it
ended are written here, as three columns of one value per run, sorted by run id, so that 100,000
of them read in about a tenth of a second: a line ``{"version": 3}``, then a line per
``x_tui.compute.slices.SLICE`` runs, ``{"run_ids": [...], "states": [...], "ended_at": [...]}`` (an
epoch time or ``null``). Each line is parsed and checked on its own, so the reading thread never
holds the interpreter from the event loop for long (one parse of the whole cache held it some
40 ms, and each check of every run as long again). The earlier layouts are read too: version 2,
the same columns in one document, and version 1, ``{"version": 1, "runs": {run_id: {"state":
..., "ended_at": ...}}}``. An entry that cannot be read is skipped, and a file that cannot be
read or written is no error: the runs are then asked about again, and a cache that could not be
read is written anew. The cache never stands in for the store: it only says how a run the store
holds ended.

Beside it, ``final-states-recent.json`` keeps the entries of the :data:`RECENT_RUNS` newest runs
(by the time in their run ids) in the same columns, with the stamp (modified time, size, inode)
of the cache they were taken from, so the first screenful of runs shows how each ended from a
few kilobytes before the whole cache is read. It is believed only while the cache is that very
file (a cache written anew, by another release or by hand, or removed, makes it unbelieved),
and read and checked as the cache is.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from x_tui.compute.backend import RunState
from x_tui.compute.slices import slices
from x_tui.compute.store import RUN_ID_PATTERN
from x_tui.compute.worker.record_files import read_cache_file, read_cache_lines
from x_tui.compute.worker.records import RecordError, write_atomic

FINAL_STATES_NAME = "final-states.json"
"""The cache's file, in ``<state>/x-tui/``."""

FINAL_STATES_BYTES = 256 << 20
"""The largest cache read (some 3,000,000 runs; 100,000 take about 8 MB)."""

FINAL_STATES_VERSION = 3
"""The layout this release writes (columns, a line per slice of runs); it reads 1 and 2 too."""

RECENT_NAME = "final-states-recent.json"
"""The newest runs' entries of the cache, in the cache's directory."""

RECENT_RUNS = 200
"""How many of the newest runs' final states are kept beside the cache."""

RECENT_BYTES = 1 << 20
"""The largest file of the newest runs' entries read."""

RECENT_VERSION = 1
"""The layout of that file: the cache's columns and the cache's stamp (``"of"``)."""

FinalState = tuple[RunState, float | None]
"""A finished run's state and when it ended (an epoch time), if known."""


def read_final_states(path: Path) -> dict[str, FinalState] | None:
    """The final states kept in ``path``, by run id.

    The file is read through the one bounded reader (:mod:`x_tui.compute.worker.record_files`), so a
    cache replaced by a FIFO, a link, a directory or an enormous or deeply nested file is refused
    at once. An entry that is not a final state of a run id is skipped.

    Returns:
        The kept states (empty when there is no cache yet); ``None`` when the cache cannot be
        read or is not such a table, so that it is rebuilt from the backends' answers.
    """
    try:
        lines = read_cache_lines(path, max_bytes=FINAL_STATES_BYTES)
    except FileNotFoundError:
        return {}
    except RecordError:
        return None
    head = lines[0] if lines else None
    if not isinstance(head, dict):
        return None
    if head.get("version") == FINAL_STATES_VERSION and len(head) == 1:
        found: dict[str, FinalState] = {}
        for part in lines[1:]:
            entries = _columns(part) if isinstance(part, dict) and len(part) == 3 else None
            if entries is None:
                return None
            found.update(entries)
        return found
    if len(lines) != 1:
        return None
    data = head
    if data.get("version") == 1 and isinstance(data.get("runs"), dict):
        runs: dict[object, object] = data["runs"]
        return _checked(
            [
                (run_id, entry.get("state"), entry.get("ended_at", _MISSING))
                for run_id, entry in runs.items()
                if isinstance(entry, dict)
            ]
        )
    if data.get("version") != 2:
        return None
    return _columns(data)


def read_recent_final_states(path: Path) -> dict[str, FinalState] | None:
    """The final states of the newest runs kept beside the cache ``path``, by run id.

    Read through the bounded reader and checked as the cache is (an entry that is not a final
    state of a run id is skipped).

    Returns:
        The entries; ``None`` when there are none to believe: the file is missing or cannot be
        read, or the cache is not the very file they were taken from.
    """
    stamp = _stamp_of(path)
    if stamp is None:
        return None
    try:
        data = read_cache_file(path.with_name(RECENT_NAME), max_bytes=RECENT_BYTES)
    except (FileNotFoundError, RecordError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("version") != RECENT_VERSION
        or data.get("of") != list(stamp)
    ):
        return None
    return _columns(data)


def _columns(data: dict[str, object]) -> dict[str, FinalState] | None:
    """The entries of a document of columns ``run_ids``, ``states``, ``ended_at``.

    ``None`` when they are not three lists of one length.
    """
    run_ids, names, moments = data.get("run_ids"), data.get("states"), data.get("ended_at")
    if (
        not isinstance(run_ids, list)
        or not isinstance(names, list)
        or not isinstance(moments, list)
        or not len(run_ids) == len(names) == len(moments)
    ):
        return None
    if (
        set(map(type, run_ids)) <= {str}
        and set(map(type, names)) <= {str}
        and set(names) <= _FINAL.keys()
        and set(map(type, moments)) <= {float, type(None)}
        and all(map(math.isfinite, [moment for moment in moments if moment is not None]))
        and all(map(RUN_ID_PATTERN.fullmatch, run_ids))
    ):
        # Every entry is good (as this module writes them): taken whole, in C.
        states = map(_FINAL.__getitem__, names)
        return dict(zip(run_ids, zip(states, moments, strict=True), strict=True))
    return _checked(list(zip(run_ids, names, moments, strict=True)))


def _checked(entries: list[tuple[object, object, object]]) -> dict[str, FinalState]:
    """The entries that are a final state of a run id, with an epoch time or none."""
    found: dict[str, FinalState] = {}
    for run_id, name, moment in entries:
        state = _FINAL.get(name) if isinstance(name, str) else None
        if state is None or not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
            continue
        if moment is None:
            found[run_id] = (state, None)
        elif type(moment) in (int, float) and math.isfinite(moment):  # type: ignore[arg-type]
            found[run_id] = (state, float(moment))  # type: ignore[arg-type]
    return found


_FINAL = {state.value: state for state in RunState if state.is_final}
"""Each final state by its name."""

_MISSING = object()


def write_final_states(path: Path, runs: Mapping[str, FinalState]) -> None:
    """Keep ``runs``' final states in ``path``, atomically, and the newest runs' beside it.

    A failure to write is ignored.
    """
    run_ids = sorted(runs)
    lines = [json.dumps({"version": FINAL_STATES_VERSION})]
    for part in slices(run_ids):  # a line is parsed, and checked, in some 5 ms
        lines.append(json.dumps(_columns_of(runs, part), separators=(",", ":")))
    with contextlib.suppress(OSError):
        write_atomic(path, "\n".join(lines) + "\n")
        keep_recent_final_states(path, runs)


def keep_recent_final_states(path: Path, runs: Mapping[str, FinalState]) -> None:
    """Keep the newest of ``runs`` (the cache ``path`` as it is now) beside the cache.

    For a cache written without them (by an earlier release); a failure to write is ignored.
    """
    stamp = _stamp_of(path)
    if stamp is None:
        return
    newest = heapq.nlargest(RECENT_RUNS, runs, key=_time_in_run_id)
    document = {"version": RECENT_VERSION, "of": list(stamp), **_columns_of(runs, newest)}
    with contextlib.suppress(OSError):
        write_atomic(
            path.with_name(RECENT_NAME), json.dumps(document, separators=(",", ":")) + "\n"
        )


def _columns_of(runs: Mapping[str, FinalState], run_ids: Sequence[str]) -> dict[str, list[object]]:
    """The columns of the entries of ``run_ids``, in that order."""
    return {
        "run_ids": list(run_ids),
        "states": [runs[run_id][0].value for run_id in run_ids],
        "ended_at": [runs[run_id][1] for run_id in run_ids],
    }


def _time_in_run_id(run_id: str) -> str:
    """The submit time a run id ends with (``YYYYMMDDTHHMMSSZ``), which sorts as text."""
    return run_id[-23:-7]


def _stamp_of(path: Path) -> tuple[int, int, int] | None:
    """The file's modified time (ns), size and inode; ``None`` when there is no such file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def final_states_path(runs_dir: Path) -> Path:
    """The cache of the store whose handles are in ``runs_dir`` (``<state>/compute/runs``)."""
    return runs_dir.parent.parent / "x-tui" / FINAL_STATES_NAME


def keep_final_states(path: Path, learnt: Mapping[str, FinalState]) -> None:
    """Add ``learnt`` to the final states kept in ``path`` (what is kept there stays).

    A cache that cannot be read is written anew with ``learnt`` alone; a failure to write is
    ignored (the runs are asked about again next time).
    """
    kept = read_final_states(path) or {}
    for run_id, (state, ended) in learnt.items():
        if run_id not in kept or kept[run_id][1] is None:
            kept[run_id] = (state, ended)
    write_final_states(path, kept)
