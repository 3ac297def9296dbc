"""The final states of runs, kept across sessions in ``<state>/x-tui/final-states.json``.

A run seen to end is never asked about again, in this session or the next: its state and when it
ended are written here, ``{"version": 1, "runs": {run_id: {"state": ..., "ended_at": ...}}}``.
An entry that cannot be read is skipped, and a file that cannot be read or written is no error:
the runs are then asked about again, and a cache that could not be read is written anew. The
cache never stands in for the store: it only says how a run the store holds ended.
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
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict):
        return None
    found: dict[str, FinalState] = {}
    for run_id, entry in runs.items():
        if not isinstance(entry, dict):
            continue
        name = entry.get("state")
        state = _FINAL.get(name) if isinstance(name, str) else None
        moment = entry.get("ended_at", _MISSING)
        if state is None or not RUN_ID_PATTERN.fullmatch(run_id):
            continue
        if moment is None:
            found[run_id] = (state, None)
        elif type(moment) in (int, float) and math.isfinite(moment):
            found[run_id] = (state, float(moment))
    return found


_FINAL = {state.value: state for state in RunState if state.is_final}
"""Each final state by its name."""

_MISSING = object()


def write_final_states(path: Path, runs: Mapping[str, FinalState]) -> None:
    """Keep ``runs``' final states in ``path``, atomically (a failure to write is ignored)."""
    table = {
        run_id: {"state": state.value, "ended_at": ended}
        for run_id, (state, ended) in sorted(runs.items())
    }
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps({"version": 1, "runs": table}) + "\n")


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
