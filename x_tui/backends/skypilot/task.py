"""The SkyPilot task a run launches, as its task file holds it (a dict SkyPilot's schema accepts).

Each run gets a cluster of its own, named from its run id (``sx-<run id>``, lower-cased, as
substrax names them). The task syncs the project as its workdir, runs ``setup`` (the
``setup_commands``, uv if missing, ``uv sync --frozen`` with the job's extras, and whatever the
transport checks), then ``run``: the worker zipapp, shipped with the spec as file mounts under
``~/.x-tui/<run id>/``, started by ``worker_python`` and wrapped by the transport. Resources map as
the seed says (``accelerators``, ``cpus = "<n>+"``, ``memory = "<n>MB+"``, ``infra``,
``use_spot``), with the hardware grammar's accelerator alternatives (SkyPilot tries a list in
order) and ``num_nodes`` when a shape spans several machines.

Nothing here calls SkyPilot: the same dict is what ``plan`` prints and what ``submit`` writes.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from x_tui.backends.skypilot.settings import SkyPilotSettings
from x_tui.backends.skypilot.transports import Transport
from x_tui.compute.backend import SPEC_NAME
from x_tui.compute.dependencies import Dependencies
from x_tui.compute.extensions import AcceleratorChoice, JobExtensions, ResourceRequest
from x_tui.compute.retries import RETRIES_NAME
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec
from x_tui.compute.worker_bundle import WORKER_NAME

TASK_NAME: Final = "task.yaml"
"""The task file beside the staged spec (JSON text, which YAML reads as it is)."""

REMOTE_RUNS: Final = "~/.x-tui"
"""Where each run's spec and worker are mounted on its cluster: ``~/.x-tui/<run id>/``."""

UV_INSTALL: Final = "command -v uv >/dev/null || curl -LsSf https://astral.sh/uv/install.sh | sh"
PATH_LINE: Final = 'export PATH="$HOME/.local/bin:$PATH"'


def cluster_name(run_id: str) -> str:
    """The cluster of a run: ``sx-`` and the run id, lower-cased, every other character ``-``."""
    return "sx-" + re.sub(r"[^a-z0-9]", "-", run_id.lower())


def _accelerator(choice: AcceleratorChoice) -> str:
    return f"{choice.kind}:{choice.per_node}"


def task_resources(
    request: ResourceRequest, settings: SkyPilotSettings
) -> tuple[dict[str, JsonValue], int]:
    """The task's ``resources`` and its ``num_nodes``.

    Args:
        request: The job's resources as written (alternatives and nodes included).
        settings: The backend's settings (``use_spot``, ``infra``).

    Returns:
        The resources (``use_spot`` always; ``accelerators``, ``cpus``, ``memory`` and ``infra``
        when set) and the node count.
    """
    resources: dict[str, JsonValue] = {"use_spot": settings.use_spot}
    if request.accelerator is not None:
        shapes = [_accelerator(choice) for choice in request.accelerator.alternatives]
        resources["accelerators"] = shapes[0] if len(shapes) == 1 else list(shapes)
    if request.cpu is not None:
        resources["cpus"] = f"{request.cpu.per_node:g}+"
    if request.memory_mib is not None:
        resources["memory"] = f"{request.memory_mib}MB+"
    if settings.infra is not None:
        resources["infra"] = settings.infra
    return resources, request.nodes


def setup_script(
    spec: JobSpec,
    settings: SkyPilotSettings,
    transport: Transport,
    dependencies: Dependencies | None = None,
) -> str:
    """The task's ``setup``: prepare the image, sync the locked environment, check the transport.

    In order: ``setup_commands``; the job's apt packages; uv (installed if missing); ``uv sync
    --frozen`` with the job's extras; the job's Python packages into that environment; its
    ``post_install`` commands; the transport's checks.
    """
    wanted = dependencies or Dependencies()
    sync = " ".join(
        ["uv sync --frozen", *(f"--extra {shlex.quote(extra)}" for extra in spec.extras)]
    )
    lines = ["set -e", *settings.setup_commands]
    if wanted.apt:
        packages = " ".join(shlex.quote(package) for package in wanted.apt)
        lines += [
            'if command -v sudo >/dev/null; then SUDO="sudo -E"; else SUDO=""; fi',
            "$SUDO apt-get update -y",
            f"DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y {packages}",
        ]
    lines += [UV_INSTALL, PATH_LINE, sync]
    if wanted.python:
        lines.append("uv pip install " + " ".join(shlex.quote(r) for r in wanted.python))
    lines += [*wanted.post_install, *transport.setup_lines()]
    return "\n".join(lines)


def run_script(
    spec: JobSpec,
    *,
    run_id: str,
    nodes: int,
    settings: SkyPilotSettings,
    transport: Transport,
    retries: bool = False,
    watch: Sequence[str] = (),
) -> str:
    """The task's ``run``: the worker on the run's spec, its outputs where the transport says.

    With several nodes SkyPilot runs this on each; the head's outputs are the run's, every other
    node's go under ``nodes/<rank>/`` of them. With ``retries`` the worker reads the run's
    ``retries.json`` (mounted beside its spec). ``watch`` are the worker's arguments for the
    job's ``telemetry_seconds``, ``stall_seconds`` and ``metric_patterns``
    (``WatchSettings.worker_arguments``), each quoted for the shell.
    """
    remote = f"$HOME/{REMOTE_RUNS.removeprefix('~/')}/{run_id}"
    worker = " ".join(
        [
            shlex.join(shlex.split(settings.worker_python)),
            f'"{remote}/{WORKER_NAME}"',
            "--spec",
            f'"{remote}/{SPEC_NAME}"',
            "--project",
            ".",
            "--outputs",
            '"$OUTPUTS"',
            *(["--retries", f'"{remote}/{RETRIES_NAME}"'] if retries else []),
            *(shlex.quote(argument) for argument in watch),
        ]
    )
    lines = [PATH_LINE, f'OUTPUTS="{transport.outputs_dir(run_id)}"']
    if nodes > 1:
        lines.append(
            'if [ "${SKYPILOT_NODE_RANK:-0}" != 0 ]; then'
            ' OUTPUTS="$OUTPUTS/nodes/$SKYPILOT_NODE_RANK"; fi'
        )
    lines += ['mkdir -p "$OUTPUTS"', transport.wrap_worker(worker, spec)]
    return "\n".join(lines)


def task_for(
    spec: JobSpec,
    *,
    project: Path,
    run_id: str,
    run_dir: Path,
    request: ResourceRequest,
    settings: SkyPilotSettings,
    transport: Transport,
    extensions: JobExtensions | None = None,
) -> dict[str, JsonValue]:
    """The SkyPilot task that runs ``spec``, as its task file holds it.

    Secrets are not in it: their values go to SkyPilot with the launch, never into a file.

    Args:
        spec: The job.
        project: The project root, synced as the task's workdir.
        run_id: The run.
        run_dir: The run's staged directory, which holds its spec and the worker zipapp.
        request: The job's resources as written.
        settings: The backend's settings.
        transport: The transport, which adds its mounts and wraps the worker.
        extensions: The job's dependencies (set up), retries (the worker's ``--retries``,
            whose file must be in ``run_dir``) and SkyPilot-side secrets (``managed_secrets``,
            by name only).

    Returns:
        The task: ``name``, ``workdir``, ``num_nodes`` (only above one), ``resources``,
        ``file_mounts``, ``managed_secrets`` (only when the job names some), ``setup`` and
        ``run``.
    """
    resources, nodes = task_resources(request, settings)
    remote = f"{REMOTE_RUNS}/{run_id}"
    mounts: dict[str, JsonValue] = {
        f"{remote}/{SPEC_NAME}": str(run_dir / SPEC_NAME),
        f"{remote}/{WORKER_NAME}": str(run_dir / WORKER_NAME),
    }
    wanted = extensions if extensions is not None else JobExtensions()
    retries = bool(wanted.retries.worker_table([task.name for task in spec.tasks]))
    if retries:
        mounts[f"{remote}/{RETRIES_NAME}"] = str(run_dir / RETRIES_NAME)
    transport.add_to_task(spec, resources, mounts)
    task: dict[str, JsonValue] = {"name": cluster_name(run_id), "workdir": str(project)}
    if nodes > 1:
        task["num_nodes"] = nodes
    task["resources"] = resources
    task["file_mounts"] = mounts
    if wanted.secrets.platform:
        # SkyPilot's managed secrets, by name: the API server injects their values.
        task["managed_secrets"] = list(wanted.secrets.platform)
    task["setup"] = setup_script(spec, settings, transport, wanted.dependencies)
    task["run"] = run_script(
        spec,
        run_id=run_id,
        nodes=nodes,
        settings=settings,
        transport=transport,
        retries=retries,
        watch=wanted.watch.worker_arguments(),
    )
    return task
