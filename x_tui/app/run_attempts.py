"""A retried task's earlier attempts: what the worker recorded of each, and where their logs are.

``<outputs>/attempts.json`` (x-tui's own record of retried tasks, beside substrax's manifest,
which it does not change) is the worker's list of every attempt, ``[{"task": ..., "attempt": n,
"status": ..., "returncode": ..., "seconds": ...}, ...]``; an earlier attempt's logs are moved to
``<outputs>/attempts/<task>/<n>/stdout.log`` and ``stderr.log`` before the next attempt starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.outputs import list_output_dir
from x_tui.compute.worker.attempts import ATTEMPTS_DIR, ATTEMPTS_NAME
from x_tui.compute.worker.manifest import JobManifest
from x_tui.compute.worker.record_files import RECORD_BYTES, parse_json
from x_tui.compute.worker.records import RecordError
from x_tui.compute.worker.spec import check_name


@dataclass(frozen=True, kw_only=True, slots=True)
class Attempt:
    """One earlier try of a retried task.

    Attributes:
        number: Which try (1 is the first).
        status: How it ended, as recorded (``failed``, ``timed-out``...).
        returncode: Its exit code, when it had one.
        seconds: How long it ran, when recorded.
    """

    number: int
    status: str = "unknown"
    returncode: int | None = None
    seconds: float | None = None


def read_attempts(text: str | bytes) -> dict[str, tuple[Attempt, ...]]:
    """Read ``attempts.json``: every recorded attempt of every task.

    Args:
        text: The file's content.

    Returns:
        Each task's recorded attempts, in attempt order.

    Raises:
        RecordError: If it is not the worker's list of attempts; the message says what is wrong.
    """
    try:
        data = parse_json(text, max_bytes=RECORD_BYTES)
    except RecordError as error:
        raise RecordError(f"{ATTEMPTS_NAME}: {error}") from None
    if not isinstance(data, list):
        raise RecordError(f"{ATTEMPTS_NAME}: expected an array of attempts")
    attempts: dict[str, list[Attempt]] = {}
    for index, record in enumerate(data):
        task, attempt = _attempt(index, record)
        attempts.setdefault(task, []).append(attempt)
    return {task: tuple(sorted(found, key=lambda a: a.number)) for task, found in attempts.items()}


def _attempt(index: int, record: object) -> tuple[str, Attempt]:
    where = f"{ATTEMPTS_NAME}: [{index}]"
    if not isinstance(record, dict):
        raise RecordError(f"{where}: expected an object")
    task = record.get("task")
    number = record.get("attempt")
    status = record.get("status", "unknown")
    code = record.get("returncode")
    seconds = record.get("seconds")
    try:
        check_name("task", task)  # type: ignore[arg-type]
    except ValueError as error:
        raise RecordError(f"{where}.task: {error}") from None
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise RecordError(f"{where}.attempt: expected a positive integer, got {number!r}")
    if not isinstance(status, str):
        raise RecordError(f"{where}.status: expected a string, got {status!r}")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        raise RecordError(f"{where}.returncode: expected an integer or null, got {code!r}")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
        raise RecordError(f"{where}.seconds: expected a number or null, got {seconds!r}")
    attempt = Attempt(
        number=number,
        status=status,
        returncode=code,
        seconds=float(seconds) if seconds is not None else None,
    )
    return str(task), attempt


def earlier_attempts(
    recorded: Mapping[str, tuple[Attempt, ...]],
    manifest: JobManifest | None,
    kept: Mapping[str, tuple[int, ...]] | None,
) -> dict[str, tuple[Attempt, ...]]:
    """The attempts of each task that are not its latest, whose logs were moved aside.

    Args:
        recorded: Every recorded attempt, from ``attempts.json``.
        manifest: The manifest; a task it lists has ended, so its last recorded attempt is the
            latest one, whose logs are ``<task>/stdout.log``.
        kept: Each task's attempt numbers whose logs are under ``attempts/<task>/``, when the
            outputs can be listed here; that is then the answer.

    Returns:
        Each retried task's earlier attempts, oldest first (tasks never retried are left out).
    """
    ended = {task.name for task in manifest.tasks} if manifest is not None else set()
    earlier: dict[str, tuple[Attempt, ...]] = {}
    for task in set(recorded) | set(kept or {}):
        attempts = {attempt.number: attempt for attempt in recorded.get(task, ())}
        if kept is not None:
            numbers = kept.get(task, ())
        elif attempts:
            last = max(attempts)
            ran_again = task not in ended and attempts[last].status != "succeeded"
            numbers = tuple(n for n in sorted(attempts) if n < last or ran_again)
        else:
            numbers = ()
        found = tuple(attempts.get(n, Attempt(number=n)) for n in numbers)
        if found:
            earlier[task] = found
    return earlier


def attempt_dirs(outputs: Path, task: str) -> tuple[int, ...]:
    """The earlier attempts whose logs are kept under ``<outputs>/attempts/<task>/``, in order.

    Read by the outputs' rule: a link among them (or in their place) is not followed.
    """
    check_name("task", task)
    names = list_output_dir(outputs, f"{ATTEMPTS_DIR}/{task}")
    return tuple(sorted(int(name) for name in names if name.isdigit() and name.isascii()))


def kept_attempts(outputs: Path) -> dict[str, tuple[int, ...]]:
    """Each task's attempt numbers whose logs are kept under ``<outputs>/attempts/``."""
    tasks = list_output_dir(outputs, ATTEMPTS_DIR)
    kept: dict[str, tuple[int, ...]] = {}
    for task in tasks:
        try:
            check_name("task", task)
        except ValueError:
            continue
        numbers = attempt_dirs(outputs, task)
        if numbers:
            kept[task] = numbers
    return kept
