"""The worker's retries bookkeeping: the retries table, ``attempts.json`` and earlier logs.

When a run asks for retries, every attempt of every task goes in ``<outputs>/attempts.json``
(rewritten after each attempt), and the logs of an attempt that is tried again are kept under
``<outputs>/attempts/<task>/<n>/`` so the task's own logs are always its latest attempt's.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. It never
runs a task or decides whether one is tried again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from x_tui.compute.worker.manifest import TaskStatus
from x_tui.compute.worker.records import write_atomic
from x_tui.compute.worker.spec import JobSpec

ATTEMPTS_NAME = "attempts.json"
"""x-tui's record of every attempt when retries were asked for, at the top of the outputs."""

ATTEMPTS_DIR = "attempts"
"""Where an earlier attempt's logs are kept: ``<outputs>/attempts/<task>/<n>/``."""


@dataclass(frozen=True)
class Attempt:
    """How one attempt of a task ended."""

    status: TaskStatus
    """Succeeded, failed or timed out."""
    returncode: int | None
    """The task's exit code, or ``None`` when it never ran."""
    seconds: float
    """How long the attempt took."""


def check_retries(spec: JobSpec, retries: Mapping[str, object]) -> dict[str, int]:
    """Check a retries table against a job.

    Args:
        spec: The job.
        retries: More attempts per task name.

    Returns:
        The table as task name to a count of at least 0.

    Raises:
        ValueError: If a name is not one of the job's tasks or a count is not an integer >= 0.
    """
    names = [task.name for task in spec.tasks]
    checked: dict[str, int] = {}
    for name, count in retries.items():
        if name not in names:
            raise ValueError(
                f"retries name the task {name!r}, which job {spec.name!r} does not have"
                f" (tasks: {', '.join(names)})"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"retries for task {name!r} must be an integer >= 0, not {count!r}")
        checked[name] = count
    return checked


class AttemptsFile:
    """Every attempt of a run so far, as ``attempts.json`` at the top of its outputs."""

    def __init__(self, outputs: Path) -> None:
        """Start an empty record; nothing is written until the first attempt.

        Args:
            outputs: The run's outputs directory.
        """
        self._path = outputs / ATTEMPTS_NAME
        self._entries: list[dict[str, Any]] = []

    def add(self, task: str, number: int, attempt: Attempt) -> None:
        """Record an attempt and rewrite the file atomically.

        Args:
            task: The task's name.
            number: The attempt's number, from 1.
            attempt: How it ended.

        Raises:
            OSError: If the file cannot be written.
        """
        self._entries.append(
            {
                "task": task,
                "attempt": number,
                "status": attempt.status.value,
                "returncode": attempt.returncode,
                "seconds": attempt.seconds,
            }
        )
        write_atomic(self._path, json.dumps(self._entries, indent=2) + "\n")


def keep_attempt_logs(outputs: Path, task: str, number: int, logs: Iterable[str]) -> None:
    """Move an attempt's logs to ``<outputs>/attempts/<task>/<number>/`` before the next one.

    Args:
        outputs: The run's outputs directory.
        task: The task's name.
        number: The attempt whose logs these are.
        logs: The log file names in the task's directory; a missing one is skipped.

    Raises:
        OSError: If the directory cannot be made or a log cannot be moved.
    """
    kept = outputs / ATTEMPTS_DIR / task / str(number)
    kept.mkdir(parents=True, exist_ok=True)
    for name in logs:
        source = outputs / task / name
        if source.exists():
            os.replace(source, kept / name)
