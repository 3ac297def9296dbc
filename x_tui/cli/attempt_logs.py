"""``x-tui logs RUN_ID --attempts``: every attempt of every retried task, under a header each.

The worker records each attempt in ``<outputs>/attempts.json`` and keeps an earlier attempt's
logs under ``<outputs>/attempts/<task>/<n>/``; the latest attempt's are the task's own
``<outputs>/<task>/``. They are read from wherever the run's outputs can be read: this machine
(``Capability.LOCAL_FILES``), a peek at the provider (``Capability.PEEK``), or a fetched copy
under ``fetch_root()/<run_id>``. Log lines are untrusted and go through the same writer as
``x-tui logs``. Printed::

    == flaky: attempt 1 of 3, failed (exit 7, 0.04 s) ==
    -- stdout --
    ...
    -- stderr --
    ...
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from x_tui.cli.output import log_writer, say
from x_tui.compute.backend import Capability, ComputeBackend, ability
from x_tui.compute.operations import fetch_root
from x_tui.compute.outputs import OutputTooLargeError, OutsideOutputsError, read_output
from x_tui.compute.retries import ATTEMPTS_DIR, ATTEMPTS_NAME, AttemptEntry, parse_attempts
from x_tui.compute.sanitize import escaped
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import BadRecordError, UserError
from x_tui.compute.worker.records import RecordError

Reader = Callable[[str], bytes | None]
"""Reads a file of the run's outputs by its relative path; ``None`` when it does not exist."""

STREAMS = ("stdout", "stderr")


class NoOutputsHere(UserError, LookupError):
    """A run whose outputs cannot be read from here until it is fetched."""


def outputs_reader(backend: ComputeBackend, handle: RunHandle) -> tuple[Reader, str]:
    """A reader of the run's outputs, and where it reads them, in words.

    Args:
        backend: The run's backend.
        handle: The run.

    Returns:
        The reader and its source.

    Raises:
        NoOutputsHere: If the backend neither keeps files here nor peeks, and the run was not
            fetched.
    """
    keeper = ability(backend, Capability.LOCAL_FILES)
    if keeper is not None:
        outputs = keeper.run_files(handle).outputs
        return _directory_reader(outputs), "this machine"
    fetched = fetch_root() / handle.run_id
    if fetched.is_dir():
        return _directory_reader(fetched), str(fetched)
    peeker = ability(backend, Capability.PEEK)
    if peeker is not None:
        return (lambda path: peeker.peek(handle, path)), f"the {handle.backend} backend"
    raise NoOutputsHere(
        f"the {handle.backend} backend cannot read {handle.run_id}'s outputs while it runs;"
        f" fetch them first: x-tui fetch {handle.run_id}"
    )


def _directory_reader(root: Path) -> Reader:
    def read(path: str) -> bytes | None:
        try:
            return read_output(root, path)
        except OSError:
            return None

    return read


def _header(entry: AttemptEntry, total: int) -> str:
    facts = []
    if entry.returncode is not None:
        facts.append(f"exit {entry.returncode}")
    if entry.seconds is not None:
        facts.append(f"{entry.seconds:.2f} s")
    detail = f" ({', '.join(facts)})" if facts else ""
    return (
        f"== {escaped(entry.task)}: attempt {entry.attempt} of {total},"
        f" {escaped(entry.status)}{detail} =="
    )


def print_attempts(backend: ComputeBackend, handle: RunHandle) -> bool:
    """Print every recorded attempt of the run's retried tasks with its logs.

    Args:
        backend: The run's backend.
        handle: The run.

    Returns:
        Whether the run has an attempts record (``False``: no task was retried, nothing printed).

    Raises:
        NoOutputsHere: If the run's outputs cannot be read from here.
        BadRecordError: If ``attempts.json`` cannot be read; the message names it.
    """
    read, source = outputs_reader(backend, handle)
    raw = read(ATTEMPTS_NAME)
    if raw is None:
        return False
    try:
        entries = parse_attempts(raw, where=f"{handle.run_id}/{ATTEMPTS_NAME} ({source})")
    except RecordError as error:
        raise BadRecordError(str(error)) from None
    latest: dict[str, int] = {}
    for entry in entries:
        latest[entry.task] = max(latest.get(entry.task, 0), entry.attempt)
    write = log_writer()
    for entry in entries:
        say(_header(entry, latest[entry.task]))
        if entry.attempt == latest[entry.task]:
            folder = entry.task
        else:
            folder = f"{ATTEMPTS_DIR}/{entry.task}/{entry.attempt}"
        for stream in STREAMS:
            try:
                data = read(f"{folder}/{stream}.log")
            except (OutsideOutputsError, OutputTooLargeError) as error:
                say(f"-- {stream} --")
                say(f"(not shown: {escaped(str(error))})")
                continue
            if not data:
                continue
            say(f"-- {stream} --")
            for line in data.decode("utf-8", "replace").splitlines():
                write(line)
    return True
