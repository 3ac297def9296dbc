"""The final states of runs, kept across sessions in ``<state>/x-tui/final-states.json``.

A run seen to end is never asked about again, in this session or the next: its state and when it
ended are written here, ``{"version": 1, "runs": {run_id: {"state": ..., "ended_at": ...}}}``.
An entry that cannot be read is skipped, and a file that cannot be read or written is no error
(the runs are then asked about again).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path

from x_tui.compute.backend import RunState
from x_tui.compute.records import write_atomic

FinalState = tuple[RunState, float | None]
"""A finished run's state and when it ended (an epoch time), if known."""


def read_final_states(path: Path) -> dict[str, FinalState]:
    """The final states kept in ``path``, by run id (empty when there are none to read)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        runs = data["runs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(runs, dict):
        return {}
    found: dict[str, FinalState] = {}
    for run_id, entry in runs.items():
        try:
            state = RunState(entry["state"])
            moment = entry["ended_at"]
            ended = None if moment is None else float(moment)
        except (KeyError, TypeError, ValueError):
            continue
        if state.is_final:
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
