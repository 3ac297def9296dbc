"""The submit screen's preview of a plan: the cost bound, where it runs, the job's extensions, the
resolved spec and the provider request.

Everything is built from ``Text`` cells through ``safe_text`` (nothing from the plan is read as
markup). A secret appears by name only: the preview is built from
``plan.extensions.describe(task_names)``, which holds names and never a value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from x_tui.compute.operations import RunPlan
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.records import JsonValue
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.spec_view import spec_summary, tasks_table

_COST_KEY = re.compile(r"cost|price|usd|\$", re.IGNORECASE)
_MAX_VALUE_CHARS = 400


def _value_text(value: JsonValue) -> Text:
    shown = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(shown) > _MAX_VALUE_CHARS:
        shown = shown[:_MAX_VALUE_CHARS] + "…"
    return safe_text(shown)


def _request_rows(
    table: Table, request: Mapping[str, JsonValue], *, prefix: str = "", depth: int = 0
) -> None:
    for key, value in request.items():
        name = f"{prefix}{key}"
        style = "bold dark_orange" if _COST_KEY.search(str(key)) else "bold"
        if isinstance(value, Mapping) and value and depth < 3:
            _request_rows(table, value, prefix=f"{name}.", depth=depth + 1)
            continue
        table.add_row(safe_text(name, style), _value_text(value))


def _strings(value: JsonValue) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def missing_secrets(plan: RunPlan) -> str | None:
    """Why submitting ``plan`` from this shell would be refused for a secret, if it would.

    Args:
        plan: The plan.

    Returns:
        The engine's message naming every required variable that is not set here, or ``None``.
    """
    from x_tui.compute.secrets import capture

    try:
        capture(plan.extensions.secrets, job=plan.spec.name)  # the values are dropped at once
    except UserError as error:
        return str(error)
    return None


def cost_renderable(plan: RunPlan) -> RenderableType:
    """The most the run can cost (``plan.estimate``: its text, how it was reached, the prices).

    Args:
        plan: The plan.

    Returns:
        The heading line, each line of the breakdown, and where the prices come from.
    """
    heading = Text("Cost  ", style="bold underline")
    estimate = plan.estimate
    if estimate is None:
        return heading + Text(f"not estimated for {plan.backend}", "dim")
    style = "bold dark_orange" if estimate.max_usd is not None else "dim"
    lines: list[Text] = [heading + safe_text(estimate.text(), style)]
    lines += [safe_text(f"      {line}") for line in estimate.lines]
    if estimate.source:
        lines.append(safe_text(f"      prices: {estimate.source}", "dim"))
    return Group(*lines)


def extensions_renderable(plan: RunPlan) -> RenderableType | None:
    """The job's dependencies, secrets (names only) and retries, or ``None`` when it has none.

    A required secret that is not set in this shell is shown in red: submitting would be refused.

    Args:
        plan: The plan.

    Returns:
        A grid of one row per declared extension.
    """
    extensions = plan.extensions
    if not extensions:
        return None
    tasks = [task.name for task in plan.spec.tasks]
    described = extensions.describe(tasks)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    dependencies = described.get("dependencies")
    if extensions.dependencies and isinstance(dependencies, Mapping):
        parts = [
            f"{kind} {', '.join(_strings(dependencies.get(kind)))}"
            for kind in ("apt", "python", "post_install")
            if _strings(dependencies.get(kind))
        ]
        grid.add_row(Text("Dependencies"), safe_text(" · ".join(parts)))
    secrets = described.get("secrets")
    if extensions.secrets and isinstance(secrets, Mapping):
        grid.add_row(Text("Secrets"), _secrets_text(plan, secrets))
    retries = described.get("retries")
    if extensions.retries and isinstance(retries, Mapping):
        counts = retries.get("tasks")
        shown = [
            f"{name} {count}"
            for name, count in (counts.items() if isinstance(counts, Mapping) else ())
        ]
        grid.add_row(
            Text("Retries"), safe_text(f"{', '.join(shown)} more attempt(s) after a failure")
        )
    heading = Text("Extensions", style="bold underline")
    heading.append("  (secrets by name; their values are read from this shell at submit)", "dim")
    return Group(heading, grid)


def _secrets_text(plan: RunPlan, described: Mapping[str, JsonValue]) -> Text:
    secrets = plan.extensions.secrets
    unset = set(_strings(described.get("unset")))
    optional = set(_strings(described.get("optional_env")))
    text = Text()
    for index, source in enumerate(secrets.sources):
        if index:
            text.append(", ")
        text.append_text(safe_text(source, "bold"))
        if secrets.task_name(source) != source:
            text.append_text(safe_text(f" as {secrets.task_name(source)}"))
        if source in unset and source not in optional:
            text.append(" (required: not set in this shell)", style="bold red")
        elif source in unset:
            text.append(" (optional: unset, skipped)", style="dim")
        elif source in optional:
            text.append(" (optional)", style="dim")
    for index, name in enumerate(_strings(described.get("platform"))):
        if index or secrets.sources:
            text.append(", ")
        text.append_text(safe_text(name, "bold"))
        text.append(" (from the provider)", style="dim")
    return text


def plan_renderable(plan: RunPlan, *, problem: str | None = None) -> RenderableType:
    """The preview of a plan: cost, where it runs, extensions, the spec, the provider request.

    Args:
        plan: The plan.
        problem: Why submitting it would be refused (a required secret not set), shown first.

    Returns:
        A renderable of ``Text`` cells (nothing from the plan is read as markup).
    """
    parts: list[RenderableType] = []
    if problem is not None:
        parts += [safe_text(problem, "bold red"), Text("")]
    parts += [cost_renderable(plan), Text("")]
    where = Table.grid(padding=(0, 2))
    where.add_column(style="bold", no_wrap=True)
    where.add_column()
    where.add_row(Text("Runs on"), safe_text(plan.backend, "bold"))
    where.add_row(Text("Project"), safe_text(str(plan.project)))
    if plan.handle_version is not None:
        where.add_row(Text("Handle"), safe_text(plan.handle_version.describe()))
    settings = [safe_text(f"{key} = {json.dumps(value)}") for key, value in plan.settings.items()]
    where.add_row(Text("Settings"), Text("\n").join(settings) if settings else Text("-", "dim"))
    if plan.request is not None:
        requested = [f"accelerator {plan.request.accelerator or 'none'}"]
        if plan.request.cpu is not None:
            requested.append(f"cpu {plan.request.cpu}")
        if plan.request.nodes > 1:
            requested.append(f"{plan.request.nodes} nodes")
        where.add_row(Text("Request"), safe_text(" · ".join(requested)))
    parts.append(where)
    extensions = extensions_renderable(plan)
    if extensions is not None:
        parts += [Text(""), extensions]
    parts += [Text(""), spec_summary(plan.spec), Text(""), tasks_table(plan.spec)]
    if plan.provider_request is not None:
        provider = Table.grid(padding=(0, 2))
        provider.add_column(no_wrap=True)
        provider.add_column(overflow="fold")
        _request_rows(provider, plan.provider_request)
        parts += [Text(""), Text("Provider request", style="bold underline"), provider]
    return Group(*parts)
