"""The local backend's command line and plan: what it would run, and what this machine gives.

:func:`worker_command` is the detached worker's argv (it holds the run directory, and so the run
id); :func:`default_interpreter` picks the project's Python; :func:`describe_plan` is what
``LocalBackend.plan`` returns: the command, what is not provisioned (extras, resources, mounts,
``dependencies``), this machine, what a run gets here beside what was requested, how secrets
arrive and the retries file. Nothing here starts a process or writes a file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Final

from x_tui.backends.local import machine as local_machine
from x_tui.compute.backend import SPEC_NAME
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.plan_warnings import WARNING_KEY
from x_tui.compute.retries import RETRIES_NAME
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue, dump_record
from x_tui.compute.worker.spec import JobSpec
from x_tui.compute.worker.telemetry import WatchSettings
from x_tui.compute.worker_bundle import WORKER_NAME

NAME: Final = "local"
"""The backend's registered name."""
OUTPUTS: Final = "outputs"
"""A staged run's outputs directory, under its run directory."""
LOG_TIMES: Final = "worker.log.times"
"""When each line of a run's ``worker.log`` was received (``x_tui.compute.worker.log_times``)."""


def default_interpreter(project: Path, python: str | None = None) -> list[str]:
    """The command that starts Python in the project's environment.

    Args:
        project: The project root.
        python: The ``python`` setting, which wins when set.

    Returns:
        The command's argv: the setting, ``<project>/.venv/bin/python`` if it exists,
        ``uv run --no-sync --project <project> python`` if the project has a ``uv.lock`` and
        ``uv`` is on ``PATH``, else the interpreter running x-tui.
    """
    if python:
        return [python]
    venv = project / ".venv" / "bin" / "python"
    if venv.exists():
        return [str(venv)]
    uv = shutil.which("uv")
    if (project / "uv.lock").is_file() and uv is not None:
        return [uv, "run", "--no-sync", "--project", str(project), "python"]
    return [sys.executable]


def worker_command(
    interpreter: list[str],
    *,
    run_dir: Path,
    project: Path,
    retries: Path | None = None,
    watch: WatchSettings | None = None,
) -> list[str]:
    """The worker's command line; it holds the run directory, and so the run id.

    Args:
        interpreter: The command that starts the project's Python.
        run_dir: The staged run's directory.
        project: The project root.
        retries: The worker's retries file, when a task is retried.
        watch: The job's ``telemetry_seconds``, ``stall_seconds`` and ``metric_patterns``.

    Returns:
        The argv.
    """
    command = [
        *interpreter,
        str(run_dir / WORKER_NAME),
        "--log-times",
        str(run_dir / LOG_TIMES),
        "--spec",
        str(run_dir / SPEC_NAME),
        "--project",
        str(project),
        "--outputs",
        str(run_dir / OUTPUTS),
    ]
    if watch is not None:
        command += watch.worker_arguments()
    return command if retries is None else [*command, "--retries", str(retries)]


def describe_plan(
    spec: JobSpec,
    *,
    project: Path,
    runs: Path,
    python: str | None,
    request: ResourceRequest | None = None,
    extensions: JobExtensions | None = None,
) -> dict[str, JsonValue]:
    """What :meth:`submit` would run, and what this machine has.

    Args:
        spec: The job.
        project: The project root.
        runs: The directory runs are staged in.
        python: The ``python`` setting.
        request: The resources as written, to set beside what this machine has.
        extensions: The job's dependencies, secrets and retries.

    Returns:
        ``interpreter`` and ``command`` (the worker command line, with ``<run_id>`` for the
        run's id), ``provisions`` (a note that nothing is provisioned), ``not_provisioned``
        (the spec's extras, resources and mounts, and with ``extensions`` its dependencies,
        which are not), and ``machine`` (CPU count, memory in MiB, and the GPUs
        ``nvidia-smi`` lists). With a ``request``, ``runs_on`` says what the run gets here, and
        ``warning`` why it does not get the accelerator asked for (when it does not);
        with ``extensions``, ``secrets`` says how the named ones reach the tasks and
        ``retries`` gives the worker's retries file.

    Raises:
        ConfigError: If the job asks for provider secrets (``secrets.platform``).
    """
    root = project.resolve()
    run_dir = runs / "<run_id>"
    interpreter = default_interpreter(root, python)
    table = (
        extensions.retries.worker_table([task.name for task in spec.tasks])
        if extensions is not None
        else {}
    )
    retries = run_dir / RETRIES_NAME if table else None
    command = worker_command(
        interpreter,
        run_dir=run_dir,
        project=root,
        retries=retries,
        watch=extensions.watch if extensions is not None else None,
    )
    plan: dict[str, JsonValue] = {
        "backend": NAME,
        "interpreter": list(interpreter),
        "command": list(command),
        "provisions": (
            "nothing: the local backend runs the job on this machine, in the project's "
            "current environment; extras, resources and mounts are not provisioned"
        ),
        "not_provisioned": _not_provisioned(spec),
        "machine": local_machine.machine(),
    }
    if request is not None:
        plan["requested"] = str(request.accelerator) if request.accelerator else None
        plan["runs_on"] = local_machine.runs_on()
        if request.accelerator is not None:
            shapes = [(choice.kind, choice.count) for choice in request.accelerator.alternatives]
            warning = local_machine.shortfall(shapes)
            if warning is not None:
                plan[WARNING_KEY] = warning
    if extensions is not None:
        refuse_platform_secrets(extensions)
        not_provisioned = plan["not_provisioned"]
        if extensions.dependencies and isinstance(not_provisioned, dict):
            not_provisioned["dependencies"] = dump_record(extensions.dependencies)
            plan["provisions"] = (
                f"{plan['provisions']}; dependencies are not installed either"
                f" ({extensions.dependencies.summary()})"
            )
        if extensions.secrets:
            plan["secrets"] = {
                "names_in_task": list(extensions.secrets.task_names),
                "how": "captured from this shell at submit into the worker's environment",
            }
        if table:
            plan["retries"] = {"file": str(retries), "table": dict(table)}
    return plan


def refuse_platform_secrets(extensions: JobExtensions) -> None:
    """Refuse provider secrets, which this machine has no store for.

    Raises:
        ConfigError: If the job names any (``secrets.platform``); the message says what to do.
    """
    platform = extensions.secrets.platform
    if platform:
        raise ConfigError(
            f"secrets.platform = {list(platform)!r}: the local backend has no secret store, so"
            " a provider's secret cannot reach a run on this machine; list the variables in"
            " secrets.env to capture them from this shell, or run on modal or skypilot"
        )


def _not_provisioned(spec: JobSpec) -> dict[str, JsonValue]:
    resources = spec.resources
    return {
        "extras": list(spec.extras),
        "accelerator": str(resources.accelerator) if resources.accelerator else None,
        "cpu": resources.cpu,
        "memory_mib": resources.memory_mib,
        "mounts": [mount.name for mount in spec.mounts],
    }
