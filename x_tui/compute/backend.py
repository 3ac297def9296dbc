"""The interface every compute provider implements, and the helpers that name new runs.

A backend turns a :class:`~x_tui.compute.worker.spec.JobSpec` into a run on its provider and reports
on it afterwards. It returns a :class:`~x_tui.compute.store.RunHandle` from ``submit`` and needs
nothing else to find the run again, so a run submitted from one shell can be followed, fetched or
cancelled from another. Optional abilities are declared in ``capabilities``, never discovered by
catching ``NotImplementedError``; each has the small Protocol it adds to the backend (below
:class:`Capability`), and :func:`ability` gives a backend typed as that Protocol when it declares
the ability.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, overload, runtime_checkable

from x_tui.compute.log_pieces import LogPiece
from x_tui.compute.store import RunHandle, new_run_id
from x_tui.compute.worker.records import JsonValue, dumps_compact, write_atomic

if TYPE_CHECKING:  # (the job spec's module loads with the project, after the first frame)
    from typing import Unpack

    from x_tui.compute.estimate import AcceleratorOffer
    from x_tui.compute.extensions import JobExtensions, ResourceRequest
    from x_tui.compute.launches import LaunchRecord, RunLaunch
    from x_tui.compute.secrets import SecretValues
    from x_tui.compute.worker.errors import UserError
    from x_tui.compute.worker.spec import JobSpec

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


# What each optional ability adds to a backend ----------------------------------------------------


class PlanHooks(TypedDict, total=False):
    """The keywords ``plan`` takes beyond ``project``, each only where its ability is declared.

    Attributes:
        request: With ``Capability.REQUEST``: the accelerator alternatives and node counts.
        extensions: With ``Capability.EXTENSIONS``: dependencies, secrets by name, retries.
    """

    request: ResourceRequest
    extensions: JobExtensions


class SubmitHooks(PlanHooks, total=False):
    """The keywords ``submit`` takes beyond ``project``, each only where its ability is declared.

    Attributes:
        secrets: With ``Capability.EXTENSIONS``: the captured secret values, by name.
        launch: With ``Capability.LAUNCH``: the shared submit path's record of the run.
    """

    secrets: SecretValues
    launch: RunLaunch


class Peeks(Protocol):
    """``Capability.PEEK``: a file of the run's outputs read while it runs."""

    def peek(self, handle: RunHandle, path: str) -> bytes | None:
        """The bytes of ``path`` under the run's outputs; ``None`` when it does not exist (yet)."""
        ...


class KeepsFiles(Protocol):
    """``Capability.LOCAL_FILES``: the run's log and outputs are files on this machine."""

    def run_files(self, handle: RunHandle) -> RunFiles:
        """Where the run's files are."""
        ...


class Plans(Protocol):
    """``Capability.PLAN``: what ``submit`` would ask the provider for, submitting nothing."""

    def plan(
        self, spec: JobSpec, *, project: Path, **hooks: Unpack[PlanHooks]
    ) -> Mapping[str, JsonValue]:
        """The provider's request for ``spec``, as a record."""
        ...


class TakesHooks(Protocol):
    """``Capability.REQUEST``, ``EXTENSIONS``, ``LAUNCH``: ``submit`` takes more keywords."""

    def submit(self, spec: JobSpec, *, project: Path, **hooks: Unpack[SubmitHooks]) -> RunHandle:
        """Start ``spec`` with the keywords of the abilities the backend declares."""
        ...


class Launches(TakesHooks, Protocol):
    """``Capability.LAUNCH``: runs named by their launch, found again after a dead submitter."""

    def adopt(self, record: LaunchRecord) -> RunHandle | str:
        """The run ``record``'s launch started (its handle), or why there is none."""
        ...


class Offers(Protocol):
    """``Capability.ACCELERATORS``: the accelerators the backend offers, and a check."""

    def accelerators(self) -> list[AcceleratorOffer]:
        """The kinds, counts per node and hourly prices the backend offers."""
        ...

    def check_offer(self, request: ResourceRequest) -> None:
        """Raise ``ResourceError`` if the backend does not offer what ``request`` asks for."""
        ...


class Statuses(Protocol):
    """``Capability.STATUSES``: many unfinished runs' states in one call to the provider."""

    def statuses(self, handles: Sequence[RunHandle]) -> Mapping[str, RunState | UserError]:
        """By run id: each run's state, or the error it could not be read with."""
        ...


class TearsDown(Protocol):
    """``Capability.TEARDOWN``: what the run holds on the provider removed."""

    def teardown(self, handle: RunHandle, *, force: bool = False) -> None:
        """Remove the run's provider resources (refused without ``force`` where outputs live
        only there)."""
        ...


class StreamsPieces(Protocol):
    """``Capability.LOG_PIECES``: the log in bounded pieces, a line of any length in chunks."""

    def log_pieces(self, handle: RunHandle, *, follow: bool) -> Iterator[LogPiece]:
        """The worker's output as pieces; with ``follow``, until the run ends."""
        ...


@overload
def ability(backend: object, wanted: Literal[Capability.PEEK]) -> Peeks | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.LOCAL_FILES]) -> KeepsFiles | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.PLAN]) -> Plans | None: ...
@overload
def ability(
    backend: object, wanted: Literal[Capability.REQUEST, Capability.EXTENSIONS]
) -> TakesHooks | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.LAUNCH]) -> Launches | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.ACCELERATORS]) -> Offers | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.STATUSES]) -> Statuses | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.TEARDOWN]) -> TearsDown | None: ...
@overload
def ability(backend: object, wanted: Literal[Capability.LOG_PIECES]) -> StreamsPieces | None: ...
def ability(backend: object, wanted: Capability) -> object | None:
    """``backend`` typed as the Protocol of the ability ``wanted``, or ``None`` when it does not
    declare that ability in its ``capabilities``.

    The declaration is the backend's promise: its methods are not inspected.
    """
    return backend if wanted in capabilities_of(backend) else None


def submit_with(
    backend: ComputeBackend, spec: JobSpec, *, project: Path, hooks: SubmitHooks
) -> RunHandle:
    """``backend.submit`` with ``hooks``, each of which its abilities must declare.

    Raises:
        ValueError: If a hook is given that the backend does not declare (a caller's bug).
    """
    if not hooks:
        return backend.submit(spec, project=project)
    declared = capabilities_of(backend)
    needs = {
        "request": Capability.REQUEST,
        "extensions": Capability.EXTENSIONS,
        "secrets": Capability.EXTENSIONS,
        "launch": Capability.LAUNCH,
    }
    undeclared = sorted(key for key in hooks if needs[key] not in declared)
    if undeclared:
        raise ValueError(f"{backend.name} does not declare the abilities of {undeclared}")
    hooked = (
        ability(backend, Capability.LAUNCH)
        or ability(backend, Capability.EXTENSIONS)
        or ability(backend, Capability.REQUEST)
    )
    if hooked is None:  # unreachable: each hook given names a declared ability
        raise ValueError(f"{backend.name} declares no ability that takes {sorted(hooks)}")
    return hooked.submit(spec, project=project, **hooks)


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


def pieces_of(backend: ComputeBackend, handle: RunHandle, *, follow: bool) -> Iterator[LogPiece]:
    """A run's log as pieces, from any backend.

    Args:
        backend: The run's backend.
        handle: The run.
        follow: Keep reading until the run ends.

    Returns:
        The pieces: streamed in bounded chunks by a backend with ``Capability.LOG_PIECES``, one
        whole line each otherwise.
    """
    streamer = ability(backend, Capability.LOG_PIECES)
    if streamer is not None:
        return streamer.log_pieces(handle, follow=follow)
    return (LogPiece(line, True) for line in backend.logs(handle, follow=follow))
