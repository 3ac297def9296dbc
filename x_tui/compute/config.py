"""A project's compute configuration: the ``[tool.substrax.compute]`` table of its pyproject.toml.

Parsed with the standard library's ``tomllib``, as substrax parses it, so a table substrax accepts
reads exactly as substrax reads it. x-tui writes no project's pyproject.toml (tomlkit, which keeps
comments, is for the files it does write), and ``tomllib`` parses one about ten times faster.
Unknown keys are refused with the key, the table and the file named; a job's table is checked
only when that job is resolved, so a typo in one job does not break the others.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from x_tui.compute.dependencies import read_dependencies
from x_tui.compute.extensions import EXTENSION_KEYS, WATCH_KEYS, JobExtensions, ResourceRequest
from x_tui.compute.overlays import OVERLAY_TABLE, merge_overlay
from x_tui.compute.resources import (
    ResourceError,
    parse_accelerators,
    parse_duration,
    read_resources_table,
)
from x_tui.compute.retries import read_retries
from x_tui.compute.run_guards import GUARD_KEYS, RunGuard, read_guard
from x_tui.compute.secrets import read_secrets
from x_tui.compute.worker.errors import ConfigError, NoComputeTable, UnknownJobError, did_you_mean
from x_tui.compute.worker.log_metrics import compile_patterns
from x_tui.compute.worker.records import JsonValue, RecordError, dump_record, read_record
from x_tui.compute.worker.spec import (
    Accelerator,
    JaxRuntime,
    JobSpec,
    Task,
    discover_examples,
    example_tasks,
)
from x_tui.compute.worker.telemetry import WatchSettings

PYPROJECT = "pyproject.toml"
TABLE = "tool.substrax.compute"
_TOP_KEYS = ("backend", "backends", "jobs")
_TASK_SOURCE_KEYS = ("examples", "commands", "task_timeout_seconds")
_SPEC_KEYS = (
    "schema_version",
    "name",
    "tasks",
    "timeout_seconds",
    "resources",
    "extras",
    "runtime",
    "env",
    "mounts",
)
_JOB_KEYS = _TASK_SOURCE_KEYS + _SPEC_KEYS + EXTENSION_KEYS + WATCH_KEYS + GUARD_KEYS
_RUNTIME_KEYS = tuple(item.name for item in fields(JaxRuntime))


@dataclass(frozen=True, kw_only=True, slots=True)
class ComputeConfig:
    """A project's compute configuration.

    Attributes:
        path: The ``pyproject.toml`` it was read from (``None`` for an empty configuration).
        backend: The backend used when none is named; ``None`` requires naming one.
        backends: Each backend's settings, by backend name.
        jobs: Each job's table, by name, read into a ``JobSpec`` when the job is resolved.
        overlays: x-tui's overlay of each job (``[tool.x-tui.jobs.<name>]``), merged over the
            job's table when it is resolved (see :mod:`x_tui.compute.overlays`).
    """

    path: Path | None = None
    backend: str | None = None
    backends: Mapping[str, Mapping[str, JsonValue]] = field(default_factory=dict)
    jobs: Mapping[str, Mapping[str, JsonValue]] = field(default_factory=dict)
    overlays: Mapping[str, Mapping[str, JsonValue]] = field(default_factory=dict)

    def backend_settings(self, name: str) -> Mapping[str, JsonValue]:
        """The settings table of backend ``name`` (empty when it has none)."""
        return self.backends.get(name, {})

    def where(self, *table: str) -> str:
        """``<file>: [tool.substrax.compute.<table...>]``, for messages."""
        name = ".".join((TABLE, *table))
        return f"{self.path or PYPROJECT}: [{name}]"


def load_pyproject(path: Path) -> dict[str, Any]:
    """Parse a ``pyproject.toml`` into plain Python values.

    Raises:
        ConfigError: If the file cannot be read or is not valid TOML; the message names it.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def read_compute_config(project: Path) -> ComputeConfig:
    """Read the ``[tool.substrax.compute]`` table of the project's pyproject.toml.

    Raises:
        NoComputeTable: If there is no pyproject.toml or it has no such table.
        ConfigError: If the file is not TOML, or a key is unknown or of the wrong type.
    """
    path = project / PYPROJECT
    if not path.is_file():
        raise NoComputeTable(f"{project} has no {PYPROJECT}")
    document = load_pyproject(path)
    table: object = document
    for key in TABLE.split("."):
        table = table.get(key) if isinstance(table, dict) else None
    if table is None:
        raise NoComputeTable(f"{path} has no [{TABLE}] table")
    config = ComputeConfig(path=path)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{TABLE}] is not a table")
    for key in table:
        if key not in _TOP_KEYS:
            raise ConfigError(f"{config.where()} unknown key {key!r}{did_you_mean(key, _TOP_KEYS)}")
    backend = table.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise ConfigError(f"{config.where()} backend: expected a string, got {backend!r}")
    backends = _table_of_tables(config, table, "backends")
    jobs = _table_of_tables(config, table, "jobs")
    overlays = _overlays(path, document, jobs)
    return replace(config, backend=backend, backends=backends, jobs=jobs, overlays=overlays)


def _overlays(
    path: Path, document: dict[str, Any], jobs: Mapping[str, object]
) -> dict[str, dict[str, JsonValue]]:
    """``[tool.x-tui.jobs]``: each job's overlay, for jobs the compute table declares."""
    tool = document.get("tool")
    own = tool.get("x-tui") if isinstance(tool, dict) else None
    if own is None:
        return {}
    if not isinstance(own, dict):
        raise ConfigError(f"{path}: [tool.x-tui] is not a table")
    for key in own:
        if key != "jobs":
            raise ConfigError(
                f"{path}: [tool.x-tui] unknown key {key!r}{did_you_mean(key, ('jobs',))}"
            )
    overlays = own.get("jobs", {})
    if not isinstance(overlays, dict):
        raise ConfigError(f"{path}: [{OVERLAY_TABLE}] is not a table")
    for name, overlay in overlays.items():
        if not isinstance(overlay, dict):
            raise ConfigError(
                f"{path}: [{OVERLAY_TABLE}] {name}: expected a table, got {overlay!r}"
            )
        if name not in jobs:
            configured = ", ".join(sorted(jobs)) or "none"
            raise ConfigError(
                f"{path}: [{OVERLAY_TABLE}.{name}] overlays no job of [{TABLE}.jobs]"
                f" (configured: {configured})"
            )
    return overlays


def _table_of_tables(
    config: ComputeConfig, table: dict[str, Any], key: str
) -> dict[str, dict[str, JsonValue]]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{config.where()} {key}: expected a table, got {value!r}")
    for name, inner in value.items():
        if not isinstance(inner, dict):
            raise ConfigError(f"{config.where(key)} {name}: expected a table, got {inner!r}")
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedJob:
    """A configured job, resolved: the spec substrax reads, and what x-tui reads beyond it.

    Attributes:
        spec: The spec written to ``spec.json``; its resources are ``request.to_resources()``.
        request: The resources as the table (or ``--accelerator``) asked for them: accelerator
            alternatives, ``exact``, the node count and a CPU total, which no spec key holds.
        extensions: The table's ``dependencies``, ``secrets`` and ``retries`` (x-tui's keys,
            never written to ``spec.json``).
        guard: The table's budget and preemption retries (``max_cost``, ``max_duration``,
            ``preemption_retries``), kept in x-tui's guard side file of each run.
    """

    spec: JobSpec
    request: ResourceRequest
    extensions: JobExtensions = field(default_factory=JobExtensions)
    guard: RunGuard = field(default_factory=RunGuard)


def resolve_job(
    config: ComputeConfig,
    name: str,
    *,
    project: Path,
    accelerator: Accelerator | None = None,
) -> JobSpec:
    """Build the spec of a configured job, listing its examples now.

    Args:
        config: The project's configuration.
        name: The job.
        project: The project root.
        accelerator: Replaces the configured accelerator for this run, as substrax's
            ``--accelerator`` does (see :func:`resolve_request` for the whole grammar).

    Returns:
        The spec: ``resolve_request(...).spec``.

    Raises:
        UnknownJobError: If the job is not configured; the message lists the configured ones.
        ConfigError: If a key of the job's table is unknown or a value of the wrong type, or an
            examples directory does not exist.
    """
    spec = resolve_request(config, name, project=project).spec
    if accelerator is not None:
        spec = replace(spec, resources=replace(spec.resources, accelerator=accelerator))
    return spec


def resolve_request(
    config: ComputeConfig,
    name: str,
    *,
    project: Path,
    accelerator: str | None = None,
) -> ResolvedJob:
    """Resolve a configured job: its spec, listing its examples now, and its resource request.

    Args:
        config: The project's configuration.
        name: The job.
        project: The project root.
        accelerator: Replaces the configured accelerator for this run, in the grammar of
            :func:`~x_tui.compute.resources.parse_accelerators`, alternatives separated by
            commas (``"H100:8,A100-80GB:8"``); CPU and memory stay as configured.

    Returns:
        The spec and the request.

    Raises:
        UnknownJobError: If the job is not configured; the message lists the configured ones.
        ConfigError: If a key of the job's table is unknown or a value of the wrong type, or an
            examples directory does not exist; the message names the file, table and key.
        ResourceError: If ``accelerator`` is refused; the message names it and the accepted forms.
    """
    if name not in config.jobs:
        configured = ", ".join(sorted(config.jobs)) or "none"
        close = difflib.get_close_matches(name, sorted(config.jobs), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownJobError(f"no job '{name}'{hint}; configured: {configured}")
    table = merge_overlay(config.jobs[name], config.overlays.get(name))
    where = config.where("jobs", name)
    if name in config.overlays:
        where = f"{where} with [{OVERLAY_TABLE}.{name}]"
    for key in table:
        if key not in _JOB_KEYS:
            raise ConfigError(f"{where} unknown key {key!r}{did_you_mean(key, _JOB_KEYS)}")
    runtime = table.get("runtime")
    if isinstance(runtime, dict):
        # substrax refuses an unknown runtime key inside a job table (a spec.json ignores one).
        for key in runtime:
            if key not in _RUNTIME_KEYS:
                raise ConfigError(
                    f"{where} runtime: unknown key {key!r}{did_you_mean(key, _RUNTIME_KEYS)}"
                )
    timeout = _seconds(where, "timeout_seconds", table.get("timeout_seconds"))
    if timeout is None:
        raise ConfigError(f"{where} missing required key 'timeout_seconds'")
    task_timeout = _seconds(where, "task_timeout_seconds", table.get("task_timeout_seconds"))
    tasks = _tasks(config, name, table, project=project, budget=float(task_timeout or timeout))
    spec_table = {key: value for key, value in table.items() if key in _SPEC_KEYS}
    spec_table["name"] = name
    spec_table["tasks"] = [_task_json(task) for task in tasks]
    spec_table["timeout_seconds"] = timeout
    request = ResourceRequest()
    if "resources" in table:
        try:
            request = read_resources_table(table["resources"])
        except ResourceError as error:
            raise ConfigError(f"{where} {error}") from None
        spec_table["resources"] = dump_record(request.to_resources())
    try:
        spec = read_record(JobSpec, spec_table)
    except RecordError as error:
        raise ConfigError(f"{where} {error}") from None
    if accelerator is not None:
        request = replace(request, accelerator=parse_accelerators(accelerator))
        spec = replace(spec, resources=request.to_resources())
    return ResolvedJob(
        spec=spec,
        request=request,
        extensions=_extensions(where, table, spec),
        guard=read_guard(table, where=where),
    )


def _extensions(where: str, table: dict[str, Any], spec: JobSpec) -> JobExtensions:
    """The table's x-tui keys, checked against the resolved job."""
    extensions = JobExtensions()
    if "dependencies" in table:
        extensions = replace(
            extensions, dependencies=read_dependencies(table["dependencies"], where=where)
        )
    if "secrets" in table:
        secrets = read_secrets(table["secrets"], where=where)
        for source in secrets.sources:
            target = secrets.task_name(source)
            if target in spec.env:
                raise ConfigError(
                    f"{where} secrets: {target!r} is also set in env, which would hide the"
                    " secret's value in the task; keep one of them"
                )
        extensions = replace(extensions, secrets=secrets)
    if "retries" in table:
        names = [task.name for task in spec.tasks]
        extensions = replace(
            extensions, retries=read_retries(table["retries"], where=where, tasks=names)
        )
    if any(key in table for key in WATCH_KEYS):
        extensions = replace(extensions, watch=_watch(where, table))
    return extensions


def _watch(where: str, table: dict[str, Any]) -> WatchSettings:
    """``telemetry_seconds``, ``stall_seconds`` and ``metric_patterns``, checked."""
    watch = WatchSettings()
    seconds = _seconds(where, "telemetry_seconds", table.get("telemetry_seconds"))
    if seconds is not None:
        if not 0 <= seconds <= 3600 or (0 < seconds < 0.2):
            raise ConfigError(
                f"{where} telemetry_seconds: expected 0 (no samples) or 0.2 to 3600 seconds,"
                f" got {table['telemetry_seconds']!r}"
            )
        watch = replace(watch, seconds=float(seconds), paced_by_job=True)
    stall = _seconds(where, "stall_seconds", table.get("stall_seconds"))
    if stall is not None:
        if stall <= 0:
            raise ConfigError(
                f"{where} stall_seconds: expected a positive duration, got"
                f" {table['stall_seconds']!r}"
            )
        watch = replace(watch, stall_seconds=float(stall))
    if "metric_patterns" in table:
        patterns = table["metric_patterns"]
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ConfigError(
                f"{where} metric_patterns: expected a list of regular expressions, got {patterns!r}"
            )
        try:
            compile_patterns(patterns)
        except ValueError as error:
            raise ConfigError(f"{where} metric_patterns: {error}") from None
        watch = replace(watch, patterns=tuple(patterns))
    return watch


def _seconds(where: str, key: str, value: object) -> float | None:
    """A number as it is (substrax's form), a duration string in seconds, ``None`` when unset."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ConfigError(
            f"{where} {key}: expected a number of seconds or a duration such as '6h', got {value!r}"
        )
    try:
        return parse_duration(value)
    except ResourceError as error:
        raise ConfigError(f"{where} {key}: {error}") from None


def _task_json(task: Task) -> dict[str, JsonValue]:
    return {"name": task.name, "argv": list(task.argv), "timeout_seconds": task.timeout_seconds}


def _tasks(
    config: ComputeConfig, job: str, table: dict[str, Any], *, project: Path, budget: float
) -> tuple[Task, ...]:
    where = config.where("jobs", job)
    examples = table.get("examples", [])
    if not isinstance(examples, list) or not all(isinstance(item, str) for item in examples):
        raise ConfigError(f"{where} examples: expected an array of strings, got {examples!r}")
    commands = table.get("commands", {})
    if not isinstance(commands, dict):
        raise ConfigError(f"{where} commands: expected a table of arrays, got {commands!r}")
    tasks: list[Task] = []
    root = project.resolve()
    for directory in examples:
        folder = (root / directory).resolve()
        if not folder.is_relative_to(root):
            raise ConfigError(f"{where} examples: directory {directory!r} is outside the project")
        if not folder.is_dir():
            raise ConfigError(
                f"{where} examples: directory '{directory}' of job '{job}' does not exist in {root}"
            )
        try:
            tasks.extend(
                example_tasks(discover_examples(folder), project=root, timeout_seconds=budget)
            )
        except ValueError as error:
            raise ConfigError(f"{where} examples: {error}") from None
    for task_name, argv in commands.items():
        if not isinstance(argv, list) or not all(isinstance(item, str) for item in argv):
            raise ConfigError(
                f"{where} commands.{task_name}: expected an array of strings, got {argv!r}"
            )
        try:
            tasks.append(Task(name=task_name, argv=tuple(argv), timeout_seconds=budget))
        except ValueError as error:
            raise ConfigError(f"{where} commands.{task_name}: {error}") from None
    return tuple(tasks)
