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

This module imports no Textual and no Rich. The configuration reader (tomlkit) and the backend
registry (importlib.metadata) are imported only by the operations that need them, so the headless
verbs that only read handles start fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from x_tui.compute.errors import BadRecordError, ConfigError, NoComputeTable, UserError
from x_tui.compute.extensions import JobExtensions
from x_tui.compute.handle_versions import HandleChoice, choose_handle_version
from x_tui.compute.offers import (
    BackendOffers,
    backend_names,
    backend_offers,
    check_backend_offer,
    estimate_for,
)
from x_tui.compute.records import JsonValue
from x_tui.compute.spec import JobSpec
from x_tui.compute.store import RunHandle, RunStore, default_state_dir

if TYPE_CHECKING:
    from x_tui.compute.backend import ComputeBackend
    from x_tui.compute.config import ComputeConfig
    from x_tui.compute.estimate import CostEstimate
    from x_tui.compute.extensions import ResourceRequest

__all__ = [
    "BackendOffers", "JobList", "Project", "RunPlan", "backend_for", "backend_names",
    "backend_offers", "fetch_root", "list_jobs", "locate_project", "open_project", "plan_run",
    "submit_run",
]  # fmt: skip

PYPROJECT = "pyproject.toml"


class _Planner(Protocol):
    def plan(self, spec: JobSpec, *, project: Path, **hooks: Any) -> Mapping[str, JsonValue]: ...


class _Submitter(Protocol):
    def submit(self, spec: JobSpec, *, project: Path, **hooks: Any) -> RunHandle: ...


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
    from x_tui.compute.backend import Capability, capabilities_of
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
    if Capability.PLAN in capabilities:
        planner = cast(_Planner, built)
        hooks = _hooks(capabilities, resolved.request, extensions)
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
    )


def _hooks(
    capabilities: frozenset[Any],
    request: ResourceRequest | None,
    extensions: JobExtensions,
) -> dict[str, Any]:
    """The keywords a backend's ``plan`` and ``submit`` take, by what it declares."""
    from x_tui.compute.backend import Capability

    hooks: dict[str, Any] = {}
    if Capability.REQUEST in capabilities and request is not None:
        hooks["request"] = request
    if Capability.EXTENSIONS in capabilities:
        hooks["extensions"] = extensions
    return hooks


def submit_run(
    plan: RunPlan,
    *,
    store: RunStore | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunHandle:
    """Submit a planned run and keep its handle.

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
        UserError: If the backend refuses the run (its message says why).
    """
    from x_tui.compute.backend import Capability, capabilities_of
    from x_tui.compute.secrets import capture

    values = capture(plan.extensions.secrets, environ, job=plan.spec.name)
    built = _build_backend(plan.backend, plan.settings, where=f"backend {plan.backend!r}:")
    capabilities = capabilities_of(built)
    if plan.extensions and Capability.EXTENSIONS not in capabilities:
        raise ConfigError(
            f"job '{plan.spec.name}' declares {', '.join(plan.extensions.declared)}, which the"
            f" {plan.backend} backend cannot give"
        )
    hooks = _hooks(capabilities, plan.request, plan.extensions)
    if Capability.EXTENSIONS in capabilities:
        hooks["secrets"] = values
    handle = cast(_Submitter, built).submit(plan.spec, project=plan.project, **hooks)
    if plan.handle_version is not None:
        handle = replace(handle, schema_version=plan.handle_version.version)
    (store if store is not None else RunStore()).save(handle)
    return handle


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
    from x_tui.compute.errors import BackendUnavailableError, UnknownBackendError
    from x_tui.compute.registry import load_backend

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
    from x_tui.compute.errors import BackendUnavailableError, UnknownBackendError
    from x_tui.compute.registry import load_backend

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
