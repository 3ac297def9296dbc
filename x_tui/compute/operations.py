"""Project, job and run operations: the one place the CLI and the TUI do them.

Open a project (never raising for a bad configuration, so the UI can show the problem), plan a
run of one of its jobs (resolve the spec, pick and build the backend, check that it offers the
accelerator and can give the job's extensions, ask it what it would request, bound the cost),
submit that plan and keep its handle, and rebuild the backend of a stored handle from the
settings frozen into it, never from the project's current configuration. Sweeps (one job over
several inputs) are built on these operations in :mod:`x_tui.compute.sweep_runs`; the
accelerators a backend offers (:func:`backend_offers`, from :mod:`x_tui.compute.offers`) are
reached from here too.

How a backend receives what a spec cannot hold is declared in its ``capabilities``
(:class:`~x_tui.compute.backend.Capability`): ``REQUEST`` gets ``request=`` on ``plan`` and
``submit``; ``EXTENSIONS`` gets ``extensions=`` on both and ``secrets=`` (the captured values) on
``submit``; ``ACCELERATORS`` answers ``accelerators()`` and ``check_offer(request)``. A backend
without ``EXTENSIONS`` is never given a job that declares one: :func:`plan_run` refuses it. A
backend whose runs nobody bills sets an ``unbilled`` attribute to say why (the local backend).

This module imports no Textual and no Rich. The configuration reader
(:mod:`~x_tui.compute.config`) and the backend registry (importlib.metadata) are imported only by
the operations that need them, so the headless verbs that only read handles start fast.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from x_tui.compute.extensions import JobExtensions
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.handle_versions import HandleChoice, choose_handle_version
from x_tui.compute.offers import (
    check_backend_offer,
    estimate_for,
)
from x_tui.compute.run_guards import RunGuard
from x_tui.compute.store import RunHandle, RunStore, default_state_dir
from x_tui.compute.worker.errors import BadRecordError, ConfigError, NoComputeTable, UserError
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec

if TYPE_CHECKING:
    from x_tui.compute.backend import Capability, ComputeBackend, PlanHooks, SubmitHooks
    from x_tui.compute.config import ComputeConfig
    from x_tui.compute.estimate import CostEstimate
    from x_tui.compute.extensions import ResourceRequest
    from x_tui.compute.launches import LaunchBook, LaunchRecord, RunLaunch, StoredLaunches


PYPROJECT = "pyproject.toml"


@dataclass(frozen=True, kw_only=True, slots=True)
class Project:
    """A project directory and its compute configuration, or why it has none.

    Attributes:
        root: The project root; ``None`` outside a project.
        config: Its ``[tool.substrax.compute]`` table; ``None`` when it cannot be read.
        problem: Why there are no jobs (no pyproject.toml, no table, invalid TOML, an unknown
            key...); ``None`` when the configuration was read.
    """

    root: Path | None
    config: ComputeConfig | None
    problem: UserError | None


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPlan:
    """A run that is ready to submit: the resolved job and the backend it goes to.

    Attributes:
        project: The resolved project root.
        spec: The job, with any per-run overrides applied.
        backend: The backend's registered name.
        settings: The backend's settings table from the project's configuration.
        provider_request: What the backend would ask its provider for, from its ``plan`` when it
            declares ``Capability.PLAN``; ``None`` otherwise.
        request: The resources as the table or ``--accelerator`` asked for them, with what a
            spec cannot hold (accelerator alternatives, ``exact``, nodes); ``None`` when unknown.
        extensions: The job's ``dependencies``, ``secrets`` (names only) and ``retries``.
        estimate: The most the run can cost given its timeout, or why that is unknown; ``None``
            when not estimated (a plan rebuilt from a stored run).
        handle_version: The run handle version the submit writes, and why; ``None`` writes the
            seed's version 2.
        guard: The run's budget and preemption retries, written to x-tui's guard side file
            before anything of the run starts (nothing is written when it is empty).
    """

    project: Path
    spec: JobSpec
    backend: str
    settings: Mapping[str, JsonValue]
    provider_request: Mapping[str, JsonValue] | None
    request: ResourceRequest | None = None
    extensions: JobExtensions = field(default_factory=JobExtensions)
    estimate: CostEstimate | None = None
    handle_version: HandleChoice | None = None
    guard: RunGuard = field(default_factory=RunGuard)


@dataclass(frozen=True, kw_only=True, slots=True)
class JobList:
    """A project's jobs, each resolved on its own so one bad table does not hide the others.

    Attributes:
        specs: The jobs that resolve, by name, in the order the configuration lists them.
        problems: Why each other job does not resolve, by name.
    """

    specs: Mapping[str, JobSpec] = field(default_factory=dict)
    problems: Mapping[str, UserError] = field(default_factory=dict)


def locate_project(start: Path | None = None) -> Path | None:
    """The nearest directory at or above ``start`` that holds a ``pyproject.toml``.

    Args:
        start: Where to start; the current directory when ``None``.

    Returns:
        That directory, resolved, or ``None`` when there is none up to the root.
    """
    here = (start if start is not None else Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / PYPROJECT).is_file():
            return directory
    return None


def open_project(root: Path | None) -> Project:
    """Read a project's compute configuration, keeping the error instead of raising it.

    Args:
        root: The project root; ``None`` outside a project.

    Returns:
        The project; its ``problem`` says why ``config`` is ``None``.
    """
    if root is None:
        return Project(
            root=None,
            config=None,
            problem=NoComputeTable(
                f"no {PYPROJECT} in this directory or any above it; pass --project DIR"
            ),
        )
    from x_tui.compute.config import read_compute_config

    resolved = root.resolve()
    try:
        config = read_compute_config(resolved)
    except UserError as error:
        return Project(root=resolved, config=None, problem=error)
    return Project(root=resolved, config=config, problem=None)


def _require_config(project: Project) -> tuple[Path, ComputeConfig]:
    if project.problem is not None:
        raise project.problem
    if project.root is None or project.config is None:
        raise NoComputeTable(f"no {PYPROJECT} in this directory or any above it")
    return project.root, project.config


def list_jobs(project: Project) -> JobList:
    """Resolve every configured job of a project, each on its own.

    Args:
        project: The project.

    Returns:
        The jobs that resolve and, for each other one, the reason.

    Raises:
        UserError: The project's ``problem``, when it has one.
    """
    from x_tui.compute.config import resolve_job

    root, config = _require_config(project)
    specs: dict[str, JobSpec] = {}
    problems: dict[str, UserError] = {}
    for name in config.jobs:
        try:
            specs[name] = resolve_job(config, name, project=root)
        except UserError as error:
            problems[name] = error
    return JobList(specs=specs, problems=problems)


def plan_run(
    project: Project,
    job: str,
    *,
    backend: str | None = None,
    accelerator: str | None = None,
) -> RunPlan:
    """Resolve a job and the backend it would run on, without submitting anything.

    Args:
        project: The project.
        job: The job's name.
        backend: The backend's name; the configuration's ``backend`` when ``None``.
        accelerator: Replaces the configured accelerator for this run, in the hardware grammar
            (``L4``, ``H100:8``, ``H100!:8``, alternatives separated by commas).

    Returns:
        The plan, with the provider's request (``Capability.PLAN``) and the cost estimate.

    Raises:
        NoComputeTable: If the project has no compute table (or no pyproject.toml).
        ConfigError: If the configuration, the job's table, the accelerator or the backend's
            settings cannot be used, no backend is named, the job declares an extension the
            backend cannot give, or the backend refuses the plan; the message names the file
            and key.
        ResourceError: If ``accelerator`` is refused, or the backend does not offer it (a
            ``ConfigError``).
        UnknownJobError: If no such job is configured.
        UnknownBackendError: If no such backend is registered.
        BackendUnavailableError: If the backend's module cannot be imported.
    """
    from x_tui.compute.backend import Capability, ability, capabilities_of
    from x_tui.compute.config import resolve_request

    root, config = _require_config(project)
    resolved = resolve_request(config, job, project=root, accelerator=accelerator)
    spec = resolved.spec
    name = backend if backend is not None else config.backend
    if name is None:
        raise ConfigError(f"{config.where()} no backend: pass --backend or set 'backend' here")
    settings = dict(config.backend_settings(name))
    state_dir = settings.get("state_dir")
    if isinstance(state_dir, str) and state_dir:  # frozen into the handle: never relative
        settings["state_dir"] = os.path.normpath(os.path.join(root, state_dir))
    built = _build_backend(
        name, settings, where=config.where("backends", name), source=str(config.path)
    )
    capabilities = capabilities_of(built)
    extensions = resolved.extensions
    if extensions and Capability.EXTENSIONS not in capabilities:
        keys = ", ".join(extensions.declared)
        raise ConfigError(
            f"{config.where('jobs', job)} {keys}: the {name} backend cannot give x-tui's job"
            f" extensions (it does not declare the '{Capability.EXTENSIONS.value}' capability);"
            " remove them or run on a backend that does, such as local"
        )
    check_backend_offer(built, name, resolved.request)
    request: Mapping[str, JsonValue] | None = None
    planner = ability(built, Capability.PLAN)
    if planner is not None:
        hooks: PlanHooks = {}
        _add_hooks(hooks, capabilities, resolved.request, extensions)
        request = planner.plan(spec, project=root, **hooks)
    return RunPlan(
        project=root,
        spec=spec,
        backend=name,
        settings=settings,
        provider_request=request,
        request=resolved.request,
        extensions=extensions,
        estimate=estimate_for(built, name, resolved.request, spec.timeout_seconds),
        handle_version=choose_handle_version(root),
        guard=resolved.guard,
    )


def _add_hooks(
    hooks: PlanHooks,
    capabilities: frozenset[Capability],
    request: ResourceRequest | None,
    extensions: JobExtensions,
) -> None:
    """Add the keywords a backend's ``plan`` and ``submit`` both take, by what it declares."""
    from x_tui.compute.backend import Capability

    if Capability.REQUEST in capabilities and request is not None:
        hooks["request"] = request
    if Capability.EXTENSIONS in capabilities:
        hooks["extensions"] = extensions


def submit_run(
    plan: RunPlan,
    *,
    store: RunStore | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunHandle:
    """Submit a planned run and keep its handle, recording the run before anything of it runs.

    The order, the same for every backend: a launch record (``<state>/x-tui/launches``) is
    written and the run store is checked writable; only then does the backend stage and start
    the run (naming its directory in the launch record before it makes it, and the provider's
    references as soon as they exist); then the handle is saved and the launch record removed.
    When a record cannot be written, nothing is started and nothing is left. A submitter killed
    at any point leaves a launch record that :func:`read_launches` resolves.

    The job's ``secrets`` are captured from ``environ`` now and handed to the backend's
    ``submit``; they are written nowhere.

    Args:
        plan: The plan, from :func:`plan_run`.
        store: Where to keep the handle; the default store when ``None``.
        environ: The submitting shell's environment; ``os.environ`` when ``None``.

    Returns:
        The run's handle, already saved.

    Raises:
        MissingSecretError: If a variable ``secrets.env`` requires is unset (naming it).
        StoreWriteError: If the launch record, the run's directory or its handle cannot be
            written (read-only store, full disk); nothing runs then.
        UserError: If the backend refuses the run (its message says why).
    """
    from x_tui.compute.backend import Capability, capabilities_of, submit_with
    from x_tui.compute.launches import LaunchBook, RunLaunch, fault_point, probe_writable
    from x_tui.compute.secrets import capture

    values = capture(plan.extensions.secrets, environ, job=plan.spec.name)
    built = _build_backend(plan.backend, plan.settings, where=f"backend {plan.backend!r}:")
    capabilities = capabilities_of(built)
    if plan.extensions and Capability.EXTENSIONS not in capabilities:
        raise ConfigError(
            f"job '{plan.spec.name}' declares {', '.join(plan.extensions.declared)}, which the"
            f" {plan.backend} backend cannot give"
        )
    hooks: SubmitHooks = {}
    _add_hooks(hooks, capabilities, plan.request, plan.extensions)
    if Capability.EXTENSIONS in capabilities:
        hooks["secrets"] = values
    fault_point("backend built")
    store = store if store is not None else RunStore()
    book = LaunchBook(store)
    launch = RunLaunch(book=book, record=_launch_record(plan))
    book.write(launch.record)
    fault_point("launch record written")
    try:
        probe_writable(store.root)
    except BaseException:
        _forget_launch(book, launch.run_id)
        raise
    fault_point("run store checked writable")
    guards = _write_guard(store, book, launch.run_id, plan)
    if Capability.LAUNCH in capabilities:
        hooks["launch"] = launch
    try:
        handle = submit_with(built, plan.spec, project=plan.project, hooks=hooks)
    except BaseException as error:
        _abandon(store, built, launch)
        with contextlib.suppress(OSError):
            guards.remove(launch.run_id)
        if isinstance(error, OSError) and not isinstance(error, UserError):
            from x_tui.compute.launches import StoreWriteError

            where = f" in {error.filename}" if error.filename else ""
            raise StoreWriteError(
                f"cannot stage the run{where}: {error.strerror or error}; nothing was started"
            ) from None
        raise
    fault_point("backend submitted")
    _keep_quote(store, handle.run_id, plan)
    if plan.handle_version is not None:
        handle = replace(handle, schema_version=plan.handle_version.version)
    if book.cancel_asked(handle.run_id):
        _cancel_quietly(built, handle)
    _save_handle(store, launch, built, handle)
    fault_point("handle saved")
    _forget_launch(book, handle.run_id)
    fault_point("launch record and cancel request removed")
    return handle


def _keep_quote(store: RunStore, run_id: str, plan: RunPlan) -> None:
    """Keep the hourly price the plan quoted, for the run's cost so far (``price_quotes``)."""
    from x_tui.compute.price_quotes import plan_quote, save_quote

    try:
        quote = plan_quote(plan.provider_request)
        if quote is not None:
            save_quote(store, run_id, quote)
    except Exception:  # the run is submitted: without a quote it only shows no cost
        return


def _write_guard(store: RunStore, book: LaunchBook, run_id: str, plan: RunPlan) -> GuardBook:
    """Write the run's guard side file (when the plan has a guard), before the run starts.

    Raises:
        StoreWriteError: If it cannot be written; the launch record is removed, nothing runs.
    """
    guards = GuardBook(store.root.parent.parent)
    if not plan.guard:
        return guards
    try:
        guards.write(run_id, _priced_guard(plan))
    except OSError as error:
        _forget_launch(book, run_id)
        from x_tui.compute.launches import StoreWriteError

        raise StoreWriteError(
            f"cannot write the run's budget in {guards.root}: {error.strerror or error};"
            " nothing was started"
        ) from None
    return guards


def _priced_guard(plan: RunPlan) -> RunGuard:
    """The plan's guard with the hourly price its estimate was made at (its bound over its
    hours), what the watcher counts the run's cost so far at."""
    estimate = plan.estimate
    if estimate is None or estimate.max_usd is None or estimate.hours <= 0:
        return plan.guard
    return replace(plan.guard, hourly_usd=estimate.max_usd / estimate.hours)


def _launch_record(plan: RunPlan) -> LaunchRecord:
    import datetime as dt
    import os

    from x_tui.compute.launches import LaunchRecord, process_start
    from x_tui.compute.store import new_run_id

    return LaunchRecord(
        run_id=new_run_id(plan.spec.name),
        backend=plan.backend,
        job=plan.spec.name,
        project=str(plan.project.resolve()),
        submitted_at=dt.datetime.now(dt.UTC),
        settings=dict(plan.settings),
        submitter_pid=os.getpid(),
        submitter_start=process_start(os.getpid()) or "",
    )


def _forget_launch(book: LaunchBook, run_id: str) -> None:
    # A launch record that cannot be removed is resolved by the next reader (its handle exists).
    with contextlib.suppress(OSError):
        book.remove(run_id)


def _abandon(store: RunStore, backend: ComputeBackend, launch: RunLaunch) -> None:
    """The backend failed the run: leave nothing behind, or keep what may run as a run."""
    from x_tui.compute.backend import Capability, ability

    adopter = ability(backend, Capability.LAUNCH)
    if launch.record.details and adopter is not None:
        # The provider may have the run (a launch sent, then an error): keep it as a run, whose
        # state its backend reads; if that fails, the launch record stays for the next reader.
        answer = adopter.adopt(launch.record)
        if not isinstance(answer, str):
            with contextlib.suppress(OSError):
                store.save(answer)
                _forget_launch(launch.book, launch.run_id)
        return
    if launch.record.staging:
        shutil.rmtree(launch.record.staging, ignore_errors=True)
    _forget_launch(launch.book, launch.run_id)


def _cancel_quietly(backend: ComputeBackend, handle: RunHandle) -> None:
    with contextlib.suppress(UserError, OSError):
        backend.cancel(handle)


def _save_handle(
    store: RunStore, launch: RunLaunch, backend: ComputeBackend, handle: RunHandle
) -> None:
    """Save the handle; when it cannot be, stop the run and remove what it staged."""
    from x_tui.compute.launches import StoreWriteError, fault_point

    try:
        store.save(handle, step=fault_point)
    except OSError as error:
        try:
            backend.cancel(handle)
        except (UserError, OSError) as failure:
            raise StoreWriteError(
                f"cannot write the run's handle in {store.root}: {error.strerror or error};"
                f" the run could not be stopped either ({failure}), so it is listed from its"
                f" launch record: x-tui cancel {handle.run_id}"
            ) from None
        if launch.record.staging:
            shutil.rmtree(launch.record.staging, ignore_errors=True)
        _forget_launch(launch.book, handle.run_id)
        raise StoreWriteError(
            f"cannot write the run's handle in {store.root}: {error.strerror or error};"
            " the run was stopped"
        ) from None


def read_launches(store: RunStore | None = None) -> StoredLaunches:
    """The runs whose submit has not finished, each resolved if its submitter died.

    A launch record whose handle is saved is removed. One whose submitter still runs is a run
    in state ``submitting``. One whose submitter died is handed to its backend's ``adopt``
    (``Capability.LAUNCH``): a run it finds gets its handle saved (and stopped if a cancel was
    asked meanwhile), and its launch record goes; otherwise the record is marked failed with the
    reason (a backend without ``adopt`` cannot say whether the run started).

    Args:
        store: The run store; the default one when ``None``.

    Returns:
        The launch records left (``submitting`` or ``failed``), and each one that cannot be read.
    """
    from x_tui.compute.launches import LaunchBook, StoredLaunches

    store = store if store is not None else RunStore()
    book = LaunchBook(store)
    stored = book.read_all()
    left = []
    for record in stored.records:
        resolved = _resolve_launch(store, book, record)
        if resolved is not None:
            left.append(resolved)
    return StoredLaunches(records=tuple(left), unreadable=stored.unreadable)


def _resolve_launch(store: RunStore, book: LaunchBook, record: LaunchRecord) -> LaunchRecord | None:
    from x_tui.compute.backend import Capability, ability
    from x_tui.compute.launches import FAILED

    if store.path_of(record.run_id).exists():
        _forget_launch(book, record.run_id)
        return None
    if record.state == FAILED or record.submitter_alive():
        return record
    try:
        backend = _build_backend(
            record.backend, record.settings, where=f"backend {record.backend!r}:"
        )
    except UserError as error:
        return book.mark_failed(
            record, f"the submitting process died; its backend cannot be rebuilt here: {error}"
        )
    adopter = ability(backend, Capability.LAUNCH)
    if adopter is None:
        return book.mark_failed(
            record,
            f"the submitting process died before the run's handle was saved; the"
            f" {record.backend} backend cannot tell whether the run started",
        )
    answer = adopter.adopt(record)
    if isinstance(answer, str):
        return book.mark_failed(record, answer)
    try:
        store.save(answer)
    except OSError:
        return record  # still listed; resolved again once the store can be written
    if book.cancel_asked(record.run_id):
        _cancel_quietly(backend, answer)
    _forget_launch(book, record.run_id)
    return None


def backend_for(handle: RunHandle) -> ComputeBackend:
    """Rebuild the backend of a stored run from the settings frozen into its handle.

    Args:
        handle: The run's handle.

    Returns:
        The backend, built from ``handle.settings``, never from the project's configuration.

    Raises:
        UnknownBackendError: If the handle's backend is not registered here.
        BackendUnavailableError: If its module cannot be imported.
        BadRecordError: If the backend refuses the handle's settings.
    """
    from x_tui.compute.registry import load_backend
    from x_tui.compute.worker.errors import BackendUnavailableError, UnknownBackendError

    try:
        return load_backend(handle.backend, handle.settings)
    except (UnknownBackendError, BackendUnavailableError):
        raise
    except (ValueError, LookupError) as error:
        raise BadRecordError(
            f"run {handle.run_id}: its {handle.backend} settings are refused: {error}"
        ) from None


def fetch_root() -> Path:
    """Where runs' outputs are fetched to when no destination is given.

    Returns:
        ``<default_state_dir>/compute/fetched``, never a directory of the project.
    """
    return default_state_dir() / "compute" / "fetched"


def _build_backend(
    name: str, settings: Mapping[str, JsonValue], *, where: str, source: str | None = None
) -> ComputeBackend:
    """Load a backend, naming where its settings come from in a refusal of them."""
    from x_tui.compute.registry import load_backend
    from x_tui.compute.worker.errors import BackendUnavailableError, UnknownBackendError

    try:
        return load_backend(name, settings)
    except (UnknownBackendError, BackendUnavailableError):
        raise
    except (ValueError, LookupError) as error:
        message = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
        if source is None or source not in message:
            # A backend names its table ("[tool...backends.local] ..."); add the file before it.
            bare = source is not None and message.startswith("[")
            message = f"{source}: {message}" if bare else f"{where} {message}"
        raise ConfigError(message) from None
