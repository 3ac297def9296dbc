"""The hardware grammar: accelerators, CPU cores, memory and durations, as users write them.

One grammar serves the job tables of ``[tool.substrax.compute]``, ``--accelerator`` on the command
line and the TUI's submit screen. It accepts what substrax, urun, Nodus and OuterProduct users
write (``"h100:8"``, ``"H100!"``, ``["H100:8", "A100-80GB:8"]``, ``cpu = "8:128"``,
``memory = "32Gi"``, ``memory_bytes = 17179869184``, ``"1h30m"``) and reads it into a
:class:`ResourceRequest`. Its :meth:`~ResourceRequest.to_resources` is the substrax
:class:`~x_tui.compute.worker.spec.Resources` a ``spec.json`` holds; what substrax cannot say (the
alternatives, ``exact``, the node count, the CPU total) stays in the request, never in the spec.

Every refusal is a :class:`ResourceError` naming the value it got and the accepted forms. This
module never decides what a backend can place: :func:`check_placement` is the one check a backend
calls for that.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from x_tui.compute.extensions import (
    AcceleratorChoice,
    AcceleratorRequest,
    CpuRequest,
    ResourceRequest,
)
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue, RecordError, read_record
from x_tui.compute.worker.spec import Accelerator, Resources

GPUS_PER_NODE = 8
"""One node's worth of GPUs: a larger count spans ``ceil(count / 8)`` nodes."""

GPU_KINDS = (
    "A100-80GB", "A100-40GB", "A100", "A10G", "A10", "A40", "L40S", "L40", "L4", "T4",
    "H100", "H200", "B200", "V100", "P100", "RTX-PRO-6000", "MI300X",
)  # fmt: skip
"""GPU kinds, spelled the way the providers spell them."""

TPU_KINDS = ("TPU-v2", "TPU-v3", "TPU-v4", "TPU-v5e", "TPU-v5p", "TPU-v6e")
"""TPU kinds; their count is a slice's size, which never splits into nodes."""

KINDS = GPU_KINDS + TPU_KINDS
"""Every canonical accelerator kind the grammar knows."""

ACCELERATOR_FORMS = "KIND, KIND:COUNT, KIND! or KIND!:COUNT, such as 'L4', 'H100:8' or 'H100!:8'"
CPU_FORMS = "a number of cores such as 8 or 0.5, or 'PER_NODE:TOTAL' such as '8:128'"
MEMORY_FORMS = "MiB as a number such as 32768, or a size such as '32Gi', '32GiB', '512MiB' or '4G'"
DURATION_FORMS = "seconds such as 1800, or a duration such as '90s', '30m', '6h' or '1h30m'"
MEMORY_KEYS = ("memory", "memory_mib", "memory_bytes")
RESOURCE_KEYS = ("accelerator", "cpu", *MEMORY_KEYS)
"""The keys of a job table's ``resources``."""

_BY_UPPER = {kind.upper(): kind for kind in KINDS}
_KEY_HINTS = {
    "gpu": "accelerator", "gpus": "accelerator", "gpu_type": "accelerator",
    "accelerators": "accelerator", "cpus": "cpu", "mem": "memory",
}  # fmt: skip
_ACCELERATOR = re.compile(r"(?P<kind>[^:!,\s]+)(?P<exact>!)?(?::(?P<count>\d+))?")
_NUMBER = r"\d+(?:\.\d+)?|\.\d+"
_CPU = re.compile(rf"(?P<per_node>{_NUMBER})(?::(?P<total>{_NUMBER}))?")
_MEMORY = re.compile(rf"(?P<number>{_NUMBER})\s*(?P<unit>[A-Za-z]*)")
_UNITS = {
    "": 2**20, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12, "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20,
    "gi": 2**30, "gib": 2**30, "ti": 2**40, "tib": 2**40,
}  # fmt: skip
_DURATION = re.compile(
    rf"(?:(?P<d>{_NUMBER})d)?\s*(?:(?P<h>{_NUMBER})h)?\s*"
    rf"(?:(?P<m>{_NUMBER})m)?\s*(?:(?P<s>{_NUMBER})s)?",
    re.IGNORECASE,
)
_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_T = TypeVar("_T")


class ResourceError(ConfigError):
    """A resource value that cannot be read; the message names it and the accepted forms."""


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def request_from_resources(resources: Resources) -> ResourceRequest:
    """The request a substrax ``Resources`` makes, with nothing beyond what it says.

    Args:
        resources: A spec's resources.

    Returns:
        The request: one alternative, its kind as written, not exact; a known GPU kind's count
        above 8 spans nodes as in the grammar when it splits evenly over them.
    """
    accelerator = None
    if resources.accelerator is not None:
        accelerator = AcceleratorRequest(alternatives=(_choice_of(resources.accelerator),))
    cpu = CpuRequest(per_node=resources.cpu) if resources.cpu is not None else None
    return ResourceRequest(accelerator=accelerator, cpu=cpu, memory_mib=resources.memory_mib)


def _choice_of(accelerator: Accelerator) -> AcceleratorChoice:
    nodes = _nodes(_BY_UPPER.get(accelerator.kind.upper(), ""), accelerator.count)
    if accelerator.count % nodes:
        nodes = 1
    return AcceleratorChoice(kind=accelerator.kind, count=accelerator.count, nodes=nodes)


def _nodes(kind: str, count: int) -> int:
    return math.ceil(count / GPUS_PER_NODE) if kind in GPU_KINDS else 1


def canonical_kind(text: str) -> str:
    """The canonical spelling of an accelerator kind, found case-insensitively.

    Args:
        text: The kind, such as ``"h100"`` or ``"a100-80gb"``.

    Returns:
        The kind as providers spell it, such as ``"H100"`` or ``"A100-80GB"``.

    Raises:
        ResourceError: If the kind is unknown; the message suggests the nearest known kind.
    """
    if not isinstance(text, str):
        raise ResourceError(f"accelerator kind {_show(text)} is not a string such as 'H100'")
    kind = _BY_UPPER.get(text.strip().upper())
    if kind is not None:
        return kind
    close = difflib.get_close_matches(text.strip().upper(), list(_BY_UPPER), n=1, cutoff=0.6)
    hint = f"; did you mean {_BY_UPPER[close[0]]!r}?" if close else ""
    raise ResourceError(
        f"unknown accelerator kind {_show(text)}{hint} (known: {', '.join(KINDS)};"
        ' another kind can be written as a table: { kind = "...", count = N })'
    )


def parse_accelerator(text: str) -> AcceleratorChoice:
    """Read one accelerator shape: ``KIND``, ``KIND:COUNT``, ``KIND!`` or ``KIND!:COUNT``.

    Args:
        text: The shape, in any case, such as ``"h100:8"``, ``"H100!"`` or ``"H100:16"``.

    Returns:
        The shape, its kind canonical; a GPU count above 8 spans ``ceil(count / 8)`` nodes.

    Raises:
        ResourceError: If the text is not of those forms, the kind is unknown, the count is
            below one, or a multi-node count does not split evenly over its nodes.
    """
    if not isinstance(text, str):
        raise ResourceError(f"accelerator {_show(text)} is not a string: write {ACCELERATOR_FORMS}")
    match = _ACCELERATOR.fullmatch(text.strip())
    if match is None:
        hint = ""
        if re.fullmatch(r"[^:!,\s]+:\d+!", text.strip()):
            written, _, number = text.strip()[:-1].partition(":")
            hint = f" (the mark goes after the kind: {written}!:{number})"
        raise ResourceError(f"accelerator {_show(text)} is not {ACCELERATOR_FORMS}{hint}")
    try:
        kind = canonical_kind(match["kind"])
    except ResourceError as error:
        raise ResourceError(f"accelerator {_show(text)}: {error}") from None
    count = int(match["count"] or 1)
    if count < 1:
        raise ResourceError(f"accelerator {_show(text)}: the count must be at least 1, not {count}")
    nodes = _nodes(kind, count)
    if count % nodes:
        raise ResourceError(
            f"accelerator {_show(text)}: {count} {kind} need {nodes} nodes of at most"
            f" {GPUS_PER_NODE}, and {count} does not split evenly over {nodes}; ask for at most"
            f" {GPUS_PER_NODE}, or a multiple of {nodes} such as {kind}:{nodes * GPUS_PER_NODE}"
        )
    return AcceleratorChoice(kind=kind, count=count, exact=bool(match["exact"]), nodes=nodes)


def parse_accelerators(value: str | list[str]) -> AcceleratorRequest:
    """Read accelerator shapes in order of preference.

    Args:
        value: One shape, shapes separated by commas (``"H100:8,A100-80GB:8"``, as on the
            command line), or a list of shapes (``["H100:8", "A100-80GB:8"]``, as in a table).

    Returns:
        The request.

    Raises:
        ResourceError: If a shape is refused, the list is empty or holds something other than
            strings, a shape is listed twice, or the shapes span different node counts.
    """
    if isinstance(value, str):
        items: list[object] = list(value.split(",")) if value.strip() else [value]
    elif isinstance(value, list):
        items = list(value)
    else:
        raise ResourceError(
            f"accelerator {_show(value)} is not a string or a list of strings: write"
            f" {ACCELERATOR_FORMS}, or alternatives such as ['H100:8', 'A100-80GB:8']"
        )
    if not items:
        raise ResourceError(
            "accelerator [] lists no alternatives: write at least one, such as ['H100:8']"
        )
    for item in items:
        if isinstance(item, str) and not item.strip() and len(items) > 1:
            raise ResourceError(
                f"accelerator {_show(value)} has an empty alternative: separate shapes by single"
                " commas, such as 'H100:8,A100-80GB:8'"
            )
        if not isinstance(item, str):
            raise ResourceError(
                f"accelerator alternative {_show(item)} is not a string: write {ACCELERATOR_FORMS}"
            )
    choices = tuple(parse_accelerator(item) for item in items)  # type: ignore[arg-type]
    try:
        return AcceleratorRequest(alternatives=choices)
    except ValueError as error:
        raise ResourceError(f"accelerator {_show(value)}: {error}") from None


def parse_cpu(value: float | str) -> CpuRequest:
    """Read CPU cores: a number (fractional allowed) or ``"PER_NODE:TOTAL"``.

    Args:
        value: Such as ``8``, ``0.5``, ``"8"`` or ``"8:128"``.

    Returns:
        The request; ``"8:128"`` is 8 cores on each of 16 machines.

    Raises:
        ResourceError: If the value is not of those forms, a figure is not positive, or the total
            is not a whole multiple of the per-node figure.
    """
    if _is_number(value):
        per_node, total = float(value), None
    elif isinstance(value, str) and (match := _CPU.fullmatch(value.strip())):
        per_node = float(match["per_node"])
        total = float(match["total"]) if match["total"] else None
    else:
        raise ResourceError(f"cpu {_show(value)} is not {CPU_FORMS}")
    try:
        return CpuRequest(per_node=per_node, total=total)
    except ValueError as error:
        raise ResourceError(f"cpu {_show(value)}: {error}; write {CPU_FORMS}") from None


def parse_memory(value: float | str, *, unit_key: str) -> int:
    """Read a memory figure, in MiB, rounded up (each figure is the least the job gets).

    Args:
        value: A number, or for ``memory`` a size string such as ``"32Gi"``, ``"32GiB"``,
            ``"512MiB"`` or ``"4G"`` (``K``, ``M``, ``G``, ``T`` are powers of 1000; ``Ki``,
            ``Mi``, ``Gi``, ``Ti`` powers of 1024; units in any case).
        unit_key: The key it came from, which sets what a bare number means: ``memory`` and
            ``memory_mib`` take MiB, ``memory_bytes`` takes bytes.

    Returns:
        The memory in MiB, at least 1.

    Raises:
        ResourceError: If the value is not of the key's forms or is not positive.
        ValueError: If ``unit_key`` is not one of ``memory``, ``memory_mib``, ``memory_bytes``.
    """
    if unit_key not in MEMORY_KEYS:
        raise ValueError(f"unit_key must be one of {', '.join(MEMORY_KEYS)}, not {unit_key!r}")
    if unit_key != "memory":
        unit = "MiB" if unit_key == "memory_mib" else "bytes"
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ResourceError(
                f"{unit_key} {_show(value)} is not a positive whole number of {unit}"
                f" (for a size with a unit, write memory = '32Gi')"
            )
        return value if unit_key == "memory_mib" else math.ceil(value / 2**20)
    if _is_number(value):
        number, scale = float(value), _UNITS[""]
    elif isinstance(value, str) and (match := _MEMORY.fullmatch(value.strip())):
        scale_of = _UNITS.get(match["unit"].lower())
        if scale_of is None:
            raise ResourceError(
                f"memory {_show(value)}: unknown unit {match['unit']!r}; write {MEMORY_FORMS}"
            )
        number, scale = float(match["number"]), scale_of
    else:
        raise ResourceError(f"memory {_show(value)} is not {MEMORY_FORMS}")
    if not (math.isfinite(number) and number > 0):
        raise ResourceError(f"memory {_show(value)} is not positive; write {MEMORY_FORMS}")
    return max(1, math.ceil(number * scale / 2**20))


def parse_duration(value: float | str) -> float:
    """Read a duration, in seconds.

    Args:
        value: Seconds as a number or numeric string, or units in descending order, each at most
            once: ``"90s"``, ``"30m"``, ``"6h"``, ``"1h30m"``, ``"2d"``, ``"1.5h"``.

    Returns:
        The seconds, a positive finite number.

    Raises:
        ResourceError: If the value is not of those forms or is not positive.
    """
    seconds: float | None = None
    if _is_number(value):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(_NUMBER, text):
            seconds = float(text)
        elif text and (match := _DURATION.fullmatch(text)):
            seconds = sum(
                float(match[unit]) * factor for unit, factor in _SECONDS.items() if match[unit]
            )
    if seconds is None:
        raise ResourceError(f"duration {_show(value)} is not {DURATION_FORMS}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ResourceError(f"duration {_show(value)} is not positive; write {DURATION_FORMS}")
    return seconds


def read_resources_table(table: object) -> ResourceRequest:
    """Read a job table's ``resources``, in substrax's forms or the grammar's.

    A value in substrax's form (an accelerator table, a number of cores, ``memory_mib``) reads
    exactly as substrax reads it, with substrax's messages; the grammar's forms are read into the
    same ``Resources`` and their extras kept in the request.

    Args:
        table: The parsed ``resources`` value.

    Returns:
        The request.

    Raises:
        ResourceError: If a key is unknown, two memory keys are given, or a value is refused;
            the message starts with ``resources.<key>``.
    """
    if not isinstance(table, Mapping):
        return request_from_resources(_read_resources(table))
    for key in table:
        if key not in RESOURCE_KEYS:
            close = _KEY_HINTS.get(str(key).lower()) or next(
                iter(difflib.get_close_matches(str(key), RESOURCE_KEYS, n=1)), None
            )
            hint = f"; did you mean {close!r}?" if close else ""
            raise ResourceError(
                f"resources.{key}: unknown key {key!r}{hint} (accepted: {', '.join(RESOURCE_KEYS)})"
            )
    given = [key for key in MEMORY_KEYS if key in table]
    if len(given) > 1:
        raise ResourceError(
            f"resources: {' and '.join(given)} both set the memory; keep one of them"
        )
    substrax: dict[str, JsonValue] = {
        key: value for key, value in table.items() if key in ("accelerator", "cpu", "memory_mib")
    }
    accelerator: AcceleratorRequest | None = None
    cpu: CpuRequest | None = None
    value = table.get("accelerator")
    if isinstance(value, (str, list)):
        accelerator = _at("accelerator", parse_accelerators, value)
        substrax["accelerator"] = {"kind": accelerator.first.kind, "count": accelerator.first.count}
    value = table.get("cpu")
    if isinstance(value, str):
        cpu = _at("cpu", parse_cpu, value)
        substrax["cpu"] = cpu.per_node
    for key in ("memory", "memory_bytes"):
        if key in table:
            substrax["memory_mib"] = _at(key, partial(parse_memory, unit_key=key), table[key])
    request = request_from_resources(_read_resources(substrax))
    return ResourceRequest(
        accelerator=accelerator or request.accelerator,
        cpu=cpu or request.cpu,
        memory_mib=request.memory_mib,
    )


def _read_resources(data: object) -> Resources:
    try:
        return read_record(Resources, data, where="resources")
    except RecordError as error:
        raise ResourceError(str(error)) from None


def _at(key: str, parse: Callable[[Any], _T], value: object) -> _T:
    try:
        return parse(value)
    except ResourceError as error:
        raise ResourceError(f"resources.{key}: {error}") from None


def check_placement(request: ResourceRequest, *, multi_node: bool, backend: str = "") -> None:
    """Refuse a request for several machines on a backend that places one.

    Args:
        request: The request.
        multi_node: Whether the backend can place several nodes for one run.
        backend: The backend's name, for the message.

    Raises:
        ResourceError: If the request needs more than one node and the backend cannot place them.
    """
    if request.nodes == 1 or multi_node:
        return
    what = (
        f"accelerator {str(request.accelerator)!r}"
        if request.accelerator is not None
        else f"cpu {str(request.cpu)!r}"
    )
    name = f"the {backend} backend" if backend else "this backend"
    raise ResourceError(
        f"{what} needs {request.nodes} nodes, and {name} runs a job on one machine; ask for at"
        f" most one node's worth ({GPUS_PER_NODE} GPUs, or one CPU figure such as cpu = 8), or"
        " use a backend that places several nodes"
    )
