"""What the skypilot backend checks before anything is staged, and the plan it prints.

``check_job`` refuses, with one message naming what to change, a job this backend cannot run: a
project without ``uv.lock`` (the cluster syncs the locked environment), or what the transport
cannot carry. ``plan_document`` is what ``x-tui plan
--backend skypilot`` prints: the task ``submit`` would launch, the launch's options, the secret
names, and the catalog's hourly cost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from x_tui.backends.skypilot import catalog
from x_tui.backends.skypilot.task import cluster_name
from x_tui.backends.skypilot.transports import Transport
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.resources import check_placement, request_from_resources
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec


def check_job(
    spec: JobSpec,
    *,
    project: Path,
    request: ResourceRequest | None,
    extensions: JobExtensions,
    transport: Transport,
    backend: str,
) -> ResourceRequest:
    """Refuse a job this backend cannot run; its resources as written.

    Args:
        spec: The job.
        project: The resolved project root.
        request: The job's resources as written; the spec's when ``None``.
        extensions: The job's extensions.
        transport: The backend's transport.
        backend: The backend's name, for messages.

    Returns:
        The request (the spec's resources when none was given).

    Raises:
        ConfigError: If the project has no ``uv.lock``, or the transport cannot carry the job;
            the message says what to change.
    """
    wanted = request if request is not None else request_from_resources(spec.resources)
    check_placement(wanted, multi_node=True, backend=backend)
    if not (project / "uv.lock").is_file():
        raise ConfigError(
            f"the {backend} backend installs the project's locked environment on the cluster"
            f" (uv sync --frozen), and {project} has no uv.lock; run `uv lock` there"
        )
    transport.check_job(spec, wanted)
    return wanted


def plan_document(
    *,
    run_id: str,
    task: dict[str, JsonValue],
    transport: Transport,
    extensions: JobExtensions,
    request: ResourceRequest,
    offers: Callable[[], tuple[catalog.Offer, ...]],
    spot: bool,
) -> dict[str, JsonValue]:
    """What ``plan`` answers: the task and everything ``submit`` would send with it.

    Args:
        run_id: The example run id the task was made for.
        task: The task.
        transport: The backend's transport.
        extensions: The job's extensions (the secrets are named, never valued).
        request: The job's resources.
        offers: Reads the catalog's offers (for the cost).
        spot: Whether spot instances are asked for.

    Returns:
        ``run_id``, ``cluster``, ``transport``, ``launch``, ``task``, ``secrets``, ``cost``.
    """
    return {
        "run_id": f"{run_id} (an example; each submit names a fresh one)",
        "cluster": cluster_name(run_id),
        "transport": transport.name,
        "launch": {"down": True, "idle_minutes_to_autostop": transport.idle_minutes},
        "task": task,
        "secrets": [extensions.secrets.task_name(name) for name in extensions.secrets.sources],
        "cost": catalog.describe_cost(offers, request, spot=spot),
    }
