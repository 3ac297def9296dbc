"""A SkyPilot run's own files beside its task file: launch intent, request id, what was seen.

``<state>/compute/skypilot/<run id>/`` holds, besides ``spec.json``, ``worker.pyz`` and
``task.yaml``:

- ``launch.json``: the intent, written before the launch is sent (cluster, task file, the handle
  the run will have);
- ``request.json``: SkyPilot's request id, written by the bridge in SkyPilot's interpreter as soon
  as the API server names the request, before x-tui hears of it (``abandoned`` when x-tui never
  acknowledged it and the bridge undid the launch);
- ``launched.json`` / ``launch-failed.json``: the launch's answer, once known;
- ``final.json``: the run's final state, recorded the first time it is seen, so a cluster torn
  down afterwards takes nothing away;
- ``cancelled``: the run was cancelled from here;
- ``launch.log``: what SkyPilot printed while the launch was sent (the bridge's standard error,
  a file so that the bridge outlives an x-tui that dies meanwhile).

Every file is written once, atomically, with the facts it holds, so any number of processes (the
TUI's monitor, a CLI in another shell) read and write them without a lock: two writers write the
same facts. Nothing here is a substrax record; these files are x-tui's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from x_tui.compute.backend import RunState
from x_tui.compute.worker.record_files import RECORD_BYTES, read_json_file
from x_tui.compute.worker.records import RecordError, write_atomic

INTENT: Final = "launch.json"
REQUEST: Final = "request.json"
LAUNCHED: Final = "launched.json"
LAUNCH_FAILED: Final = "launch-failed.json"
FINAL: Final = "final.json"
CANCELLED: Final = "cancelled"
LAUNCH_LOG: Final = "launch.log"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = read_json_file(path, max_bytes=RECORD_BYTES)
    except (FileNotFoundError, RecordError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2))


@dataclass(frozen=True, kw_only=True, slots=True)
class Launch:
    """What is known of a run's launch.

    Attributes:
        state: ``launching`` (SkyPilot has the request, no answer yet), ``launched`` (the job is
            on its cluster), ``failed`` (it will never run), or ``lost`` (SkyPilot has no record
            of the request and no cluster: only the outputs can tell).
        request_id: SkyPilot's request id, when known.
        job_id: The job's id on its cluster, once launched.
        message: Why it failed.
    """

    state: str
    request_id: str | None = None
    job_id: int | None = None
    message: str = ""


class RunRecords:
    """The files of one run, under ``<runs>/<run id>/``."""

    def __init__(self, run_dir: Path) -> None:
        """Name the run's directory; nothing is read yet."""
        self.run_dir = run_dir

    def path(self, name: str) -> Path:
        """One of the run's files."""
        return self.run_dir / name

    def write_intent(self, *, cluster: str, task: str, handle: dict[str, Any]) -> None:
        """Record, before anything is sent, which cluster the run will launch and its handle."""
        _write(self.path(INTENT), {"cluster": cluster, "task": task, "handle": handle})

    def request(self) -> tuple[str | None, bool]:
        """The request id the bridge recorded, and whether it undid the launch."""
        data = _read(self.path(REQUEST)) or {}
        request_id = data.get("request_id")
        return (request_id if isinstance(request_id, str) else None), bool(data.get("abandoned"))

    def known_launch(self) -> Launch | None:
        """The launch's recorded answer, if one was recorded."""
        launched = _read(self.path(LAUNCHED))
        if launched is not None and isinstance(launched.get("job_id"), int):
            return Launch(
                state="launched",
                request_id=launched.get("request_id"),
                job_id=launched["job_id"],
            )
        failed = _read(self.path(LAUNCH_FAILED))
        if failed is not None:
            return Launch(
                state="failed",
                request_id=failed.get("request_id"),
                message=str(failed.get("message", "")),
            )
        return None

    def record_launched(self, *, request_id: str | None, job_id: int) -> Launch:
        """Record the launch's answer: its job is on the cluster."""
        _write(self.path(LAUNCHED), {"request_id": request_id, "job_id": job_id})
        return Launch(state="launched", request_id=request_id, job_id=job_id)

    def record_failed(self, *, request_id: str | None, message: str) -> Launch:
        """Record that the launch failed, and why."""
        _write(self.path(LAUNCH_FAILED), {"request_id": request_id, "message": message})
        return Launch(state="failed", request_id=request_id, message=message)

    def final(self) -> RunState | None:
        """The final state recorded for the run, if any."""
        data = _read(self.path(FINAL)) or {}
        try:
            state = RunState(data.get("state"))
        except ValueError:
            return None
        return state if state.is_final else None

    def record_final(self, state: RunState, *, seen: str) -> None:
        """Record the run's final state and where it was seen (``queue``, ``outputs``...)."""
        if state.is_final and self.run_dir.is_dir():
            _write(self.path(FINAL), {"state": state.value, "seen": seen})

    def cancelled(self) -> bool:
        """Whether the run was cancelled from here."""
        return self.path(CANCELLED).exists()

    def mark_cancelled(self) -> None:
        """Mark the run cancelled (first, so a status read meanwhile never says failed)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path(CANCELLED).touch()

    def unmark_cancelled(self) -> None:
        """Take the mark back: the run could not be stopped."""
        self.path(CANCELLED).unlink(missing_ok=True)
