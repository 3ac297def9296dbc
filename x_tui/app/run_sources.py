"""What a run's files say, read from wherever they are: this machine, a peek, or a fetched copy.

The run screen shows a run's manifest, device probe failure, retries and spec, and each task's
logs. Where those files are depends on the backend: a local run keeps them here (the backend
names them); a remote backend that can peek reads them one by one while the run goes on; once a
run is fetched, the copy under ``operations.fetch_root()`` holds them all. This module reads them
from the best of those places, blocking (call it from a thread worker), and never touches a
widget. It imports no Textual.

A retried task's earlier attempts are read by :mod:`x_tui.app.run_attempts`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from x_tui.app.run_attempts import (
    Attempt,
    earlier_attempts,
    kept_attempts,
    read_attempts,
)
from x_tui.app.service import Service
from x_tui.compute import operations
from x_tui.compute.backend import SPEC_NAME, RunFiles
from x_tui.compute.outputs import (
    OutputTooLargeError,
    OutsideOutputsError,
    output_file,
    read_output,
)
from x_tui.compute.store import RunHandle, backend_state_dir
from x_tui.compute.telemetry_read import RunMetrics, Telemetry, read_metrics, read_telemetry
from x_tui.compute.worker.attempts import ATTEMPTS_DIR, ATTEMPTS_NAME
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.log_metrics import METRICS_NAME
from x_tui.compute.worker.manifest import DEVICES_LOG, MANIFEST_NAME, JobManifest, parse_manifest
from x_tui.compute.worker.record_files import (
    RECORD_BYTES,
    UnreadableRecordError,
    read_json_file,
)
from x_tui.compute.worker.records import RecordError
from x_tui.compute.worker.spec import JobSpec, check_name, read_job_spec
from x_tui.compute.worker.telemetry import TELEMETRY_NAME

STREAMS = ("stdout", "stderr")
"""A task's two log streams, each ``<task>/<stream>.log``."""

MAX_DEVICES_LOG = 64 * 1024
"""At most this much of ``devices.log`` is shown (its start, where the probe's error is)."""

MAX_FILES_LISTED = 1000
"""At most this many files of a running task are listed (the walk stops there)."""

MAX_LAST_LINE = 4096
"""Bytes read from the end of the combined log for its last line."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TaskProgress:
    """A task that has a directory but no outcome in the manifest yet: the one running.

    Attributes:
        name: The task (its directory's name).
        started_at: When it started (seconds since the epoch): when the manifest before it was
            written; ``None`` when there is no manifest to tell.
        files: The files it wrote so far, relative POSIX paths, sorted, without its logs.
        more: Whether it wrote more than :data:`MAX_FILES_LISTED` (the list is cut).
    """

    name: str
    started_at: float | None
    files: tuple[str, ...]
    more: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSnapshot:
    """What a run's files said when they were last read.

    Attributes:
        manifest: The manifest, or ``None`` when there is none yet (or it cannot be read).
        manifest_problem: Why the manifest cannot be read, when it cannot.
        devices_log: The device probe's failure text, when the probe failed.
        attempts: Each retried task's earlier attempts (not its latest), oldest first.
        attempts_problem: Why ``attempts.json`` cannot be read, when it cannot.
        source: Where these files were read from, for the user (``"this machine"``...).
        reachable: Whether the files could be read at all (a remote run without peek or a
            fetched copy has none to read).
        in_progress: The tasks with a directory but no outcome yet, by name (read only where
            the outputs are on this machine).
        last_log_line: The combined log's last line (untrusted), where it is on this machine.
        telemetry: The worker's device and process samples (``telemetry.jsonl``), if any.
        metrics: The metrics and progress the worker found in the logs (``metrics.jsonl``).
    """

    manifest: JobManifest | None = None
    manifest_problem: str | None = None
    devices_log: str | None = None
    attempts: Mapping[str, tuple[Attempt, ...]] = field(default_factory=dict)
    attempts_problem: str | None = None
    source: str = ""
    reachable: bool = True
    in_progress: Mapping[str, TaskProgress] = field(default_factory=dict)
    last_log_line: str | None = None
    telemetry: Telemetry | None = None
    metrics: RunMetrics = field(default_factory=RunMetrics)


def fetched_copy(handle: RunHandle) -> Path | None:
    """The run's fetched outputs under ``operations.fetch_root()``, if it was fetched there."""
    copy = operations.fetch_root() / handle.run_id
    return copy if (copy / MANIFEST_NAME).is_file() else None


class RunReader:
    """Reads one run's files through the service, from the best place they can be read."""

    def __init__(self, service: Service, handle: RunHandle) -> None:
        """Read the files of ``handle``'s run.

        Args:
            service: The service, which knows the run's backend.
            handle: The run.
        """
        self.service = service
        self.handle = handle
        self._files: RunFiles | None = None
        self._files_known = False
        self.peek_cache = service.state_dir / "x-tui" / "peek" / handle.run_id

    def files(self) -> RunFiles | None:
        """The run's files on this machine, when its backend keeps them here (asked once)."""
        if not self._files_known:
            try:
                self._files = self.service.run_files(self.handle)
            except UserError:
                self._files = None
            self._files_known = True
        return self._files

    def outputs_dir(self) -> Path | None:
        """A directory on this machine that holds the run's outputs: its own, or a fetched copy."""
        files = self.files()
        if files is not None:
            return files.outputs
        return fetched_copy(self.handle)

    def read(self, relative: str) -> bytes | None:
        """One file of the run's outputs, or ``None`` when there is none (yet).

        Raises:
            UnreadableRecordError: If the file is a link, a special file or too large
                (:mod:`x_tui.compute.outputs`' rule); the message says why.
            UserError: If the backend cannot be built or did not answer in time.
        """
        outputs = self.outputs_dir()
        if outputs is not None:
            try:
                return read_output(outputs, relative)
            except OSError:
                return None
            except (OutsideOutputsError, OutputTooLargeError) as error:
                # Refused by the outputs' one rule: named like any unreadable record, and the
                # run's other files are still read.
                raise UnreadableRecordError(str(error)) from None
        return self.service.peek(self.handle, relative)

    def source(self) -> str:
        """Where this run's files are read from, in words."""
        if self.files() is not None:
            return "this machine"
        copy = fetched_copy(self.handle)
        if copy is not None:
            return f"the fetched copy in {copy}"
        return f"{self.handle.backend} (peeking while it runs)"

    def snapshot(self) -> RunSnapshot:
        """Read the manifest, the probe's failure text and the retries, as they are now.

        Returns:
            What the files say; a file that cannot be read is named with the reason instead.
        """
        source = self.source()
        problem: str | None = None
        try:
            manifest_bytes = self.read(MANIFEST_NAME)
        except UnreadableRecordError as error:
            problem = f"{MANIFEST_NAME}: {error}"
            manifest_bytes = None
        except Exception as error:  # a provider's failure is reported, never raised to the UI
            reachable = self.outputs_dir() is not None  # here, but refused by the outputs' rule
            return RunSnapshot(manifest_problem=_reason(error), source=source, reachable=reachable)
        manifest: JobManifest | None = None
        if manifest_bytes is not None:
            try:
                manifest = parse_manifest(manifest_bytes, source=MANIFEST_NAME)
            except RecordError as error:
                problem = str(error)
        devices_log: str | None = None
        attempts: dict[str, tuple[Attempt, ...]] = {}
        attempts_problem: str | None = None
        raw_devices: bytes | None = None
        raw_attempts: bytes | None = None
        try:
            if manifest is None or manifest.devices is None:
                try:
                    raw_devices = self.read(DEVICES_LOG)
                except UnreadableRecordError as error:
                    devices_log = f"{DEVICES_LOG}: {error}"
            raw_attempts = self.read(ATTEMPTS_NAME)
        except UnreadableRecordError as error:
            attempts_problem = f"{ATTEMPTS_NAME}: {error}"
        except Exception as error:  # as above
            raw_devices, raw_attempts = None, None
            attempts_problem = _reason(error)
        if raw_devices is not None:
            devices_log = raw_devices[:MAX_DEVICES_LOG].decode("utf-8", errors="replace")
        if raw_attempts is not None:
            try:
                attempts = read_attempts(raw_attempts)
            except RecordError as error:
                attempts_problem = str(error)
        telemetry, metrics = self._side_files()
        outputs = self.outputs_dir()
        kept = kept_attempts(outputs) if outputs is not None else None
        attempts = earlier_attempts(attempts, manifest, kept)
        reachable = manifest_bytes is not None or outputs is not None or self._can_peek()
        files = self.files()
        return RunSnapshot(
            in_progress=_in_progress(outputs, manifest) if outputs is not None else {},
            last_log_line=_last_line(files.worker_log) if files is not None else None,
            manifest=manifest,
            manifest_problem=problem,
            devices_log=devices_log,
            attempts=attempts,
            attempts_problem=attempts_problem,
            source=source,
            reachable=reachable,
            telemetry=telemetry,
            metrics=metrics,
        )

    def _side_files(self) -> tuple[Telemetry | None, RunMetrics]:
        """The worker's telemetry and metrics side files, as far as they can be read."""
        try:
            return read_telemetry(self.read(TELEMETRY_NAME)), read_metrics(self.read(METRICS_NAME))
        except Exception:  # the side files are extras, never a failure of the run
            return None, RunMetrics()

    def _can_peek(self) -> bool:
        from x_tui.compute.backend import Capability, capabilities_of

        try:
            return Capability.PEEK in capabilities_of(self.service.backend(self.handle))
        except UserError:
            return False

    def spec(self) -> tuple[JobSpec | None, str]:
        """The spec the run was staged with, and where it was read from (or why it was not).

        Returns:
            ``(spec, note)``; ``spec`` is ``None`` when no staged spec is kept on this machine.
        """
        for path in self._spec_candidates():
            try:
                data = read_json_file(path, max_bytes=RECORD_BYTES)
            except FileNotFoundError:
                continue
            except RecordError as error:
                return None, f"{path}: {error}"
            if not isinstance(data, Mapping):
                return None, f"{path}: a spec is a JSON object, not {type(data).__name__}"
            try:
                return read_job_spec(data), f"staged spec: {path}"
            except (ValueError, RecordError) as error:
                return None, f"{path}: {error}"
        return None, f"no staged spec of this {self.handle.backend} run is kept on this machine"

    def _spec_candidates(self) -> list[Path]:
        candidates: list[Path] = []
        run_dir = self.handle.details.get("run_dir")
        if run_dir:
            candidates.append(Path(run_dir) / SPEC_NAME)
        files = self.files()
        if files is not None:
            candidates.append(files.worker_log.parent / SPEC_NAME)
        state_dir = self.handle.settings.get("state_dir")
        root = backend_state_dir(
            state_dir if isinstance(state_dir, str) else None, self.handle.backend
        )
        candidates.append(root / self.handle.run_id / SPEC_NAME)
        return candidates

    def task_log(self, task: str, stream: str, attempt: int | None = None) -> Path | None:
        """The file on this machine that holds a task's log (refreshing a peeked copy first).

        Args:
            task: The task's name.
            stream: ``"stdout"`` or ``"stderr"``.
            attempt: An earlier attempt's number; ``None`` for the latest.

        Returns:
            The file (it may not exist yet), or ``None`` when the log cannot be read here or is
            a link or special file (:func:`~x_tui.compute.outputs.output_file`).

        Raises:
            ValueError: If the task name or stream is not one a run can have.
        """
        check_name("task", task)
        if stream not in STREAMS:
            raise ValueError(f"stream {stream!r} is not one of {', '.join(STREAMS)}")
        relative = _log_relative(task, stream, attempt)
        outputs = self.outputs_dir()
        if outputs is not None:
            return output_file(outputs, relative)
        return self.refresh_peeked(relative)

    def refresh_peeked(self, relative: str) -> Path | None:
        """Peek at one output file and bring its local copy up to date (appending what is new).

        Returns:
            The local copy, or ``None`` when the backend cannot peek.
        """
        try:
            data = self.service.peek(self.handle, relative)
        except UserError:
            return None
        target = self.peek_cache / relative
        if data is None:
            return target if self._can_peek() else None
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            info = target.lstat()
        except FileNotFoundError:
            size = -1
        else:
            # A copy that is not a regular file (a FIFO, a link) is not trusted: replaced below.
            size = info.st_size if stat.S_ISREG(info.st_mode) else -1
        if size >= 0 and len(data) >= size:
            with target.open("rb") as existing:
                same_start = existing.read(min(size, 1 << 20)) == data[: min(size, 1 << 20)]
            if same_start:
                with target.open("ab") as out:
                    out.write(data[size:])
                return target
        partial = target.with_name(f".{target.name}.partial")
        partial.write_bytes(data)
        os.replace(partial, target)
        return target


def _in_progress(outputs: Path, manifest: JobManifest | None) -> dict[str, TaskProgress]:
    """Every task directory under ``outputs`` the manifest has no outcome for, with its files."""
    done = {task.name for task in manifest.tasks} if manifest is not None else set()
    try:
        started_at: float | None = (outputs / MANIFEST_NAME).stat().st_mtime
    except OSError:
        started_at = None
    found: dict[str, TaskProgress] = {}
    try:
        entries = sorted(os.scandir(outputs), key=lambda entry: entry.name)
    except OSError:
        return found
    for entry in entries:
        if entry.name in done or entry.name == ATTEMPTS_DIR or entry.name.startswith("."):
            continue
        try:
            check_name("task", entry.name)
            if not entry.is_dir(follow_symlinks=False):
                continue
        except (ValueError, OSError):
            continue
        files, more = _files_so_far(Path(entry.path))
        found[entry.name] = TaskProgress(
            name=entry.name, started_at=started_at, files=files, more=more
        )
    return found


def _files_so_far(task_dir: Path) -> tuple[tuple[str, ...], bool]:
    """A running task's files (links not followed), at most :data:`MAX_FILES_LISTED`."""
    found: list[str] = []
    for root, dirs, names in os.walk(task_dir):
        dirs.sort()
        relative = Path(root).relative_to(task_dir)
        for name in sorted(names):
            path = (relative / name).as_posix()
            if relative == Path(".") and name in (f"{stream}.log" for stream in STREAMS):
                continue
            if len(found) >= MAX_FILES_LISTED:
                return tuple(sorted(found)), True
            found.append(path)
    return tuple(sorted(found)), False


def _last_line(log: Path) -> str | None:
    """The last non-empty line of a log, read from its last :data:`MAX_LAST_LINE` bytes."""
    try:
        with log.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - MAX_LAST_LINE))
            tail = file.read(MAX_LAST_LINE)
    except OSError:
        return None
    lines = [line for line in tail.splitlines() if line.strip()]
    return lines[-1].decode("utf-8", "replace") if lines else None


def _reason(error: BaseException) -> str:
    return str(error) if isinstance(error, UserError) else f"{type(error).__name__}: {error}"


def _log_relative(task: str, stream: str, attempt: int | None) -> str:
    if attempt is None:
        return f"{task}/{stream}.log"
    if attempt < 1:
        raise ValueError(f"attempt {attempt} is not a positive number")
    return f"{ATTEMPTS_DIR}/{task}/{attempt}/{stream}.log"
