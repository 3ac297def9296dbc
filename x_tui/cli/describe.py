"""Human-readable descriptions of jobs and runs for the headless verbs (plain text, no Rich)."""

from __future__ import annotations

import datetime as dt
import shlex

from x_tui.compute.sanitize import escaped
from x_tui.compute.worker.spec import JobSpec, Resources


def seconds_text(seconds: float) -> str:
    """A duration such as ``90 s``, ``30 min`` or ``2 h`` (whole units when they fit)."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def resources_text(resources: Resources) -> str:
    """What a job asks the machine for, such as ``H100:8, 32 cpu, 65536 MiB``."""
    parts = [escaped(str(resources.accelerator)) if resources.accelerator else "no accelerator"]
    if resources.cpu is not None:
        parts.append(f"{resources.cpu:g} cpu")
    if resources.memory_mib is not None:
        parts.append(f"{resources.memory_mib} MiB")
    return ", ".join(parts)


def argv_text(argv: tuple[str, ...]) -> str:
    """A command as a shell would take it, with control characters escaped."""
    return escaped(shlex.join(argv))


def job_summary(spec: JobSpec) -> str:
    """One line: the job, its task count, resources and budget."""
    count = len(spec.tasks)
    tasks = f"{count} task" + ("" if count == 1 else "s")
    return (
        f"{escaped(spec.name)}  {tasks}  {resources_text(spec.resources)}  "
        f"timeout {seconds_text(spec.timeout_seconds)}"
    )


def job_lines(spec: JobSpec) -> list[str]:
    """Everything a resolved job holds, one fact per line, tasks indented."""
    lines = [f"job {escaped(spec.name)}"]
    lines.append(f"  timeout     {seconds_text(spec.timeout_seconds)}")
    lines.append(f"  resources   {resources_text(spec.resources)}")
    if spec.extras:
        lines.append(f"  extras      {escaped(', '.join(spec.extras))}")
    runtime = spec.runtime.environment()
    flags = spec.runtime.merge_xla_flags("")
    if flags:
        runtime["XLA_FLAGS"] = flags
    if runtime:
        text = " ".join(f"{key}={value}" for key, value in sorted(runtime.items()))
        lines.append(f"  runtime     {escaped(text)}")
    for key, value in spec.env.items():
        lines.append(f"  env         {escaped(key)}={escaped(value)}")
    for mount in spec.mounts:
        lines.append(
            f"  mount       {escaped(mount.name)} at {escaped(mount.path)} ({mount.access.value})"
        )
    lines.append("  tasks")
    names = [escaped(task.name) for task in spec.tasks]
    width = max(len(name) for name in names)
    for name, task in zip(names, spec.tasks, strict=True):
        lines.append(
            f"    {name:<{width}}  {argv_text(task.argv)}"
            f"  (at most {seconds_text(task.timeout_seconds)})"
        )
    return lines


def age_text(submitted_at: dt.datetime, now: dt.datetime | None = None) -> str:
    """How long ago a run was submitted, such as ``42s``, ``5m``, ``3h`` or ``2d``."""
    moment = now or dt.datetime.now(dt.UTC)
    if submitted_at.tzinfo is None:
        submitted_at = submitted_at.replace(tzinfo=dt.UTC)
    seconds = max(0, int((moment - submitted_at).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
