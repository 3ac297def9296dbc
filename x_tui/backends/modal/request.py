"""What a run asks Modal for: the image layers, the function's options and the volumes.

:func:`build_request` turns a job into a :class:`ModalRequest` without importing ``modal`` or
reaching the network, and refuses here, before anything is built, whatever Modal would refuse
later (a timeout outside 1 s .. 24 h, a mount with no Volume, more GPUs than one container has).
``x-tui plan --backend modal`` prints :meth:`ModalRequest.to_json`; ``submit`` builds exactly these
layers and options, so the plan is what is submitted.

The image is built in layers keyed on what they depend on, so an edit to the project's source
rebuilds only the layers after the locked dependencies and the job's own:

1. ``Image.debian_slim`` on this interpreter's Python (the serialized function needs the same
   ``major.minor`` in the container);
2. ``Image.uv_sync``: the locked dependencies and the job's extras, ``--frozen``, on that Python;
3. the job's ``dependencies`` (x-tui's extension), each a layer when declared:
   ``Image.apt_install`` (``apt``), then ``Image.uv_pip_install`` into the project's environment
   (``python``; ``Image.pip_install`` when there is no ``pyproject.toml`` to sync), then
   ``Image.run_commands`` (``post_install``, before the project's source is in the image);
4. ``Image.add_local_dir``: the project's source, baked in (``copy=True``), without what
   ``ignore``, the project's ``.gitignore`` and ``.venv`` leave out;
5. ``Image.run_commands``: the project installed into that environment without dependencies;
6. ``Image.add_local_file``: the x-tui worker zipapp, keyed on its digest.

A job's ``secrets`` are named here, never valued: the values are captured at submit and given to
the function as ``modal.Secret`` objects (see :mod:`.sdk`). Its ``retries`` become the worker's
retries table, passed to the function as an argument and given to the worker as ``--retries``.
The cost estimate is x-tui's one table of Modal's prices, :data:`x_tui.compute.prices.MODAL`.
"""

from __future__ import annotations

import math
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from x_tui.backends.modal.ignore import ignore_patterns
from x_tui.backends.modal.settings import TABLE, ModalSettings
from x_tui.compute import prices
from x_tui.compute.dependencies import Dependencies
from x_tui.compute.estimate import estimate_cost
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.resources import check_placement, request_from_resources
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec, MountAccess
from x_tui.compute.worker_bundle import WORKER_NAME

PROJECT_DIR: Final = "/project"
"""Where the project's source is in the container."""
OUTPUTS_DIR: Final = "/outputs"
"""Where the outputs Volume is mounted in the container; a run writes to ``/outputs/<run_id>``."""
UV: Final = "/.uv/uv"
"""The uv binary ``Image.uv_sync`` puts in the image."""
VENV_PYTHON: Final = "/.uv/.venv/bin/python"
"""The interpreter of the environment ``Image.uv_sync`` makes: the project's interpreter."""
IMAGE_PYTHON: Final = "/usr/local/bin/python"
"""``debian_slim``'s interpreter, used when the project has no ``pyproject.toml`` to sync."""
WORKER_DIR: Final = "/x-tui"
"""Where the worker zipapp goes, in a directory named by its digest."""
RESERVED_PATHS: Final = (PROJECT_DIR, OUTPUTS_DIR, WORKER_DIR, "/.uv")
"""Container paths a mount may not take or lie under."""
MIN_TIMEOUT_SECONDS: Final = 1
MAX_TIMEOUT_SECONDS: Final = 24 * 60 * 60
"""Modal's limits on a function's timeout."""
MAX_GPUS: Final = 8
"""The most GPUs one Modal container has."""


def python_version() -> str:
    """This interpreter's ``major.minor``, which the image's Python must match."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ImageStep:
    """One layer of the image: an ``Image`` method and its arguments.

    Attributes:
        method: The method, such as ``"uv_sync"`` (``"debian_slim"`` starts the chain).
        args: Its positional arguments.
        options: Its keyword arguments.
        keyed_on: What the layer depends on, for people reading the plan.
    """

    method: str
    args: tuple[JsonValue, ...] = ()
    options: Mapping[str, JsonValue] = field(default_factory=dict)
    keyed_on: str = ""

    def to_json(self) -> dict[str, JsonValue]:
        """The step as the plan shows it."""
        return {
            "method": self.method,
            "args": list(self.args),
            "options": dict(self.options),
            "keyed_on": self.keyed_on,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class VolumeMount:
    """A Modal Volume mounted in the function's container.

    A writable Volume is created when missing; a read-only one is not (an empty dataset Volume
    made up on the spot would only hide a misspelled name), so Modal refuses the run instead.

    Attributes:
        path: Where it is mounted.
        volume: The Volume's name.
        read_only: Whether it is mounted with ``.read_only()``.
        mount: The job's mount it serves; ``None`` for the outputs Volume.
    """

    path: str
    volume: str
    read_only: bool
    mount: str | None

    @property
    def create_if_missing(self) -> bool:
        """Whether the Volume is created when it does not exist: only a writable one is."""
        return not self.read_only

    def to_json(self) -> dict[str, JsonValue]:
        """The mount as the plan shows it."""
        return {
            "volume": self.volume,
            "read_only": self.read_only,
            "mount": self.mount,
            "create_if_missing": self.create_if_missing,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionOptions:
    """The options of the function the worker runs in (besides image and volumes).

    Attributes:
        gpu: Modal's ``gpu``: ``None``, ``"L4"``, ``"H100:2"``, ``"H100!"``, or fallbacks in order.
        cpu: Physical cores, fractional allowed; ``None`` takes Modal's default.
        memory: MiB; ``None`` takes Modal's default.
        timeout: Whole seconds, the job's timeout rounded up.
    """

    gpu: str | tuple[str, ...] | None
    cpu: float | None
    memory: int | None
    timeout: int

    def keywords(self) -> dict[str, JsonValue]:
        """The keyword arguments of ``App.function``, ``serialized=True`` included."""
        gpu: JsonValue = list(self.gpu) if isinstance(self.gpu, tuple) else self.gpu
        return {
            "gpu": gpu,
            "cpu": self.cpu,
            "memory": self.memory,
            "timeout": self.timeout,
            "serialized": True,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class ModalRequest:
    """Everything a run asks Modal for.

    Attributes:
        app_name: The name of the run's app.
        environment: The Modal environment; the profile's default when ``None``.
        image: The image's layers, in order.
        function: The function's options.
        volumes: The Volumes mounted, the outputs Volume first.
        python: The interpreter the worker runs on in the container.
        worker_file: Where the worker zipapp is written here before it is added to the image.
        worker_path: Where the worker zipapp is in the container.
        resources: The resources the function asks for, as written, which the estimate prices.
        secrets: The names the tasks see captured secrets under (``Secret.from_dict``).
        platform_secrets: The Modal Secrets the function gets by name (``Secret.from_name``).
        retries: The worker's retries table, ``{"<task>": more attempts}``; empty for none.
        watch: The worker's arguments for the job's ``telemetry_seconds``, ``stall_seconds``
            and ``metric_patterns`` (``WatchSettings.worker_arguments``); empty for defaults.
        notes: What the request leaves out, and why, for people reading the plan.
    """

    app_name: str
    environment: str | None
    image: tuple[ImageStep, ...]
    function: FunctionOptions
    volumes: tuple[VolumeMount, ...]
    python: str
    worker_file: Path
    worker_path: str
    resources: ResourceRequest = field(default_factory=ResourceRequest)
    secrets: tuple[str, ...] = ()
    platform_secrets: tuple[str, ...] = ()
    retries: Mapping[str, int] = field(default_factory=dict)
    watch: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def estimate(self) -> dict[str, JsonValue]:
        """What the run costs per hour at most, and at most in all given its function timeout.

        Returns:
            The bound of :func:`~x_tui.compute.estimate.estimate_cost` over the function's
            timeout from :data:`x_tui.compute.prices.MODAL` (``max_usd``, ``breakdown``,
            ``unknown``, ``source``...), with ``hourly_usd`` (the bound of one hour) and the
            table's date in ``prices_as_of``.
        """
        table = prices.MODAL

        def bound(seconds: float) -> dict[str, JsonValue]:
            return estimate_cost(
                self.resources,
                timeout_seconds=seconds,
                offers=table.accelerators,
                cpu_core_hour_usd=table.cpu_core_hour_usd,
                memory_gib_hour_usd=table.memory_gib_hour_usd,
                source=table.label,
            ).describe()

        return {
            **bound(self.function.timeout),
            "hourly_usd": bound(3600)["max_usd"],
            "prices_as_of": table.date,
            "note": table.note,
        }

    def to_json(self) -> dict[str, JsonValue]:
        """The request as ``x-tui plan --json`` shows it."""
        return {
            "app": self.app_name,
            "environment": self.environment,
            "image": [step.to_json() for step in self.image],
            "function": self.function.keywords(),
            "volumes": {mount.path: mount.to_json() for mount in self.volumes},
            "worker": {
                "python": self.python,
                "zipapp": self.worker_path,
                "project": PROJECT_DIR,
                "outputs": f"{OUTPUTS_DIR}/<run_id>",
            },
            **self._extensions_json(),
            "estimate": self.estimate(),
            "notes": list(self.notes),
        }

    def _extensions_json(self) -> dict[str, JsonValue]:
        shown: dict[str, JsonValue] = {}
        if self.secrets or self.platform_secrets:
            shown["secrets"] = {
                "from_dict": list(self.secrets),
                "from_name": list(self.platform_secrets),
                "how": "Secret.from_dict of the values captured from this shell at submit, and"
                " Secret.from_name of each Modal Secret, given to the function as secrets=;"
                " names only here",
            }
        if self.retries:
            shown["retries"] = {
                "table": dict(self.retries),
                "how": "passed to the function as retries_json; the worker gets --retries with"
                " it written to a file in the container",
            }
        if self.watch:
            shown["watch"] = {
                "arguments": list(self.watch),
                "how": "passed to the function as watch_json; the worker gets them as arguments",
            }
        return shown


def app_name(project: Path, job: str) -> str:
    """The run's app name, ``<project dir>-<job>``, in the characters Modal accepts."""
    raw = f"{project.name}-{job}"
    cleaned = "".join(
        char if char.isascii() and (char.isalnum() or char in "._-") else "-" for char in raw
    )
    return cleaned[:64]


def modal_gpu(request: ResourceRequest) -> str | tuple[str, ...] | None:
    """Modal's ``gpu`` for a request: ``None``, one shape, or the alternatives in order.

    A shape is ``KIND``, ``KIND:COUNT``, with ``!`` after the kind when it must be exactly that
    kind (``H100!`` is never upgraded to an H200).

    Raises:
        ConfigError: If a shape asks for more GPUs than one Modal container has.
    """
    if request.accelerator is None:
        return None
    shapes: list[str] = []
    for choice in request.accelerator.alternatives:
        if choice.count > MAX_GPUS:
            raise ConfigError(
                f"accelerator {str(choice)!r}: a Modal container has at most"
                f" {MAX_GPUS} GPUs; ask for {MAX_GPUS} or fewer"
            )
        shapes.append(str(choice))
    return shapes[0] if len(shapes) == 1 else tuple(shapes)


def function_timeout(spec: JobSpec) -> int:
    """The job's timeout in whole seconds, rounded up, within Modal's limits.

    Raises:
        ConfigError: If it is outside 1 s .. 24 h, naming the job and the value.
    """
    seconds = math.ceil(spec.timeout_seconds)
    if not MIN_TIMEOUT_SECONDS <= seconds <= MAX_TIMEOUT_SECONDS:
        raise ConfigError(
            f"job {spec.name!r} timeout_seconds {spec.timeout_seconds:g} is beyond Modal's limit"
            f" of {MAX_TIMEOUT_SECONDS} s (24 h) for one function call; shorten it or split the job"
        )
    return seconds


def _is_package(pyproject: Path) -> bool:
    try:
        with pyproject.open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return False
    package = document.get("tool", {}).get("uv", {}).get("package")
    if isinstance(package, bool):
        return package
    return isinstance(document.get("build-system"), dict)


def dependency_steps(dependencies: Dependencies, *, synced: bool) -> list[ImageStep]:
    """The image layers of a job's ``dependencies``, each only when declared.

    Args:
        dependencies: What the job installs beyond its locked environment.
        synced: Whether an ``Image.uv_sync`` layer comes before (its environment is first on
            ``PATH``, so ``uv_pip_install`` installs into it); ``pip_install`` otherwise.

    Returns:
        ``apt_install``, then ``uv_pip_install`` (or ``pip_install``), then ``run_commands``.
    """
    steps: list[ImageStep] = []
    if dependencies.apt:
        steps.append(
            ImageStep(
                method="apt_install", args=dependencies.apt, keyed_on="the job's dependencies.apt"
            )
        )
    if dependencies.python:
        steps.append(
            ImageStep(
                method="uv_pip_install" if synced else "pip_install",
                args=dependencies.python,
                keyed_on="the job's dependencies.python, into the project's environment"
                if synced
                else "the job's dependencies.python",
            )
        )
    if dependencies.post_install:
        steps.append(
            ImageStep(
                method="run_commands",
                args=dependencies.post_install,
                keyed_on="the job's dependencies.post_install (before the project's source)",
            )
        )
    return steps


def _volumes(spec: JobSpec, settings: ModalSettings) -> tuple[VolumeMount, ...]:
    mounts = [
        VolumeMount(path=OUTPUTS_DIR, volume=settings.outputs_volume, read_only=False, mount=None)
    ]
    for mount in spec.mounts:
        volume = settings.volumes.get(mount.name)
        if volume is None:
            raise ConfigError(
                f"{TABLE} volumes: job {spec.name!r} mounts {mount.name!r} at {mount.path}, and no"
                f' Modal Volume is configured for it; add volumes = {{ {mount.name} = "VOLUME" }}'
            )
        for reserved in RESERVED_PATHS:
            if mount.path == reserved or mount.path.startswith(reserved + "/"):
                raise ConfigError(
                    f"job {spec.name!r} mount {mount.name!r} path {mount.path}: the modal backend"
                    f" uses {reserved} itself; mount it elsewhere"
                )
        mounts.append(
            VolumeMount(
                path=mount.path,
                volume=volume,
                read_only=mount.access is MountAccess.READ_ONLY,
                mount=mount.name,
            )
        )
    return tuple(mounts)


def build_request(
    spec: JobSpec,
    *,
    project: Path,
    settings: ModalSettings,
    worker_file: Path,
    worker_digest: str,
    request: ResourceRequest | None = None,
    extensions: JobExtensions | None = None,
) -> ModalRequest:
    """Describe what submitting ``spec`` asks Modal for, refusing what Modal would refuse.

    Args:
        spec: The job.
        project: The project root.
        settings: The backend's settings.
        worker_file: Where the worker zipapp is written here.
        worker_digest: The zipapp's digest, which keys its layer.
        request: The job's resources as the user wrote them (alternatives, exact kinds); the
            spec's own resources when ``None``.
        extensions: The job's dependencies (image layers), secrets (by name) and retries.

    Returns:
        The request.

    Raises:
        ConfigError: If the timeout is outside Modal's limits, a mount has no Volume or takes a
            path the backend uses, or the accelerator does not fit one Modal container.
    """
    resources = request if request is not None else request_from_resources(spec.resources)
    extensions = extensions if extensions is not None else JobExtensions()
    check_placement(resources, multi_node=False, backend="modal")
    function = FunctionOptions(
        gpu=modal_gpu(resources),
        cpu=float(resources.cpu.per_node) if resources.cpu is not None else None,
        memory=resources.memory_mib,
        timeout=function_timeout(spec),
    )
    volumes = _volumes(spec, settings)
    version = python_version()
    root = project.resolve()
    pyproject = root / "pyproject.toml"
    notes: list[str] = []
    steps = [
        ImageStep(
            method="debian_slim",
            options={"python_version": version},
            keyed_on=f"Python {version}, the submitting interpreter's",
        )
    ]
    python = IMAGE_PYTHON
    if pyproject.is_file():
        python = VENV_PYTHON
        steps.append(
            ImageStep(
                method="uv_sync",
                options={
                    "uv_project_dir": str(root),
                    "extras": list(spec.extras),
                    "frozen": True,
                    "extra_options": f"--python {version}",
                },
                keyed_on="pyproject.toml, uv.lock and the job's extras",
            )
        )
    else:
        notes.append("the project has no pyproject.toml: no locked dependencies are installed")
    steps += dependency_steps(extensions.dependencies, synced=pyproject.is_file())
    steps.append(
        ImageStep(
            method="add_local_dir",
            args=(str(root), PROJECT_DIR),
            options={"copy": True, "ignore": ignore_patterns(root, settings.ignore)},
            keyed_on="the project's source",
        )
    )
    if pyproject.is_file() and _is_package(pyproject):
        steps.append(
            ImageStep(
                method="run_commands",
                args=(f"{UV} pip install --python {VENV_PYTHON} --no-deps {PROJECT_DIR}",),
                keyed_on="the project's source",
            )
        )
    elif pyproject.is_file():
        notes.append(
            "pyproject.toml declares no [build-system]: the project is not installed; its tasks"
            f" run from {PROJECT_DIR}"
        )
    worker_path = f"{WORKER_DIR}/{worker_digest}/{WORKER_NAME}"
    steps.append(
        ImageStep(
            method="add_local_file",
            args=(str(worker_file), worker_path),
            options={"copy": True},
            keyed_on=f"the x-tui worker {worker_digest}",
        )
    )
    return ModalRequest(
        app_name=app_name(root, spec.name),
        environment=settings.environment,
        image=tuple(steps),
        function=function,
        volumes=volumes,
        python=python,
        worker_file=worker_file,
        worker_path=worker_path,
        resources=resources,
        secrets=extensions.secrets.task_names,
        platform_secrets=extensions.secrets.platform,
        retries=extensions.retries.worker_table([task.name for task in spec.tasks]),
        watch=tuple(extensions.watch.worker_arguments()),
        notes=tuple(notes),
    )
