"""The ``local`` backend: runs a job on this machine, in the project's current environment.

A run lives in ``<state>/compute/local/<run_id>/`` as substrax lays it out (``spec.json``,
``worker.log``, ``outputs/``, a ``cancelled`` marker), so a run started by either tool is read,
followed, fetched and cancelled by the other. The worker zipapp runs detached in a session of its
own; closing x-tui never stops it. The local backend provisions nothing: a job's extras,
resources, mounts and ``dependencies`` are not provisioned, and :meth:`LocalBackend.plan` says so;
it runs on what this machine has (:meth:`LocalBackend.accelerators` lists its GPUs).

x-tui's job extensions (``Capability.EXTENSIONS``): ``retries`` go to the worker as
``<run_dir>/retries.json`` (``--retries``); ``secrets.env``/``optional_env`` values reach the
tasks through the worker's environment at spawn, never a file; ``secrets.platform`` is refused,
since this machine has no secret store.

Settings, from ``[tool.substrax.compute.backends.local]``:

| key | default | meaning |
| --- | --- | --- |
| ``python`` | see below | the interpreter that runs the worker, one argv[0] (not shell-split) |
| ``state_dir`` | the default state directory | runs go under ``<state_dir>/compute/local`` |

Without ``python`` the worker runs on ``<project>/.venv/bin/python`` if it exists, else on
``uv run --no-sync --project <project> python`` if the project has a ``uv.lock`` and ``uv`` is
on ``PATH``, else on the interpreter running x-tui.

What this module must never do: follow a symbolic link out of a run's outputs, or signal a process
it has not recognised as the run's worker (pid, start time and run id in its command line).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from x_tui.backends import local_machine, local_process
from x_tui.backends.local_files import UnsafeOutputsError, copy_outputs, read_output
from x_tui.backends.local_plan import (
    NAME,
    OUTPUTS,
    default_interpreter,
    describe_plan,
    refuse_platform_secrets,
    worker_command,
)
from x_tui.compute.backend import (
    Capability,
    RunFiles,
    RunState,
    new_run,
    stage_run,
)
from x_tui.compute.errors import BadRecordError, ConfigError
from x_tui.compute.estimate import AcceleratorOffer
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.log_pieces import LineSplitter, LogPiece, lines_of
from x_tui.compute.manifest import MANIFEST_NAME, JobManifest, load_manifest
from x_tui.compute.records import JsonValue, RecordError
from x_tui.compute.retries import write_retries_file
from x_tui.compute.secrets import SecretValues
from x_tui.compute.spec import JobSpec
from x_tui.compute.store import RunHandle, backend_state_dir
from x_tui.compute.worker_bundle import write_worker_zipapp

TABLE: Final = "[tool.substrax.compute.backends.local]"
WORKER_LOG: Final = "worker.log"
CANCELLED: Final = "cancelled"
POLL_SECONDS: Final = 0.05
"""How often a followed log is read again once it has been read to its end."""
READ_BYTES: Final = 1 << 16
"""How much of ``worker.log`` one read takes: the most a log piece holds."""
EXIT_WAIT_SECONDS: Final = 5.0
"""How long a followed log waits, once the run is final, for the worker to exit and flush."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalSettings:
    """The local backend's settings table.

    Attributes:
        python: The interpreter that runs the worker, used as one argv[0] (a path, or a name
            looked up on ``PATH``); ``None`` picks one from the project (see the module).
        state_dir: The state root; runs go under ``<state_dir>/compute/local``. ``None`` uses the
            default state directory.
    """

    python: str | None = None
    state_dir: str | None = None

    @classmethod
    def read(cls, table: Mapping[str, JsonValue] | None) -> LocalSettings:
        """Read and check the settings table.

        Args:
            table: The table, as ``pyproject.toml`` or a run handle holds it.

        Returns:
            The settings.

        Raises:
            ConfigError: If a key is unknown or a value is not a non-empty string or null; the
                message names the table, the key and the value.
        """
        table = table or {}
        accepted = ("python", "state_dir")
        for key in table:
            if key not in accepted:
                raise ConfigError(f"{TABLE} unknown key {key!r} (accepted: {', '.join(accepted)})")
        values: dict[str, str | None] = {}
        for key in accepted:
            value = table.get(key)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(
                    f"{TABLE} {key}: expected a non-empty string or nothing, got {value!r}"
                )
            values[key] = value
        return cls(python=values["python"], state_dir=values["state_dir"])

    def table(self) -> dict[str, JsonValue]:
        """The settings as the table they were read from, to freeze into a run's handle."""
        return {"python": self.python, "state_dir": self.state_dir}


@dataclass(frozen=True, kw_only=True, slots=True)
class _Run:
    """A run's references, read from its handle."""

    run_id: str
    run_dir: Path
    pid: int
    start_time: str | None


class LocalBackend:
    """Runs jobs on this machine; see the module documentation.

    Attributes:
        name: ``"local"``.
        capabilities: Local files, peek, plan, the resource request, x-tui's job extensions,
            this machine's accelerators and the log in pieces.
        unbilled: Why a local run has no cost estimate.
        settings: The validated settings.
    """

    name = NAME
    unbilled = "the local backend runs on this machine, which no provider bills"
    capabilities = frozenset(
        {
            Capability.LOCAL_FILES,
            Capability.PEEK,
            Capability.PLAN,
            Capability.REQUEST,
            Capability.EXTENSIONS,
            Capability.ACCELERATORS,
            Capability.LOG_PIECES,
        }
    )

    def __init__(
        self,
        settings: Mapping[str, JsonValue] | None = None,
        *,
        cancel_grace_seconds: float = 5.0,
    ) -> None:
        """Build the backend from its settings table.

        Args:
            settings: ``[tool.substrax.compute.backends.local]``, or a handle's ``settings``.
            cancel_grace_seconds: How long :meth:`cancel` lets the worker stop its tasks after
                SIGTERM before it kills what is left.

        Raises:
            ConfigError: If the settings are not valid (see :meth:`LocalSettings.read`).
        """
        self.settings = LocalSettings.read(settings)
        self.cancel_grace_seconds = cancel_grace_seconds

    @property
    def runs(self) -> Path:
        """The directory new runs go in: ``<state_dir>/compute/local``."""
        return backend_state_dir(self.settings.state_dir, NAME)

    def submit(
        self,
        spec: JobSpec,
        *,
        project: Path,
        request: ResourceRequest | None = None,
        extensions: JobExtensions | None = None,
        secrets: SecretValues | None = None,
    ) -> RunHandle:
        """Stage the run and start its worker, detached.

        Args:
            spec: The job.
            project: The project root.
            request: The resources as written; this machine runs the job on what it has.
            extensions: The job's retries (written to ``<run_dir>/retries.json`` for the
                worker), dependencies (not provisioned) and secrets.
            secrets: The captured secret values, put in the worker's environment at spawn
                (its tasks inherit them); never written to a file.

        Returns:
            The handle; its details hold ``pid``, ``run_dir`` and ``start_time``.

        Raises:
            ConfigError: If the interpreter cannot be started (the message names it), or the job
                asks for provider secrets (``secrets.platform``), which this machine has not.
        """
        extensions = extensions or JobExtensions()
        refuse_platform_secrets(extensions)
        run = new_run(spec, project, settings=self.settings.table())
        run_dir = stage_run(self.runs, run)
        write_worker_zipapp(run_dir)
        table = extensions.retries.worker_table([task.name for task in spec.tasks])
        retries = write_retries_file(run_dir, table)
        interpreter = default_interpreter(run.project, self.settings.python)
        command = worker_command(interpreter, run_dir=run_dir, project=run.project, retries=retries)
        try:
            pid, start_time = local_process.start_detached(
                command,
                cwd=run.project,
                log=run_dir / WORKER_LOG,
                env=_worker_environment(secrets),
            )
        except OSError as error:
            shutil.rmtree(run_dir, ignore_errors=True)
            source = (
                f"{TABLE} python = {self.settings.python!r}"
                if self.settings.python
                else ("the project's interpreter")
            )
            raise ConfigError(
                f"{source}: cannot start {interpreter[0]!r}: {error.strerror or error}"
            ) from None
        details = {"pid": str(pid), "run_dir": str(run_dir), "start_time": start_time}
        return run.handle(NAME, details)

    def status(self, handle: RunHandle) -> RunState:
        """Where the run is: from its manifest, its ``cancelled`` marker and its worker.

        Liveness is checked before the manifest is read: a worker that writes its last manifest
        and exits between the two reads as succeeded, never as failed.

        Raises:
            BadRecordError: If the handle's details or the manifest cannot be read; the message
                names the file.
        """
        run = _run_of(handle)
        alive = self._alive(run)
        manifest = _manifest(run)
        if manifest is not None and manifest.finished:
            return RunState.SUCCEEDED if manifest.succeeded else RunState.FAILED
        if (run.run_dir / CANCELLED).exists():
            return RunState.CANCELLED
        return RunState.RUNNING if alive else RunState.FAILED

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        """The worker's output lines, without line endings, each task's prefixed ``[<task>] ``.

        Bytes that are not UTF-8 are replaced. A trailing ``\\r`` of a CRLF ending is dropped;
        other carriage returns are kept for the viewer to resolve.

        Args:
            handle: The run.
            follow: Keep reading until the run is final, then yield what is left and stop.

        Yields:
            Each line; an unterminated last line once the run is final or no longer followed.
        """
        return lines_of(self.log_pieces(handle, follow=follow))

    def log_pieces(self, handle: RunHandle, *, follow: bool) -> Iterator[LogPiece]:
        """The same log as :meth:`logs`, in pieces of at most one read each.

        ``worker.log`` is read in chunks of 64 KiB and never joined, so a line of any length
        costs time linear in its length and bounded memory.

        Args:
            handle: The run.
            follow: Keep reading until the run is final, then yield what is left and stop.

        Yields:
            The pieces; the last line is ended when the log stops, even without a newline.
        """
        run = _run_of(handle)
        path = run.run_dir / WORKER_LOG
        splitter = LineSplitter()
        reader = None
        gone_since: float | None = None
        try:
            while True:
                if reader is None:
                    try:
                        reader = path.open("rb")
                    except FileNotFoundError:
                        reader = None
                chunk = reader.read(READ_BYTES) if reader is not None else b""
                if chunk:
                    yield from splitter.feed(chunk)
                    continue
                final = self.status(handle).is_final
                if final and follow and self._alive(run):
                    # The manifest is final before the worker exits: let it flush its last lines.
                    gone_since = gone_since or time.monotonic()
                    if time.monotonic() - gone_since < EXIT_WAIT_SECONDS:
                        time.sleep(POLL_SECONDS)
                        continue
                if final or not follow:
                    while reader is not None and (chunk := reader.read(READ_BYTES)):
                        yield from splitter.feed(chunk)
                    yield from splitter.finish()
                    return
                time.sleep(POLL_SECONDS)
        finally:
            if reader is not None:
                reader.close()

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        """Copy the run's outputs to ``destination / handle.run_id``, merging, and return it.

        Only regular files and directories are copied. Symbolic links and special files (which
        a task can create, such as ``outputs/x -> /etc``) are left out, everything else is
        copied, and then :class:`UnsafeOutputsError` names each entry left out.

        Raises:
            BadRecordError: If the handle's details cannot be read.
            UnsafeOutputsError: After the copy, if entries were left out.
            NoOutputsError: If the run has no outputs directory (its worker never started).
        """
        run = _run_of(handle)
        target = destination / handle.run_id
        refused = copy_outputs(run.run_dir / OUTPUTS, target)
        if refused:
            raise UnsafeOutputsError(target, refused)
        return target

    def cancel(self, handle: RunHandle) -> None:
        """Stop the run and mark it cancelled; a final run is left as it is.

        Touches ``<run_dir>/cancelled``, sends SIGTERM to the worker's process group, waits up
        to the grace period for the worker to stop its task, then kills every process left in
        the worker's session (its tasks' grandchildren too). Calling it again does nothing.

        Raises:
            BadRecordError: If the handle's details or the manifest cannot be read.
        """
        if self.status(handle).is_final:
            return
        run = _run_of(handle)
        (run.run_dir / CANCELLED).touch()
        info = local_process.process_info(run.pid)
        if not self._alive(run) or info is None:
            return
        leads_session = info.session == run.pid
        local_process.terminate_group(run.pid)
        local_process.wait_until_gone(
            run.pid,
            run_id=run.run_id,
            start_time=run.start_time,
            seconds=self.cancel_grace_seconds,
        )
        if leads_session:
            local_process.kill_session(run.pid)
        else:
            # A substrax worker leads only its process group, inside the submitter's session.
            local_process.kill_group(run.pid)
        local_process.wait_until_gone(
            run.pid, run_id=run.run_id, start_time=run.start_time, seconds=self.cancel_grace_seconds
        )

    def run_files(self, handle: RunHandle) -> RunFiles:
        """The run's worker log and outputs directory on this machine."""
        run = _run_of(handle)
        return RunFiles(worker_log=run.run_dir / WORKER_LOG, outputs=run.run_dir / OUTPUTS)

    def peek(self, handle: RunHandle, path: str) -> bytes | None:
        """One file of the run's outputs, while it runs or after.

        Args:
            handle: The run.
            path: The file, relative to the outputs, such as ``"train/stdout.log"``.

        Returns:
            Its bytes; ``None`` when it does not exist (yet).

        Raises:
            OutsideOutputsError: If ``path`` leads outside the outputs or through a link.
        """
        return read_output(_run_of(handle).run_dir / OUTPUTS, path)

    def plan(
        self,
        spec: JobSpec,
        *,
        project: Path,
        request: ResourceRequest | None = None,
        extensions: JobExtensions | None = None,
    ) -> dict[str, JsonValue]:
        """What :meth:`submit` would run, and what this machine has.

        See :func:`x_tui.backends.local_plan.describe_plan` for every key.

        Raises:
            ConfigError: If the job asks for provider secrets (``secrets.platform``).
        """
        return describe_plan(
            spec,
            project=project,
            runs=self.runs,
            python=self.settings.python,
            request=request,
            extensions=extensions,
        )

    def accelerators(self) -> list[AcceleratorOffer]:
        """This machine's GPUs, from ``nvidia-smi``: one offer per kind, the count it has.

        Returns:
            The offers (none without ``nvidia-smi``); no prices.
        """
        return local_machine.offers()

    def check_offer(self, request: ResourceRequest) -> None:
        """Never refuses: the local backend runs a job on what this machine has, as substrax's.

        Args:
            request: The run's resources; the plan's ``runs_on`` says what it gets instead.
        """
        del request

    def _alive(self, run: _Run) -> bool:
        return local_process.is_worker(run.pid, run_id=run.run_id, start_time=run.start_time)


def _worker_environment(secrets: SecretValues | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # x-tui's own virtual environment is not the project's; the interpreter is chosen explicitly.
    env.pop("VIRTUAL_ENV", None)
    # The worker's environment is its tasks' base layer; a secret reaches them only this way.
    env.update(secrets or {})
    return env


def _run_of(handle: RunHandle) -> _Run:
    details = handle.details
    pid = details.get("pid", "")
    run_dir = details.get("run_dir", "")
    if not pid.isdigit() or not run_dir:
        raise BadRecordError(
            f"run {handle.run_id}: a local run's handle needs a decimal 'pid' and a 'run_dir' "
            f"in its details, not {dict(details)!r}"
        )
    return _Run(
        run_id=handle.run_id,
        run_dir=Path(run_dir),
        pid=int(pid),
        start_time=details.get("start_time") or None,
    )


def _manifest(run: _Run) -> JobManifest | None:
    try:
        return load_manifest(run.run_dir / OUTPUTS / MANIFEST_NAME)
    except RecordError as error:
        raise BadRecordError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadRecordError(f"{run.run_dir / OUTPUTS / MANIFEST_NAME}: {error}") from None
