"""What a run did, task by task: ``JobManifest`` (version 2, with ``devices``).

The worker writes ``<outputs>/manifest.json`` after every task; every backend and the UI read it.
The layout is substrax's, so neither tool adds keys to it. Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.worker.record_files import MANIFEST_BYTES, parse_json, read_json_file
from x_tui.compute.worker.records import RecordError, dumps_pretty, read_record, write_atomic

MANIFEST_VERSION = 2
"""The manifest layout this release writes and reads."""

MANIFEST_NAME = "manifest.json"
"""The manifest's file name at the top of a run's outputs."""

DEVICES_LOG = "devices.log"
"""The device probe's output when it fails, at the top of a run's outputs."""


class TaskStatus(str, enum.Enum):
    """How a task ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed-out"


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskOutcome:
    """What one task did.

    Attributes:
        name: The task.
        argv: The command that ran, with ``python`` resolved to the interpreter.
        status: How it ended.
        returncode: Its exit code; ``None`` when it could not start or had no time left.
        seconds: Wall-clock seconds from start to end.
        outputs: The files it wrote under its directory, relative to it, without the logs.
    """

    name: str
    argv: tuple[str, ...]
    status: TaskStatus
    returncode: int | None
    seconds: float
    outputs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunDevices:
    """The devices a run saw, which the provider allocated for the requested ones.

    Attributes:
        platform: The default backend, as JAX names it (``"gpu"``, ``"cpu"``, ``"tpu"``).
        kinds: One device kind per device, such as ``"NVIDIA H200"``.
    """

    platform: str
    kinds: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class JobManifest:
    """What a run of a job did, task by task.

    Attributes:
        schema_version: The layout of this record.
        job: The job's name.
        tasks: The tasks that ran, in order.
        finished: Whether the worker ran every task; a run cut short leaves it ``False``.
        devices: The devices the run saw; ``None`` when the probe failed.
    """

    schema_version: int = MANIFEST_VERSION
    job: str
    tasks: tuple[TaskOutcome, ...] = ()
    finished: bool = False
    devices: RunDevices | None = None

    @property
    def succeeded(self) -> bool:
        """Whether every task succeeded (a manifest with no tasks counts as succeeded)."""
        return all(task.status is TaskStatus.SUCCEEDED for task in self.tasks)


def read_manifest(data: object) -> JobManifest:
    """Read a manifest from its parsed JSON object.

    Raises:
        RecordError: If the version is not this release's (naming both), or a field does not
            match its type.
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a manifest is a JSON object, not {type(data).__name__}")
    version = data.get("schema_version")
    if version != MANIFEST_VERSION or isinstance(version, bool):
        raise RecordError(
            f"manifest version {version!r} is not the version this x-tui reads ({MANIFEST_VERSION})"
        )
    return read_record(JobManifest, data)


def load_manifest(path: Path) -> JobManifest | None:
    """Read the manifest file at ``path``; ``None`` when there is none yet.

    The file is read through the one bounded reader (:mod:`x_tui.compute.worker.record_files`): a
    link, a FIFO, a directory or any file that is not regular, too large or too deep is refused.

    Raises:
        RecordError: If the file cannot be read, is not JSON or not a manifest; the message names
            the file and says why.
    """
    try:
        return read_manifest(read_json_file(path, max_bytes=MANIFEST_BYTES))
    except FileNotFoundError:
        return None
    except RecordError as error:
        raise RecordError(f"{path}: {error}") from None


def parse_manifest(text: str | bytes, *, source: str) -> JobManifest:
    """Read a manifest from its JSON text.

    Raises:
        RecordError: If the text is not JSON or not a manifest; the message names ``source``.
    """
    try:
        data = parse_json(text, max_bytes=MANIFEST_BYTES)
        return read_manifest(data)
    except RecordError as error:
        raise RecordError(f"{source}: {error}") from None


def write_manifest(outputs: Path, manifest: JobManifest) -> None:
    """Write ``<outputs>/manifest.json`` atomically."""
    write_atomic(outputs / MANIFEST_NAME, dumps_pretty(manifest))
