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
from x_tui.compute.worker.record_files import RECORD_BYTES, read_json_file
from x_tui.compute.worker.records import RecordError, write_atomic

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
        data = read_json_file(path, max_bytes=RECORD_BYTES)
    except FileNotFoundError:
        return {}
    except RecordError:
        return None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict):
        return None
    found: dict[str, FinalState] = {}
    for run_id, entry in runs.items():
        if not isinstance(entry, dict) or not RUN_ID_PATTERN.fullmatch(run_id):
            continue
        try:
            state = RunState(entry["state"])
            moment = entry["ended_at"]
            ended = None if moment is None else float(moment)
        except (KeyError, TypeError, ValueError):
            continue
        if state.is_final and (ended is None or math.isfinite(ended)):
            found[run_id] = (state, ended)
    return found


def write_final_states(path: Path, runs: Mapping[str, FinalState]) -> None:
    """Keep ``runs``' final states in ``path``, atomically (a failure to write is ignored)."""
    table = {
        run_id: {"state": state.value, "ended_at": ended}
        for run_id, (state, ended) in sorted(runs.items())
    }
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps({"version": 1, "runs": table}) + "\n")
