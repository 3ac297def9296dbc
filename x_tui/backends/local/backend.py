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

Every process a run starts carries the run's marker in its environment (``X_TUI_RUN``, with a
random nonce kept in ``<run_dir>/process-marker``; see :mod:`x_tui.compute.worker.run_processes`),
so :meth:`LocalBackend.cancel` finds and stops them all, even after the worker is gone. A run reads
as running while any of its processes lives: a run whose worker was killed while a task (or
something a task started) keeps running is running, not failed, until :meth:`LocalBackend.cancel`
stops what is left or it ends; a cancelled run reads as cancelled once nothing of it runs. A run
substrax started carries no marker: only its worker (and, through its session or process group,
what is still below it) is found. A process that clears its environment and leaves the worker's
tree cannot be tied to the run once the worker is gone.

What this module must never do: follow a symbolic link out of a run's outputs, or signal a process
it has not proven to be the run's (see :mod:`x_tui.backends.local.process`).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from x_tui.backends.local import machine as local_machine
from x_tui.backends.local import process as local_process
from x_tui.backends.local.plan import (
    NAME,
    OUTPUTS,
    default_interpreter,
    describe_plan,
    refuse_platform_secrets,
    worker_command,
)
from x_tui.backends.local.status_memo import StatusMemo
from x_tui.compute.backend import (
    SPEC_NAME,
    Capability,
    RunFiles,
    RunState,
    new_run,
    stage_run,
)
from x_tui.compute.estimate import AcceleratorOffer
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.launches import KILL_AT_ENV, TRACE_ENV, LaunchRecord, RunLaunch
from x_tui.compute.log_pieces import LineSplitter, LogPiece, lines_of
from x_tui.compute.outputs import UnsafeOutputsError, copy_outputs, read_output
from x_tui.compute.retries import write_retries_file
from x_tui.compute.secrets import SecretValues
from x_tui.compute.store import RunHandle, backend_state_dir
from x_tui.compute.worker.errors import (
    BadRecordError,
    ConfigError,
    ProviderError,
    UserError,
)
from x_tui.compute.worker.manifest import MANIFEST_NAME, JobManifest
from x_tui.compute.worker.records import JsonValue, RecordError
from x_tui.compute.worker.run_processes import (
    MARKER_VARIABLE,
    new_marker,
    read_marker,
    write_marker,
)
from x_tui.compute.worker.spec import JobSpec
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
    processes: local_process.RunProcesses


class LocalBackend:
    """Runs jobs on this machine; see the module documentation.

    Attributes:
        name: ``"local"``.
        capabilities: Local files, peek, plan, the resource request, x-tui's job extensions,
            this machine's accelerators, the log in pieces and many runs' states in one call.
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
            Capability.LAUNCH,
            Capability.LOG_PIECES,
            Capability.STATUSES,
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
        self._memo = StatusMemo()

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
        launch: RunLaunch | None = None,
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
            launch: The shared submit path's launch record: the run directory is named in it
                before it is made, and the worker's pid as soon as it is started.

        Returns:
            The handle; its details hold ``pid``, ``run_dir`` and ``start_time``.

        Raises:
            ConfigError: If the interpreter cannot be started (the message names it), or the job
                asks for provider secrets (``secrets.platform``), which this machine has not.
        """
        extensions = extensions if extensions is not None else JobExtensions()
        refuse_platform_secrets(extensions)
        run = new_run(spec, project, settings=self.settings.table(), launch=launch)
        run_dir = stage_run(self.runs, run)
        write_worker_zipapp(
            run_dir,
            compiled=True,
            cache_dir=self.runs.parent.parent / "x-tui" / "worker",
            step=run.step,
        )
        table = extensions.retries.worker_table([task.name for task in spec.tasks])
        retries = write_retries_file(run_dir, table, step=run.step)
        interpreter = default_interpreter(run.project, self.settings.python)
        command = worker_command(
            interpreter,
            run_dir=run_dir,
            project=run.project,
            retries=retries,
            watch=extensions.watch,
        )
        marker = new_marker(run.run_id)
        (run_dir / WORKER_LOG).touch()
        run.step("worker log made")
        try:
            # Kept before anything starts: every process of the run can be found from then on.
            write_marker(run_dir, marker)
            pid, start_time = local_process.start_detached(
                command,
                cwd=run.project,
                log=run_dir / WORKER_LOG,
                env=_worker_environment(secrets, marker=marker),
                step=run.step,
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
        run.step("worker started")
        details = {"pid": str(pid), "run_dir": str(run_dir), "start_time": start_time}
        run.started(details)
        return run.handle(NAME, details)

    def adopt(self, record: LaunchRecord) -> RunHandle | str:
        """The run a submitter that died left, from its launch record.

        The worker is the one the record names (pid and start time), else the live process
        whose command line runs this run's staged spec (``--spec <run_dir>/spec.json``: a
        submitter killed between starting the worker and recording it). When there is none
        and the worker never wrote its outputs, the half-staged directory is removed.

        Args:
            record: The launch record; only its run id locates the run's directory.

        Returns:
            The run's handle, or why there is no run.
        """
        run_dir = self.runs / record.run_id
        details = dict(record.details)
        if details.get("pid", "").isdigit() and details.get("run_dir") == str(run_dir):
            return record.handle(details, settings=self.settings.table())
        found = local_process.find_worker(str(run_dir / SPEC_NAME))
        if found is not None:
            pid, start_time = found
            found_details = {"pid": str(pid), "run_dir": str(run_dir), "start_time": start_time}
            return record.handle(found_details, settings=self.settings.table())
        if (run_dir / OUTPUTS).exists():
            return (
                "the submitting process died as the worker started, before recording it, and"
                f" no live worker of the run was found; its files are kept in {run_dir}"
            )
        shutil.rmtree(run_dir, ignore_errors=True)
        return "the submitting process died before the worker started (nothing ran)"

    def status(self, handle: RunHandle) -> RunState:
        """Where the run is: from its manifest, its ``cancelled`` marker and its worker.

        Liveness is checked before the manifest is read: a worker that writes its last manifest
        and exits between the two reads as succeeded, never as failed. A run without a finished
        manifest is running while any process proven to be its own lives (its worker, or what a
        killed worker left behind), cancelled once it was cancelled and nothing of it runs, and
        failed otherwise.

        Raises:
            BadRecordError: If the handle's details or the manifest cannot be read; the message
                names the file.
        """
        run = _run_of(handle, marker=self._memo.marker)
        worker_alive = self._memo.is_worker(run.processes)
        manifest = _manifest(run, self._memo.manifest)
        if manifest is not None and manifest.finished:
            return RunState.SUCCEEDED if manifest.succeeded else RunState.FAILED
        # The worker was gone before the manifest was read, so the manifest is its last word;
        # only then are the run's other processes looked for (a scan of every process).
        if worker_alive or self._alive(run):
            return RunState.RUNNING
        if (run.run_dir / CANCELLED).exists():
            return RunState.CANCELLED
        return RunState.FAILED

    def statuses(self, handles: Sequence[RunHandle]) -> dict[str, RunState | UserError]:
        """The states of many runs in one call, each as :meth:`status` gives it.

        The runs are read one after the other in the caller's thread (the monitor asks for all
        the runs that are due in one call, so one thread answers for them all). A run whose
        state cannot be read is answered with its error and hides none of the others'.

        Args:
            handles: The runs.

        Returns:
            By run id: its state, or the error that kept it unknown (any other failure, a bug
            included, is given as a :class:`ProviderError` with its text).
        """
        results: dict[str, RunState | UserError] = {}
        for handle in handles:
            try:
                results[handle.run_id] = self.status(handle)
            except UserError as error:
                results[handle.run_id] = error
            except Exception as error:  # one run's failure never hides the others' states
                results[handle.run_id] = ProviderError(str(error) or type(error).__name__)
        return results

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
        """Stop every process of the run and mark it cancelled; a final run is left as it is.

        Touches ``<run_dir>/cancelled``, sends SIGTERM to the worker's process group and to every
        other process carrying the run's marker (``setsid`` grandchildren, tasks a killed worker
        left behind), waits up to the grace period, then kills what is left, the worker's whole
        session included. Only processes proven to be the run's are signalled. Two cancels at
        once both return once nothing of the run runs, or both raise; calling it again after
        that does nothing.

        Raises:
            BadRecordError: If the handle's details or the manifest cannot be read.
            ExceptionGroup: Of one :class:`ProviderError` naming the processes still running
                after SIGKILL and the grace period (one the system will not let go of, such as
                one stuck in the kernel).
        """
        if self.status(handle).is_final:
            return
        run = _run_of(handle)
        (run.run_dir / CANCELLED).touch()
        survivors = local_process.stop(run.processes, grace=self.cancel_grace_seconds)
        if survivors:
            count = len(survivors)
            listed = ", ".join(str(pid) for pid in survivors[:10])
            raise ExceptionGroup(
                f"cancel of {run.run_id}",
                [
                    ProviderError(
                        f"{count} process{'' if count == 1 else 'es'} of the run still "
                        f"run{'s' if count == 1 else ''} after SIGKILL (pid {listed})"
                    )
                ],
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

        See :func:`x_tui.backends.local.plan.describe_plan` for every key.

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
        return bool(local_process.members(run.processes))


def _worker_environment(secrets: SecretValues | None = None, *, marker: str) -> dict[str, str]:
    env = dict(os.environ)
    # x-tui's own virtual environment is not the project's; the interpreter is chosen explicitly.
    env.pop("VIRTUAL_ENV", None)
    # The submit's fault points are the submitter's; a task that runs x-tui must not inherit them.
    env.pop(KILL_AT_ENV, None)
    env.pop(TRACE_ENV, None)
    # The worker's environment is its tasks' base layer; a secret reaches them only this way.
    env.update(secrets or {})
    # Every process of the run inherits it, and so can be found and stopped.
    env[MARKER_VARIABLE] = marker
    return env


def _run_of(handle: RunHandle, *, marker: Callable[[Path, str], str | None] = read_marker) -> _Run:
    details = handle.details
    pid = details.get("pid", "")
    run_dir = details.get("run_dir", "")
    if not pid.isdigit() or not run_dir:
        raise BadRecordError(
            f"run {handle.run_id}: a local run's handle needs a decimal 'pid' and a 'run_dir' "
            f"in its details, not {dict(details)!r}"
        )
    processes = local_process.RunProcesses(
        pid=int(pid),
        run_dir=Path(run_dir),
        start_time=details.get("start_time") or None,
        marker=marker(Path(run_dir), handle.run_id),
    )
    return _Run(run_id=handle.run_id, run_dir=Path(run_dir), processes=processes)


def _manifest(run: _Run, load: Callable[[Path], JobManifest | None]) -> JobManifest | None:
    try:
        return load(run.run_dir / OUTPUTS / MANIFEST_NAME)
    except RecordError as error:
        raise BadRecordError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadRecordError(f"{run.run_dir / OUTPUTS / MANIFEST_NAME}: {error}") from None
