"""A resolved job spec, shown as a readable sheet: budgets, resources, runtime, mounts, tasks.

Used by the run screen's Spec tab (the spec a run was staged with) and by the submit screen's
preview (the spec a submit would send). Every value of the spec is untrusted text (it comes from
a file a project or a remote machine wrote) and reaches the screen only through ``safe_text``.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from x_tui.compute.worker.spec import JobSpec, Resources
from x_tui.widgets.safe_text import safe_text


def format_seconds(seconds: float | None) -> str:
    """A duration as people read it: ``0.42 s``, ``12.3 s``, ``5m 03s``, ``2h 05m``, ``3d 4h``.

    Args:
        seconds: The duration; ``None`` or a non-finite value gives ``"-"``.

    Returns:
        The short text.
    """
    if seconds is None or not math.isfinite(seconds):
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600}h"


def format_memory(mib: int) -> str:
    """``32768`` MiB as ``32 GiB``; a value that is not whole GiB stays in MiB."""
    if mib >= 1024 and mib % 1024 == 0:
        return f"{mib // 1024} GiB"
    return f"{mib} MiB"


def resources_text(resources: Resources) -> Text:
    """What a spec asks the machine for, on one line: ``L4:2 · 8 CPU · 32 GiB``."""
    parts: list[Text] = []
    if resources.accelerator is None:
        parts.append(Text("no accelerator"))
    else:
        parts.append(safe_text(str(resources.accelerator)))
    if resources.cpu is not None:
        parts.append(Text(f"{resources.cpu:g} CPU"))
    if resources.memory_mib is not None:
        parts.append(Text(format_memory(resources.memory_mib)))
    return Text(" · ").join(parts)


def _mapping_text(values: Mapping[str, str]) -> Text:
    lines = [safe_text(f"{key}={value}") for key, value in values.items()]
    return Text("\n").join(lines) if lines else Text("-", style="dim")


def _runtime_text(spec: JobSpec) -> Text:
    environment = spec.runtime.environment()
    if spec.runtime.xla_flags:
        environment["XLA_FLAGS"] = " ".join(spec.runtime.xla_flags)
    return _mapping_text(environment)


def _field_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    return table


def spec_summary(spec: JobSpec) -> Table:
    """The job-wide part of a spec: name, budgets, resources, extras, env, runtime, mounts.

    Args:
        spec: The spec.

    Returns:
        A two-column table of ``Text`` cells.
    """
    table = _field_table()
    table.add_row(Text("Job"), safe_text(spec.name, "bold"))
    budgets = {task.timeout_seconds for task in spec.tasks}
    each = f"; each task {format_seconds(budgets.pop())}" if len(budgets) == 1 else ""
    table.add_row(Text("Timeout"), Text(f"{format_seconds(spec.timeout_seconds)}{each}"))
    table.add_row(Text("Resources"), resources_text(spec.resources))
    extras = safe_text(", ".join(spec.extras)) if spec.extras else Text("-", style="dim")
    table.add_row(Text("Extras"), extras)
    table.add_row(Text("Env"), _mapping_text(spec.env))
    table.add_row(Text("Runtime"), _runtime_text(spec))
    mounts = [
        safe_text(f"{mount.name} → {mount.path} ({mount.access.value})") for mount in spec.mounts
    ]
    table.add_row(Text("Mounts"), Text("\n").join(mounts) if mounts else Text("-", style="dim"))
    return table


def tasks_table(spec: JobSpec) -> Table:
    """The spec's tasks, in the order they run: name, command and budget.

    Args:
        spec: The spec.

    Returns:
        A table of ``Text`` cells.
    """
    table = Table(
        title=Text(f"Tasks ({len(spec.tasks)})", style="bold"),
        title_justify="left",
        box=None,
        padding=(0, 2, 0, 0),
        header_style="bold",
        expand=False,
    )
    table.add_column(Text("task"), no_wrap=True)
    table.add_column(Text("command"), overflow="fold")
    table.add_column(Text("budget"), no_wrap=True, justify="right")
    for task in spec.tasks:
        table.add_row(
            safe_text(task.name),
            safe_text(shlex.join(task.argv)),
            Text(format_seconds(task.timeout_seconds)),
        )
    return table


def spec_renderable(spec: JobSpec) -> RenderableType:
    """The whole spec: its summary, then its tasks."""
    return Group(spec_summary(spec), Text(""), tasks_table(spec))


class SpecView(Static):
    """A job spec, or a line saying why there is none to show."""

    DEFAULT_CSS = """
    SpecView {
        height: auto;
        padding: 0 1;
    }
    """

    def show_spec(self, spec: JobSpec | None, *, note: Text | None = None) -> None:
        """Show ``spec``, with ``note`` above it (or alone when there is no spec).

        Args:
            spec: The spec; ``None`` shows only the note.
            note: A line about where the spec came from or why it is missing.
        """
        parts: list[RenderableType] = []
        if note is not None:
            parts.append(note)
        if spec is not None:
            if parts:
                parts.append(Text(""))
            parts.append(spec_renderable(spec))
        self.update(Group(*parts))
