"""The final states of runs, kept across sessions in ``<state>/x-tui/final-states.json``.

A run seen to end is never asked about again, in this session or the next: its state and when it
ended are written here, as three columns of one value per run, sorted by run id:
``{"version": 2, "run_ids": [...], "states": [...], "ended_at": [...]}`` (an epoch time or
``null``), so that 100,000 of them read in a few hundredths of a second. The first layout,
``{"version": 1, "runs": {run_id: {"state": ..., "ended_at": ...}}}``, is read too. An entry that
cannot be read is skipped, and a file that cannot be read or written is no error: the runs are
then asked about again, and a cache that could not be read is written anew. The cache never
stands in for the store: it only says how a run the store holds ended.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from pathlib import Path

from x_tui.compute.backend import RunState
from x_tui.compute.store import RUN_ID_PATTERN
from x_tui.compute.worker.record_files import read_cache_file
from x_tui.compute.worker.records import RecordError, write_atomic

FINAL_STATES_NAME = "final-states.json"
"""The cache's file, in ``<state>/x-tui/``."""

FINAL_STATES_BYTES = 256 << 20
"""The largest cache read (some 3,000,000 runs; 100,000 take about 8 MB)."""

FINAL_STATES_VERSION = 2
"""The layout this release writes (columns); it reads version 1 too."""

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
        data = read_cache_file(path, max_bytes=FINAL_STATES_BYTES)
    except FileNotFoundError:
        return {}
    except RecordError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("version") == 1 and isinstance(data.get("runs"), dict):
        runs: dict[object, object] = data["runs"]
        return _checked(
            [
                (run_id, entry.get("state"), entry.get("ended_at", _MISSING))
                for run_id, entry in runs.items()
                if isinstance(entry, dict)
            ]
        )
    run_ids, names, moments = data.get("run_ids"), data.get("states"), data.get("ended_at")
    if (
        data.get("version") != FINAL_STATES_VERSION
        or not isinstance(run_ids, list)
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
    """Keep ``runs``' final states in ``path``, atomically (a failure to write is ignored)."""
    run_ids = sorted(runs)
    document = {
        "version": FINAL_STATES_VERSION,
        "run_ids": run_ids,
        "states": [runs[run_id][0].value for run_id in run_ids],
        "ended_at": [runs[run_id][1] for run_id in run_ids],
    }
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps(document, separators=(",", ":")) + "\n")


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
