"""The interface every compute provider implements, and the helpers that name new runs.

A backend turns a :class:`~x_tui.compute.worker.spec.JobSpec` into a run on its provider and reports
on it afterwards. It returns a :class:`~x_tui.compute.store.RunHandle` from ``submit`` and needs
nothing else to find the run again, so a run submitted from one shell can be followed, fetched or
cancelled from another. Optional abilities are declared in ``capabilities``, never discovered by
catching ``NotImplementedError``.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from x_tui.compute.store import RunHandle, new_run_id
from x_tui.compute.worker.records import JsonValue, dumps_compact, write_atomic
from x_tui.compute.worker.spec import JobSpec

if TYPE_CHECKING:
    from x_tui.compute.launches import RunLaunch

SPEC_NAME = "spec.json"
"""The file a staged run's spec is written to."""


class RunState(str, enum.Enum):
    """Where a run is."""

    SUBMITTING = "submitting"
    """Recorded, but its submit has not finished (see :mod:`x_tui.compute.launches`)."""
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    """The provider took the run's machine away (a spot cluster, a preempted container) before
    its tasks finished; why is in :mod:`x_tui.compute.run_endings`."""

    @property
    def is_final(self) -> bool:
        """Whether the run has ended."""
        return self in (
            RunState.SUCCEEDED,
            RunState.FAILED,
            RunState.CANCELLED,
            RunState.PREEMPTED,
        )


class Capability(str, enum.Enum):
    """Optional abilities a backend declares in its ``capabilities`` attribute."""

    PEEK = "peek"
    """``peek(handle, path)`` reads a file of the run's outputs while it runs."""
    LOCAL_FILES = "local-files"
    """``run_files(handle)`` names the run's log and outputs as files on this machine."""
    PLAN = "plan"
    """``plan(spec, project=...)`` describes what ``submit`` would ask the provider for."""
    REQUEST = "request"
    """``plan`` and ``submit`` take ``request=`` (a ``ResourceRequest``): the accelerator
    alternatives, ``exact`` kinds and node counts a spec cannot hold."""
    EXTENSIONS = "extensions"
    """``plan`` takes ``extensions=`` (a ``JobExtensions``: dependencies, secrets by name,
    retries) and ``submit`` takes ``extensions=`` and ``secrets=`` (a ``SecretValues``, the
    captured values by their name in the task). The backend maps each extension onto its provider
    and raises a ``ConfigError`` for one it cannot give. A backend without this ability is never
    given a job that declares an extension: ``plan_run`` refuses it, naming the keys."""
    ACCELERATORS = "accelerators"
    """``accelerators() -> list[AcceleratorOffer]`` lists the kinds, counts per node and hourly
    prices the backend offers, and ``check_offer(request)`` raises a ``ResourceError`` before
    anything is submitted when a run asks for one it does not offer."""
    LAUNCH = "launch"
    """``submit`` takes ``launch=`` (a :class:`~x_tui.compute.launches.RunLaunch`): the run is
    named by its ``run_id``, its directory is recorded through ``staging`` before it is made
    (:func:`stage_run` does it) and the provider's references through ``started`` as soon as
    they exist; ``adopt(record)`` then finds, from a
    :class:`~x_tui.compute.launches.LaunchRecord` whose submitter died, the run it started (its
    handle) or says why there is none (a ``str``), removing what was only half staged."""
    STATUSES = "statuses"
    """``statuses(handles) -> Mapping[str, RunState | UserError]`` answers for many unfinished
    runs of this backend with one call to its provider (by run id: each run's state, or the
    error its state could not be read with), where ``status`` would ask once per run. The run
    monitor asks so once per poll round."""
    TEARDOWN = "teardown"
    """``teardown(handle)`` removes what the run holds on the provider (a cluster, say), also
    after the run ended; a run still going is cancelled. Anything kept only there (outputs not
    yet fetched) goes with it."""
    LOG_PIECES = "log-pieces"
    """``log_pieces(handle, follow=...)`` yields the log as ``x_tui.compute.log_pieces.LogPiece``
    items, a line of any length in bounded chunks; ``logs`` is the same log joined into lines."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFiles:
    """Where a run's files are on this machine, for a backend that keeps them here.

    Attributes:
        worker_log: The worker's combined output (every task's lines, prefixed).
        outputs: The run's outputs directory (manifest, devices.log, one directory per task).
    """

    worker_log: Path
    outputs: Path


@runtime_checkable
class ComputeBackend(Protocol):
    """A compute provider that runs jobs.

    Every method but :meth:`submit` takes a handle this backend returned, possibly in another
    process, and must work from it alone. A backend may declare optional abilities in a
    ``capabilities`` attribute (a frozenset of :class:`Capability`).
    """

    name: str
    """The name the backend is registered under."""

    def submit(self, spec: JobSpec, *, project: Path) -> RunHandle:
        """Start ``spec`` from the project at ``project`` and return once it is submitted."""
        ...

    def status(self, handle: RunHandle) -> RunState:
        """Where the run is now."""
        ...

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        """The worker's output lines, without line endings; with ``follow``, until the run ends."""
        ...

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        """Copy the run's outputs to ``destination / handle.run_id`` and return that directory."""
        ...

    def cancel(self, handle: RunHandle) -> None:
        """Stop the run; a run that already ended is left as it is."""
        ...


BackendFactory = Callable[[Mapping[str, JsonValue]], ComputeBackend]
"""What a backend's entry point loads: it builds the backend from its settings table."""


def capabilities_of(backend: object) -> frozenset[Capability]:
    """The optional abilities ``backend`` declares (none when it declares nothing)."""
    declared: frozenset[str] = getattr(backend, "capabilities", frozenset())
    return frozenset(Capability(item) for item in declared)


@dataclass(frozen=True, kw_only=True, slots=True)
class NewRun:
    """A run being submitted: its id, its job and its project, until the provider names it.

    Attributes:
        run_id: The run's id, from :func:`~x_tui.compute.store.new_run_id`.
        spec: The job.
        project: The resolved project root.
        settings: The backend's validated settings, frozen into the handle.
        launch: The shared submit path's record of the run, when it gave one.
    """

    run_id: str
    spec: JobSpec
    project: Path
    settings: Mapping[str, JsonValue] = field(default_factory=dict)
    launch: RunLaunch | None = None

    def step(self, label: str) -> None:
        """A fault point of the submit (see :func:`x_tui.compute.launches.fault_point`)."""
        if self.launch is not None:
            self.launch.step(label)

    def started(self, details: Mapping[str, str]) -> None:
        """Record the provider's references to the run as soon as it runs (with a launch)."""
        if self.launch is not None:
            self.launch.started(details)

    def handle(self, backend: str, details: Mapping[str, str]) -> RunHandle:
        """The handle of this run, submitted now."""
        return RunHandle(
            run_id=self.run_id,
            backend=backend,
            job=self.spec.name,
            project=str(self.project),
            submitted_at=dt.datetime.now(dt.UTC),
            settings=dict(self.settings),
            details=dict(details),
        )


def new_run(
    spec: JobSpec,
    project: Path,
    *,
    settings: Mapping[str, JsonValue],
    launch: RunLaunch | None = None,
) -> NewRun:
    """Start submitting a run of ``spec`` from ``project``.

    Args:
        spec: The job.
        project: The project root.
        settings: The backend's validated settings.
        launch: The shared submit path's record of the run; its id names the run. Without it,
            a fresh run id does.
    """
    return NewRun(
        run_id=launch.run_id if launch is not None else new_run_id(spec.name),
        spec=spec,
        project=project.resolve(),
        settings=dict(settings),
        launch=launch,
    )


def stage_run(runs: Path, run: NewRun) -> Path:
    """Write the run's spec into a directory of its own under ``runs``.

    With a launch, the directory is recorded in the launch record before it is made, so no
    directory is ever left that no record names.

    Returns:
        Its directory, which holds ``spec.json``.

    Raises:
        FileExistsError: If the run's directory already exists.
        StoreWriteError: If the launch record cannot be written; nothing is made.
    """
    run_dir = runs / run.run_id
    if run.launch is not None:
        run.launch.staging(run_dir)
    runs.mkdir(parents=True, exist_ok=True)
    run.step("runs directory ready")
    run_dir.mkdir()
    run.step("run directory made")
    write_atomic(run_dir / SPEC_NAME, dumps_compact(run.spec), step=run.step)
    return run_dir
