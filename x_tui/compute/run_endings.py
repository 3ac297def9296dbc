"""Why a run ended, when something other than its tasks ended it: x-tui's ending side file.

``<state>/x-tui/endings/<run_id>.json`` says, in words, why a run reached its final state when
neither its tasks nor the user's cancel did: the watcher cancelled it over its budget, or the
provider took its machine away (a preempted spot cluster, with the provider's reason). It is
written before the act it explains where there is one (the watcher writes it, then cancels), so
a run is never found stopped without its reason; the first reason written stays.

``status`` and the TUI show it beside the run's state. Reads are bounded
(:mod:`x_tui.compute.worker.record_files`); the reason is untrusted text (it may quote a provider)
and is sanitised where it is shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.store import check_run_id
from x_tui.compute.worker.record_files import HANDLE_BYTES, read_json_file
from x_tui.compute.worker.records import JsonValue, RecordError, write_atomic

MAX_REASON_CHARS = 2000
"""The longest reason kept."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEnding:
    """Why a run ended.

    Attributes:
        state: The state it ended in (``cancelled``, ``preempted``).
        reason: Why, in words (``"over budget: cost $5.01 of $5.00"``).
        by: Who ended it: ``watcher`` (a budget) or ``provider`` (a preemption).
        at: When it was recorded (epoch seconds).
    """

    state: str
    reason: str
    by: str
    at: float

    def describe(self) -> dict[str, JsonValue]:
        """The ending as JSON (``state``, ``reason``, ``by``, ``at``)."""
        return {"state": self.state, "reason": self.reason, "by": self.by, "at": self.at}


def endings_dir(state_dir: Path) -> Path:
    """Where the ending side files of ``state_dir`` are kept."""
    return state_dir / "x-tui" / "endings"


class EndingBook:
    """The ending side files of one state directory."""

    def __init__(self, state_dir: Path) -> None:
        """Keep endings under ``<state_dir>/x-tui/endings``."""
        self.root = endings_dir(state_dir)

    def path_of(self, run_id: str) -> Path:
        """The side file of ``run_id``.

        Raises:
            RunNotFoundError: If ``run_id`` is not a run id.
        """
        return self.root / f"{check_run_id(run_id)}.json"

    def record(self, run_id: str, ending: RunEnding) -> RunEnding:
        """Record why ``run_id`` ends, unless a reason is already recorded.

        Returns:
            The ending that stands (the earlier one when there was one).

        Raises:
            OSError: If it cannot be written.
        """
        known = self.load(run_id)
        if known is not None:
            return known
        data = {"run_id": run_id, **ending.describe(), "reason": ending.reason[:MAX_REASON_CHARS]}
        write_atomic(self.path_of(run_id), json.dumps(data, indent=2) + "\n")
        return ending

    def load(self, run_id: str) -> RunEnding | None:
        """Why ``run_id`` ended, or ``None`` when nothing (readable) says."""
        try:
            data = read_json_file(self.path_of(run_id), max_bytes=HANDLE_BYTES)
        except (FileNotFoundError, RecordError, OSError, ValueError, LookupError):
            return None
        if not isinstance(data, dict) or data.get("run_id") != run_id:
            return None
        state, reason, by, at = (data.get(key) for key in ("state", "reason", "by", "at"))
        if not (isinstance(state, str) and isinstance(reason, str) and isinstance(by, str)):
            return None
        if isinstance(at, bool) or not isinstance(at, (int, float)):
            return None
        return RunEnding(state=state, reason=reason[:MAX_REASON_CHARS], by=by, at=float(at))
