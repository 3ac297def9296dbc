"""The one place the UI calls the engine: projects, the run store and every backend call.

Every method here may block, so the UI calls them from thread workers only, never on the event
loop. Each backend call runs in a thread of its own with a deadline: a call that has not answered
in time is reported as a :class:`~x_tui.compute.worker.errors.ProviderError` naming the backend, and
its thread is abandoned (a daemon thread, never joined), so a hung provider cannot hang the UI or
the worker that asked. A submit is the exception: it is never abandoned while the backend may
still create the run (:mod:`x_tui.app.submits`). Backends are cached per (backend, settings).

This module imports no Textual: a screen gets the service from ``app.service`` and runs its calls
in ``run_worker(..., thread=True)``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from x_tui.app.deadlines import Deadlines, WritesInFlight, call_with_deadline
from x_tui.app.log_spool import LogSpools, SpoolState
from x_tui.app.submits import (
    SUBMIT_GRACE_SECONDS,
    SubmitProgress,
    SubmitTracker,
    declared_submit_seconds,
)
from x_tui.compute.backend import (
    Capability,
    ComputeBackend,
    RunFiles,
    RunState,
    ability,
)
from x_tui.compute.deadline import Abandonment
from x_tui.compute.store import RunHandle, RunStore, default_state_dir
from x_tui.compute.sweeps import StoredSweeps, SweepStore
from x_tui.compute.worker.errors import ConfigError, UserError

if TYPE_CHECKING:  # loaded on first use (a project read, a plan, an output): not at start-up
    from x_tui.compute.operations import JobList, Project, RunPlan
    from x_tui.compute.run_removal import Removal


class Service:
    """The engine as the UI sees it; every method may block (call it from a thread worker)."""

    def __init__(
        self,
        *,
        store: RunStore | None = None,
        state_dir: Path | None = None,
        deadlines: Deadlines | None = None,
        build_backend: Callable[[RunHandle], ComputeBackend] | None = None,
    ) -> None:
        """Serve runs from ``store``, spooling remote logs under ``state_dir``.

        Args:
            store: The run store; the default state directory's when ``None``.
            state_dir: The state directory; ``default_state_dir()`` when ``None``.
            deadlines: Seconds each kind of backend call may take.
            build_backend: Rebuilds a handle's backend; ``operations.backend_for`` (from the
                handle's frozen settings, through the registry) when ``None``.
        """
        self.state_dir = state_dir if state_dir is not None else default_state_dir()
        self.store = store if store is not None else RunStore(self.state_dir / "compute" / "runs")
        self.deadlines = deadlines or Deadlines()
        self._build = build_backend or _backend_for
        self._backends: dict[tuple[str, str], ComputeBackend] = {}
        self._refused: dict[tuple[str, str], UserError] = {}
        self._lock = threading.Lock()
        self._spools = LogSpools(self.logs_dir, open_seconds=self.deadlines.logs)
        self.submits = SubmitTracker(self.store)
        self._reads = Abandonment()
        self.writes = WritesInFlight()
        """The cancels and fetches in flight (``run_app`` waits for them after the app closes)."""

    def let_go(self) -> None:
        """x-tui quits: no thread worker of the app may wait out a hung provider's deadline.

        Every read in flight (plans, states, peeks), and any asked after, ends at once with
        :class:`~x_tui.app.deadlines.CallAbandoned`. The waits for writes (cancels, fetches) end
        the same way, but the writes go on in their threads (the user asked for them), and
        :attr:`writes` waits for them once the screen is closed. Submits have their own wait.
        """
        self._reads.abandon()
        self.writes.let_go()

    @property
    def logs_dir(self) -> Path:
        """Where remote runs' logs are spooled: ``<state>/x-tui/logs``."""
        return self.state_dir / "x-tui" / "logs"

    # Projects -------------------------------------------------------------------------------

    def open_project(self, root: Path | None) -> Project:
        """Read the project at ``root`` (never raises for a bad config: the project keeps it).

        Args:
            root: The project root; ``None`` outside a project.

        Returns:
            The project, with ``problem`` set when its job list is empty for a reason.
        """
        from x_tui.compute import operations

        return operations.open_project(root)

    def list_jobs(self, project: Project) -> JobList:
        """Resolve each configured job of ``project`` on its own, so one broken job hides none.

        Args:
            project: The project.

        Returns:
            The jobs that resolve and, for each other one, the reason (empty when the project
            has no configuration: its ``problem`` says why).
        """
        from x_tui.compute import operations

        if project.problem is not None or project.config is None:
            return operations.JobList()
        return operations.list_jobs(project)

    def plan(
        self,
        project: Project,
        job: str,
        *,
        backend: str | None = None,
        accelerator: str | None = None,
    ) -> RunPlan:
        """Resolve ``job`` and ask its backend what it would request.

        Args:
            project: The project.
            job: The job's name.
            backend: The backend to run on; the project's default when ``None``.
            accelerator: Replaces the configured accelerator (``KIND`` or ``KIND:COUNT``).

        Returns:
            The plan, ready for :meth:`submit`.

        Raises:
            UserError: If the job, backend or accelerator cannot be used (the message says why).
            ProviderError: If the backend did not answer within the plan deadline.
        """
        from x_tui.compute.operations import plan_run

        name = backend or (project.config.backend if project.config else None) or "backend"
        return call_with_deadline(
            lambda: plan_run(project, job, backend=backend, accelerator=accelerator),
            seconds=self.deadlines.plan,
            backend=name,
            what="plan",
            abandonment=self._reads,
        )

    def submit(
        self,
        plan: RunPlan,
        *,
        progress: Callable[[SubmitProgress], object] | None = None,
        keep_waiting: Callable[[], bool] | None = None,
    ) -> RunHandle:
        """Submit a planned run, waiting for as long as its backend says a submit may take.

        The submit runs in a thread of its own and saves the run's handle the moment the backend
        returns it, even when nobody waits any more (see :mod:`x_tui.app.submits`).

        Args:
            plan: What :meth:`plan` returned.
            progress: Told how long the submit has taken, each second, while it goes on.
            keep_waiting: Asked each second; waiting stops once it is false (the submit goes on).

        Returns:
            The run's handle, already saved in the store.

        Raises:
            UserError: If the backend refuses the run.
            SubmitStillGoing: If waiting stopped first (the deadline of :meth:`submit_deadline`
                passed, or ``keep_waiting`` turned false); the run is kept if it is created.
        """
        limit, builds_image = self.submit_deadline(plan)
        return self.submits.submit(
            plan,
            limit=limit,
            builds_image=builds_image,
            progress=progress,
            keep_waiting=keep_waiting,
        )

    def submit_deadline(self, plan: RunPlan) -> tuple[float, bool]:
        """How long a submit of ``plan`` is waited for, and whether its backend declared that.

        Returns:
            ``(seconds, declared)``: the backend's ``submit_seconds`` plus a grace for staging
            and saving when it declares one, else the service's ``deadlines.submit``.
        """
        try:
            backend = self.plan_backend(plan)
        except UserError:  # the submit itself says why the backend cannot be built
            return self.deadlines.submit, False
        declared = declared_submit_seconds(backend)
        if declared is None:
            return self.deadlines.submit, False
        return max(declared + SUBMIT_GRACE_SECONDS, self.deadlines.submit), True

    def plan_backend(self, plan: RunPlan) -> ComputeBackend:
        """The backend a plan goes to, built from the plan's settings (cached).

        Raises:
            UserError: If that backend is not installed or refuses the settings.
        """
        from x_tui.compute.registry import load_backend

        key = (plan.backend, frozen_settings(plan.settings))
        with self._lock:
            cached = self._backends.get(key)
        if cached is not None:
            return cached
        try:
            built = load_backend(plan.backend, plan.settings)
        except (ValueError, LookupError) as error:
            if isinstance(error, UserError):
                raise
            raise ConfigError(f"backend {plan.backend!r}: {error}") from None
        with self._lock:
            return self._backends.setdefault(key, built)

    # Runs -----------------------------------------------------------------------------------

    @property
    def sweeps_dir(self) -> Path:
        """Where sweep records are kept: ``<state>/x-tui/sweeps``."""
        return self.state_dir / "x-tui" / "sweeps"

    def read_sweeps(self) -> StoredSweeps:
        """Every recorded sweep, newest first, and each record that cannot be read."""
        return SweepStore(self.sweeps_dir).read_all()

    def backend(self, handle: RunHandle) -> ComputeBackend:
        """The backend of ``handle``, built from the settings it was submitted with (cached).

        A backend that cannot be built is not tried again in this session: the same error is
        raised at once (the monitor asks for every run's state, and building means scanning the
        installed entry points).

        Raises:
            UserError: If that backend is not installed or refuses the settings.
        """
        key = (handle.backend, frozen_settings(handle.settings))
        with self._lock:
            cached = self._backends.get(key)
            refused = self._refused.get(key)
        if cached is not None:
            return cached
        if refused is not None:
            # Not rebuilt on every poll: a backend that is not installed stays so until restart.
            raise refused
        try:
            built = self._build(handle)
        except UserError as error:
            with self._lock:
                self._refused[key] = error
            raise
        with self._lock:
            return self._backends.setdefault(key, built)

    def status(self, handle: RunHandle) -> RunState:
        """Where the run is now, as its backend says.

        Raises:
            UserError: If the backend cannot be built.
            ProviderError: If it did not answer within the status deadline.
        """
        backend = self.backend(handle)
        return call_with_deadline(
            lambda: backend.status(handle),
            seconds=self.deadlines.status,
            backend=handle.backend,
            what=f"status of {handle.run_id}",
            abandonment=self._reads,
        )

    def statuses(self, handles: Sequence[RunHandle]) -> Mapping[str, RunState | Exception] | None:
        """Where each of many runs of one backend is, in one call, if the backend can say so.

        Args:
            handles: Runs with the same backend and settings.

        Returns:
            By run id, its state or the error it could not be read with; ``None`` when the
            backend does not declare ``Capability.STATUSES`` (ask :meth:`status` per run).

        Raises:
            UserError: If the backend cannot be built.
            ProviderError: If it did not answer within the status deadline.
        """
        if not handles:
            return {}
        backend = self.backend(handles[0])
        batch = ability(backend, Capability.STATUSES)
        if batch is None:
            return None
        return call_with_deadline(
            lambda: batch.statuses(handles),
            seconds=self.deadlines.status,
            backend=handles[0].backend,
            what=f"status of {len(handles)} runs",
            abandonment=self._reads,
        )

    def cancel(self, handle: RunHandle) -> None:
        """Stop the run (a run that already ended is left as it is).

        A run still being submitted (known from its launch record only) is stopped by its
        submitter as soon as its submit finishes.

        Raises:
            UserError: If the backend cannot be built.
            ProviderError: If it did not answer within the cancel deadline.
        """
        from x_tui.compute.launches import SUBMITTING, LaunchBook

        book = LaunchBook(self.store)
        launch = book.load(handle.run_id)
        if launch is not None and not self.store.path_of(handle.run_id).exists():
            if launch.state == SUBMITTING:
                book.ask_cancel(handle.run_id)
            return
        backend = self.backend(handle)
        self.writes.call(
            lambda: backend.cancel(handle),
            seconds=self.deadlines.cancel,
            backend=handle.backend,
            what=f"cancel of {handle.run_id}",
        )

    def fetch(self, handle: RunHandle, destination: Path | None = None) -> Path:
        """Copy the run's outputs to ``destination / run_id``.

        Args:
            handle: The run.
            destination: Where to copy to; ``operations.fetch_root()`` when ``None``.

        Returns:
            The copy's directory.

        Raises:
            UserError: If the backend cannot be built.
            ProviderError: If it did not finish within the fetch deadline.
        """
        backend = self.backend(handle)
        from x_tui.compute.operations import fetch_root

        target = destination if destination is not None else fetch_root()
        return self.writes.call(
            lambda: backend.fetch(handle, target),
            seconds=self.deadlines.fetch,
            backend=handle.backend,
            what=f"fetch of {handle.run_id}",
        )

    def delete(self, handle: RunHandle) -> Removal:
        """Delete a finished run's local files, x-tui's spooled log of it, then its record.

        Returns:
            What was removed.

        Raises:
            RunStillGoingError: If the run has not ended (nothing is removed).
            UserError: If the backend cannot be built or the record names an unexpected
                directory.
            OSError: If a file cannot be removed (the record is kept then).
        """
        from x_tui.compute.run_removal import delete_run

        state = self.status(handle)  # within the status deadline; the removal takes its time
        spooled = self.logs_dir / f"{handle.run_id}.log"
        return delete_run(
            handle, self.backend(handle), self.store, side_files=(spooled,), state=state
        )

    def run_files(self, handle: RunHandle) -> RunFiles | None:
        """Where the run's log and outputs are on this machine, for a backend that keeps them here.

        Returns:
            The files, or ``None`` when the backend keeps them remotely.

        Raises:
            UserError: If the backend cannot be built.
        """
        backend = self.backend(handle)
        keeper = ability(backend, Capability.LOCAL_FILES)
        return keeper.run_files(handle) if keeper is not None else None

    def peek(self, handle: RunHandle, relative: str) -> bytes | None:
        """Read one file of the run's outputs (``manifest.json``, ``<task>/stdout.log``...).

        Args:
            handle: The run.
            relative: The file's path under the run's outputs.

        Returns:
            Its bytes, or ``None`` when it does not exist (yet) or the backend cannot peek.

        Raises:
            UserError: If the backend cannot be built.
            ProviderError: If the backend did not answer within the peek deadline.
        """
        from x_tui.compute.outputs import OutsideOutputsError, read_output

        files = self.run_files(handle)
        if files is not None:
            try:
                return read_output(files.outputs, relative)
            except (OSError, OutsideOutputsError):
                return None
        backend = self.backend(handle)
        peeker = ability(backend, Capability.PEEK)
        if peeker is None:
            return None
        data = call_with_deadline(
            lambda: peeker.peek(handle, relative),
            seconds=self.deadlines.peek,
            backend=handle.backend,
            what=f"peek at {relative}",
            abandonment=self._reads,
        )
        return data.encode("utf-8") if isinstance(data, str) else data

    def ended_at_hint(self, handle: RunHandle) -> float | None:
        """When a finished run ended, as its local files tell (an epoch time), if they do.

        Returns:
            The modification time of its manifest (else its log), or ``None`` for a remote run.
        """
        from x_tui.compute.worker.manifest import MANIFEST_NAME

        try:
            files = self.run_files(handle)
        except UserError:
            return None
        if files is None:
            return None
        for path in (files.outputs / MANIFEST_NAME, files.worker_log):
            try:
                return path.stat().st_mtime
            except OSError:
                continue
        return None

    # Logs -----------------------------------------------------------------------------------

    def log_path(self, handle: RunHandle) -> Path:
        """The local file that holds the run's combined log, spooling it first if it is remote.

        A local run's log is the file its backend names; a remote run's lines are copied by a
        daemon thread into ``<state>/x-tui/logs/<run_id>.log`` as the backend yields them (once
        per run and process; a finished, fully copied log is not copied again).

        Returns:
            The file (it may not exist yet, or still be growing).

        Raises:
            UserError: If the backend cannot be built.
        """
        files = self.run_files(handle)
        if files is not None:
            return files.worker_log
        return self._spools.spool(handle, lambda: self.backend(handle)).path

    def spool_state(self, run_id: str) -> SpoolState | None:
        """How the spooling of a remote run's log is going, or ``None`` if it was never started."""
        return self._spools.state(run_id)


def frozen_settings(settings: Mapping[str, object]) -> str:
    """The canonical text of a settings table, the key backends are cached under."""
    return json.dumps(dict(settings), sort_keys=True, default=str)


def _backend_for(handle: RunHandle) -> ComputeBackend:
    """``operations.backend_for`` (its module loaded on the first backend built)."""
    from x_tui.compute.operations import backend_for

    return backend_for(handle)
