"""How many more times a failed task is tried: the job table's ``retries``, and the worker's file.

A job table may say (Nodus's ``retries``)::

    retries = 2                                        # every task: up to 2 more attempts
    retries = { default = 1, tasks = { train = 3 } }   # 1 for each task, 3 for ``train``

A failed or timed-out task is run again, within its own budget and what is left of the job's,
until it succeeds or its attempts run out. The worker does the trying (``--retries FILE``, a JSON
object ``{"<task>": more attempts}``): :meth:`RetryPolicy.worker_table` is that object and
:func:`write_retries_file` writes it beside the staged run. Every attempt is recorded in
``<outputs>/attempts.json`` and an earlier attempt's logs are kept under
``<outputs>/attempts/<task>/<n>/`` (see :mod:`x_tui.compute.worker.attempts`); the manifest keeps
substrax's layout.

This module reads and writes the declaration only; it never runs a task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from x_tui.compute.worker.errors import ConfigError, did_you_mean
from x_tui.compute.worker.records import JsonValue, write_atomic
from x_tui.compute.worker.spec import check_name

KEY = "retries"
"""The job table's key."""

RETRIES_NAME = "retries.json"
"""The worker's retries file, written beside a staged run's ``spec.json``."""

MAX_RETRIES = 100
"""The most retries one task may have: a larger count is taken for a typo."""

_TABLE_KEYS = ("default", "tasks")
_FORMS = "a count such as 2, or a table such as { default = 1, tasks = { train = 3 } }"


def _check_count(where: str, count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_RETRIES:
        raise ValueError(f"{where}: expected a whole number from 0 to {MAX_RETRIES}, got {count!r}")
    return count


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How many more attempts each task of a job gets after a failure.

    Attributes:
        default: More attempts for every task not named in ``tasks``.
        tasks: More attempts by task name.
    """

    default: int = 0
    tasks: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check the counts.

        Raises:
            ValueError: If a count is not a whole number from 0 to :data:`MAX_RETRIES`.
        """
        _check_count("default", self.default)
        for name, count in self.tasks.items():
            _check_count(f"tasks.{name}", count)

    def __bool__(self) -> bool:
        """Whether any task is tried more than once."""
        return bool(self.default or any(self.tasks.values()))

    def for_task(self, name: str) -> int:
        """More attempts for task ``name``."""
        return self.tasks.get(name, self.default)

    def worker_table(self, tasks: Sequence[str]) -> dict[str, int]:
        """The worker's ``--retries`` object for a job's tasks.

        Args:
            tasks: The job's task names.

        Returns:
            ``{"<task>": more attempts}`` for every task with at least one.
        """
        return {name: self.for_task(name) for name in tasks if self.for_task(name) > 0}

    def describe(self, tasks: Sequence[str]) -> dict[str, JsonValue]:
        """The policy for a plan: the default and each task's count."""
        return {"default": self.default, "tasks": {name: self.for_task(name) for name in tasks}}


def read_retries(value: JsonValue, *, where: str, tasks: Sequence[str]) -> RetryPolicy:
    """Read a job table's ``retries``.

    Args:
        value: The value, as TOML gave it: a count, or a table of ``default`` and ``tasks``.
        where: The file and table, for messages.
        tasks: The job's task names; ``tasks`` may name only these.

    Returns:
        The policy.

    Raises:
        ConfigError: If the value is neither form, a count is out of range, a key is unknown, or
            a task is not one of the job's; the message names the file, table, key and value.
    """
    if not isinstance(value, dict):
        try:
            return RetryPolicy(default=_check_count(KEY, value))
        except ValueError as error:
            raise ConfigError(f"{where} {error} ({_FORMS})") from None
    for key in value:
        if key not in _TABLE_KEYS:
            raise ConfigError(
                f"{where} {KEY}: unknown key {key!r}{did_you_mean(key, _TABLE_KEYS)}"
                + (
                    f"; a task's count goes in tasks, such as tasks = {{ {key} = N }}"
                    if key in tasks
                    else ""
                )
            )
    named = value.get("tasks", {})
    if not isinstance(named, dict):
        raise ConfigError(f"{where} {KEY}.tasks: expected a table of counts by task, got {named!r}")
    for name in named:
        if name not in tasks:
            raise ConfigError(
                f"{where} {KEY}.tasks: the job has no task {name!r}"
                f"{did_you_mean(name, list(tasks))}"
            )
    try:
        return RetryPolicy(default=value.get("default", 0), tasks=dict(named))
    except ValueError as error:
        raise ConfigError(f"{where} {KEY}.{error}") from None


def write_retries_file(
    run_dir: Path, table: Mapping[str, int], *, step: Callable[[str], None] | None = None
) -> Path | None:
    """Write the worker's retries file beside a staged run's spec.

    Args:
        run_dir: The staged run's directory.
        table: :meth:`RetryPolicy.worker_table`.
        step: Called after each step of the write (see ``records.write_atomic``).

    Returns:
        ``<run_dir>/retries.json``, or ``None`` (nothing written) when no task is retried.
    """
    if not table:
        return None
    path = run_dir / RETRIES_NAME
    write_atomic(path, json.dumps(dict(table), indent=2) + "\n", step=step)
    return path


ATTEMPTS_NAME = "attempts.json"
"""The worker's record of every attempt, at the top of a run's outputs (when retries were asked)."""

ATTEMPTS_DIR = "attempts"
"""Where an earlier attempt's logs are kept: ``<outputs>/attempts/<task>/<n>/``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AttemptEntry:
    """One attempt of a task, as the worker recorded it in ``attempts.json``.

    Attributes:
        task: The task's name.
        attempt: Which attempt, from 1.
        status: How it ended (``succeeded``, ``failed``, ``timed-out``).
        returncode: Its exit code, or ``None`` when it never ran.
        seconds: How long it took.
    """

    task: str
    attempt: int
    status: str
    returncode: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        """Check the task's name (it names a directory) and the attempt's number.

        Raises:
            ValueError: If the name is not one path component, or the number is below 1.
        """
        check_name("task", self.task)
        if self.attempt < 1:
            raise ValueError(f"attempt must be at least 1, not {self.attempt}")


def parse_attempts(text: str | bytes, *, where: str = ATTEMPTS_NAME) -> tuple[AttemptEntry, ...]:
    """Read the worker's ``attempts.json``.

    Args:
        text: The file's content.
        where: The file, for messages.

    Returns:
        Every attempt, grouped by task in the order the tasks first appear, oldest first.

    Raises:
        RecordError: If it is not JSON, or not an array of attempts; the message says where.
    """
    from x_tui.compute.worker.record_files import RECORD_BYTES, parse_json
    from x_tui.compute.worker.records import RecordError, read_record

    try:
        data = parse_json(text, max_bytes=RECORD_BYTES)
    except RecordError as error:
        raise RecordError(f"{where}: {error}") from None
    if not isinstance(data, list):
        raise RecordError(f"{where}: expected an array of attempts, got {type(data).__name__}")
    entries = [
        read_record(AttemptEntry, item, where=f"{where}[{index}]")
        for index, item in enumerate(data)
    ]
    order = list(dict.fromkeys(entry.task for entry in entries))
    return tuple(sorted(entries, key=lambda entry: (order.index(entry.task), entry.attempt)))
