"""What ``x-tui plan`` prints beyond the job: the request, the extensions and the cost bound.

Plain text and JSON, no Rich. A secret appears by name only: its value is never read here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from x_tui.cli.describe import job_lines
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.operations import RunPlan
from x_tui.compute.sanitize import escaped
from x_tui.compute.sweeps import parameters_text
from x_tui.compute.worker.records import JsonValue, dump_record


def request_json(request: ResourceRequest | None) -> dict[str, JsonValue] | None:
    """The resource request as JSON: its record, its shape as written, and its node count."""
    if request is None:
        return None
    return {
        **dump_record(request),
        "accelerator_text": str(request.accelerator) if request.accelerator else None,
        "cpu_text": str(request.cpu) if request.cpu else None,
        "nodes": request.nodes,
    }


def plan_json(plan: RunPlan) -> dict[str, JsonValue]:
    """Everything a plan holds, as one JSON object (secret names, never values)."""
    tasks = [task.name for task in plan.spec.tasks]
    return {
        "project": str(plan.project),
        "backend": plan.backend,
        "settings": dict(plan.settings),
        "spec": dump_record(plan.spec),
        "request": request_json(plan.request),
        "provider_request": (
            dict(plan.provider_request) if plan.provider_request is not None else None
        ),
        "extensions": plan.extensions.describe(tasks),
        "estimate": plan.estimate.describe() if plan.estimate is not None else None,
        "handle_version": (
            {"version": plan.handle_version.version, "reason": plan.handle_version.reason}
            if plan.handle_version is not None
            else None
        ),
    }


def sweep_json(plan: RunPlan, parameters: Sequence[Mapping[str, str]]) -> dict[str, JsonValue]:
    """A sweep's runs and the bound on all of them together."""
    each = plan.estimate.max_usd if plan.estimate is not None else None
    return {
        "runs": [dict(point) for point in parameters],
        "max_usd_all_runs": None if each is None else round(each * len(parameters), 4),
    }


def extension_lines(extensions: JobExtensions, tasks: Sequence[str]) -> list[str]:
    """One line per declared extension, for the plan."""
    lines: list[str] = []
    if extensions.dependencies:
        lines.append(f"dependencies {escaped(extensions.dependencies.summary())}")
    secrets = extensions.secrets
    if secrets:
        described = secrets.describe()
        unset = set(described["unset"])
        parts = []
        for source in secrets.sources:
            shown = source
            if secrets.task_name(source) != source:
                shown += f" as {secrets.task_name(source)}"
            if source in unset:
                shown += (
                    " (unset: skipped)" if source in secrets.optional_env else " (unset: refused)"
                )
            elif source in secrets.optional_env:
                shown += " (optional)"
            parts.append(shown)
        parts += [f"{name} (from the provider)" for name in secrets.platform]
        lines.append(f"secrets      {escaped(', '.join(parts))} (names only)")
    if extensions.retries:
        counts = extensions.retries.worker_table(tasks)
        text = ", ".join(f"{name} {count}" for name, count in counts.items())
        lines.append(f"retries      {escaped(text)} more attempt(s) after a failure")
    return lines


def estimate_lines(plan: RunPlan) -> list[str]:
    """The cost bound and how it was reached."""
    if plan.estimate is None:
        return []
    lines = [f"cost         {escaped(plan.estimate.text())}"]
    lines += [f"               {escaped(line)}" for line in plan.estimate.lines]
    if plan.estimate.source:
        lines.append(f"               prices: {escaped(plan.estimate.source)}")
    return lines


def plan_lines(plan: RunPlan) -> list[str]:
    """The whole plan as text: the job, where it runs, the request, the cost, the provider's."""
    lines = job_lines(plan.spec)
    lines.append(f"project      {escaped(str(plan.project))}")
    lines.append(f"backend      {escaped(plan.backend)}")
    if plan.handle_version is not None:
        lines.append(f"handle       {escaped(plan.handle_version.describe())}")
    if plan.request is not None and plan.request.accelerator is not None:
        nodes = plan.request.nodes
        span = f" on {nodes} nodes" if nodes > 1 else ""
        lines.append(f"accelerator  {escaped(str(plan.request.accelerator))}{span}")
    lines += extension_lines(plan.extensions, [task.name for task in plan.spec.tasks])
    lines += estimate_lines(plan)
    if plan.provider_request is not None:
        lines.append("provider request")
        text = json.dumps(dict(plan.provider_request), indent=2, sort_keys=True)
        lines += [f"  {escaped(line)}" for line in text.splitlines()]
    return lines


def sweep_lines(plan: RunPlan, parameters: Sequence[Mapping[str, str]]) -> list[str]:
    """The runs a sweep would make, and the bound on all of them."""
    count = len(parameters)
    lines = [f"sweep        {count} run" + ("" if count == 1 else "s")]
    lines += [f"  {escaped(parameters_text(point))}" for point in parameters]
    if plan.estimate is not None and plan.estimate.max_usd is not None:
        lines.append(f"cost of all  at most ${plan.estimate.max_usd * count:,.2f}")
    return lines
