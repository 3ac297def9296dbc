"""The guard side files of a state directory: ``<state>/x-tui/guards/<run_id>.json``.

Each holds one run's :class:`~x_tui.compute.run_guards.RunGuard`: written whole and atomically,
read through :mod:`x_tui.compute.worker.record_files` (bounded, a regular file only, found only
under its own run id, its links checked to be run ids): a damaged one reads as no guard, and says
why.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from x_tui.compute.run_guards import MAX_PREEMPTION_RETRIES, RunGuard
from x_tui.compute.store import check_run_id
from x_tui.compute.worker.record_files import HANDLE_BYTES, read_json_file
from x_tui.compute.worker.records import RecordError, write_atomic


def _guard_from(data: object, run_id: str) -> RunGuard:
    if not isinstance(data, dict) or data.get("run_id") != run_id:
        raise RecordError(f"not the guard of run {run_id}")

    def number(key: str) -> float | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RecordError(f"{key} is {value!r}, not a number")
        if not math.isfinite(value) or value <= 0:
            raise RecordError(f"{key} is {value!r}, not a positive number")
        return float(value)

    def link(key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise RecordError(f"{key} is {value!r}, not a run id")
        return check_run_id(value)

    retries = data.get("preemption_retries", 0)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise RecordError(f"preemption_retries is {retries!r}, not a count")
    return RunGuard(
        max_cost_usd=number("max_cost_usd"),
        max_duration_seconds=number("max_duration_seconds"),
        preemption_retries=min(retries, MAX_PREEMPTION_RETRIES),
        hourly_usd=number("hourly_usd"),
        resubmitted_from=link("resubmitted_from"),
        resubmitted_as=link("resubmitted_as"),
    )


class GuardBook:
    """The guard side files of one state directory: ``<state>/x-tui/guards/<run_id>.json``."""

    def __init__(self, state_dir: Path) -> None:
        """Keep guards under ``state_dir``."""
        self.root = state_dir / "x-tui" / "guards"

    def path_of(self, run_id: str) -> Path:
        """The side file of ``run_id``.

        Raises:
            RunNotFoundError: If ``run_id`` is not a run id.
        """
        return self.root / f"{check_run_id(run_id)}.json"

    def write(self, run_id: str, guard: RunGuard) -> None:
        """Write (replace) the guard of ``run_id`` atomically.

        Raises:
            OSError: If it cannot be written.
        """
        write_atomic(self.path_of(run_id), json.dumps(guard.to_json(run_id), indent=2) + "\n")

    def load(self, run_id: str) -> RunGuard:
        """The guard of ``run_id``; an empty one when it has none or it cannot be read."""
        guard, _problem = self.read(run_id)
        return guard

    def read(self, run_id: str) -> tuple[RunGuard, str | None]:
        """The guard of ``run_id`` and, when its file cannot be read, why (it reads as none)."""
        path = self.path_of(run_id)
        try:
            data = read_json_file(path, max_bytes=HANDLE_BYTES)
            return _guard_from(data, run_id), None
        except FileNotFoundError:
            return RunGuard(), None
        except (RecordError, OSError, ValueError, LookupError) as error:
            return RunGuard(), f"{path}: {error}"

    def remove(self, run_id: str) -> None:
        """Remove the guard of ``run_id`` (a run that never started)."""
        self.path_of(run_id).unlink(missing_ok=True)
