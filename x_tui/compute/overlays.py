"""x-tui's overlay table, and the keys of a job table that substrax itself cannot run.

A job's table under ``[tool.substrax.compute.jobs.<name>]`` is read by both tools. x-tui reads
more there than substrax does (durations such as ``"6h"``, ``accelerator = "H100:8"``,
``cpu = "8"``, ``memory = "256Gi"``, ``dependencies``, ``secrets``, ``retries``), and substrax
refuses a table that holds any of them. To keep the substrax table runnable by both, a team moves
those keys to x-tui's own table, ``[tool.x-tui.jobs.<name>]``, which x-tui merges over the
substrax job: a key of the overlay replaces the job's, and the ``resources``, ``runtime`` and
``env`` tables are merged key by key (a memory key of the overlay replaces the job's memory).

:func:`substrax_blockers` names each key of a substrax table that substrax 0.1.x refuses, with the
value substrax would read in its place; :func:`overlay_fix` writes the two tables that fix it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from x_tui.compute.extensions import EXTENSION_KEYS, WATCH_KEYS
from x_tui.compute.resources import (
    MEMORY_KEYS,
    ResourceError,
    parse_accelerators,
    parse_cpu,
    parse_duration,
    parse_memory,
)
from x_tui.compute.run_guards import GUARD_KEYS
from x_tui.compute.worker.records import JsonValue

OVERLAY_TABLE = "tool.x-tui.jobs"
"""Where x-tui's overlay of each job lives in pyproject.toml."""

_MERGED_TABLES = ("resources", "runtime", "env")


@dataclass(frozen=True, kw_only=True, slots=True)
class Blocker:
    """A key of a job's substrax table that substrax 0.1.x refuses.

    Attributes:
        key: The key, dotted below the job's table (``timeout_seconds``, ``resources.cpu``).
        value: Its value there.
        reason: Why substrax refuses it, in a few words.
        substrax_value: What substrax reads in its place, to keep in the substrax table; ``None``
            when substrax has no such key (the key moves to the overlay only).
        substrax_key: The key substrax reads that value under (``resources.memory_mib`` for
            ``resources.memory``); ``key`` when empty.
    """

    key: str
    value: JsonValue
    reason: str
    substrax_value: JsonValue | None = None
    substrax_key: str = ""


def merge_overlay(
    job: Mapping[str, JsonValue], overlay: Mapping[str, JsonValue] | None
) -> dict[str, JsonValue]:
    """The job's table with x-tui's overlay merged over it.

    Args:
        job: ``[tool.substrax.compute.jobs.<name>]``.
        overlay: ``[tool.x-tui.jobs.<name>]``, or ``None``.

    Returns:
        A new table: the overlay's keys replace the job's, ``resources``, ``runtime`` and ``env``
        merged key by key.
    """
    merged: dict[str, JsonValue] = dict(job)
    for key, value in (overlay or {}).items():
        base = merged.get(key)
        if key in _MERGED_TABLES and isinstance(base, dict) and isinstance(value, dict):
            table = dict(base)
            if key == "resources" and any(name in value for name in MEMORY_KEYS):
                for name in MEMORY_KEYS:
                    table.pop(name, None)
            table.update(value)
            merged[key] = table
        else:
            merged[key] = value
    return merged


def substrax_blockers(job: Mapping[str, JsonValue]) -> tuple[Blocker, ...]:
    """Each key of a job's substrax table that substrax 0.1.x refuses (x-tui's extensions).

    Args:
        job: ``[tool.substrax.compute.jobs.<name>]`` as written (without the overlay).

    Returns:
        The blocking keys, in the table's order; empty when substrax can run the job (as far as
        its extensions go: a table both tools refuse is not listed here).
    """
    blockers: list[Blocker] = []
    for key, value in job.items():
        if key in EXTENSION_KEYS or key in WATCH_KEYS or key in GUARD_KEYS:
            blockers.append(Blocker(key=key, value=value, reason="an x-tui extension"))
        elif key in ("timeout_seconds", "task_timeout_seconds") and isinstance(value, str):
            seconds = _try(parse_duration, value)
            blockers.append(
                Blocker(key=key, value=value, reason="a duration", substrax_value=seconds)
            )
        elif key == "resources" and isinstance(value, dict):
            blockers += _resource_blockers(value)
    return tuple(blockers)


def _resource_blockers(resources: Mapping[str, Any]) -> list[Blocker]:
    blockers: list[Blocker] = []
    for key, value in resources.items():
        where = f"resources.{key}"
        if key == "accelerator" and isinstance(value, (str, list)):
            request = _try(parse_accelerators, value)
            first = None if request is None else request.first
            blockers.append(
                Blocker(
                    key=where,
                    value=value,
                    reason="accelerator in the hardware grammar",
                    substrax_value=(
                        None if first is None else {"kind": first.kind, "count": first.count}
                    ),
                )
            )
        elif key == "cpu" and isinstance(value, str):
            cpu = _try(parse_cpu, value)
            blockers.append(
                Blocker(
                    key=where,
                    value=value,
                    reason="cpu as text",
                    substrax_value=None if cpu is None else cpu.per_node,
                )
            )
        elif key in ("memory", "memory_bytes"):
            mib = _try(partial(parse_memory, unit_key=key), value)
            blockers.append(
                Blocker(
                    key=where,
                    value=value,
                    reason="memory with a unit",
                    substrax_value=mib,
                    substrax_key="resources.memory_mib",
                )
            )
    return blockers


def _try(parse: Any, value: object) -> Any:
    try:
        return parse(value)
    except (ResourceError, ValueError, TypeError):
        return None


def overlay_fix(job: str, blockers: tuple[Blocker, ...]) -> list[str]:
    """The TOML that keeps the job runnable by both tools: substrax's values, x-tui's overlay.

    Args:
        job: The job's name.
        blockers: Its blocking keys, from :func:`substrax_blockers`.

    Returns:
        Lines: ``[tool.substrax.compute.jobs.<job>]`` with what substrax reads in place of each
        key (a key substrax has no equivalent for is removed from it), then
        ``[tool.x-tui.jobs.<job>]`` with each key as it was.
    """
    lines: list[str] = []
    kept = [blocker for blocker in blockers if blocker.substrax_value is not None]
    dropped = [blocker for blocker in blockers if blocker.substrax_value is None]
    lines.append(f"[tool.substrax.compute.jobs.{_toml_key(job)}]")
    for blocker in kept:
        key = blocker.substrax_key or blocker.key
        lines.append(f"{key} = {_toml_value(blocker.substrax_value)}")
    for blocker in dropped:
        lines.append(f"# remove {blocker.key}")
    lines.append(f"[{OVERLAY_TABLE}.{_toml_key(job)}]")
    for blocker in blockers:
        lines.append(f"{blocker.key} = {_toml_value(blocker.value)}")
    return lines


def _toml_key(name: str) -> str:
    bare = name.replace("-", "").replace("_", "").isalnum() and name.isascii()
    return name if bare else json.dumps(name)


def _toml_value(value: object) -> str:
    """A TOML inline value (JSON's forms are TOML's for strings, numbers, booleans, arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value)
