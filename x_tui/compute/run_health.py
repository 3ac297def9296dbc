"""Whether a running run looks stuck or wasteful, and what it has cost so far.

:func:`flags_of` reads a run's samples (``telemetry_read``) and names what a person watching it
would want to know, each with its reason in words:

- ``silent``: no task wrote a byte for the stall time (the job's ``stall_seconds``, 10 minutes
  unless set) while its GPUs sat idle (or it has none): ``"silent 14 min, GPUs 0%"``;
- ``gpus_idle``: every GPU at 0% for the stall time, while the log goes on;
- ``memory_growing``: a GPU's memory, or the processes' resident memory against the machine's
  limit, above 90% and higher than a stall time (or the samples' start) ago.

Flags only; acting on them is the watcher's job. :func:`cost_so_far` is the elapsed time at the
run's hourly list price, ``None`` where no provider bills (local) or no price is known.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from x_tui.compute.estimate import estimate_cost
from x_tui.compute.extensions import (
    AcceleratorChoice,
    AcceleratorRequest,
    CpuRequest,
    ResourceRequest,
)
from x_tui.compute.price_quotes import quoted_hourly_price
from x_tui.compute.prices import table_for
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.telemetry_read import Sample, Telemetry
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import Resources
from x_tui.compute.worker.telemetry import DEFAULT_STALL_SECONDS

IDLE_PERCENT = 0.0
"""A GPU at or below this utilisation is idle."""
FULL_FRACTION = 0.9
"""Memory above this share of its limit, and growing, is flagged."""


class FlagKind(str, enum.Enum):
    """What a flag says about a run."""

    SILENT = "silent"
    GPUS_IDLE = "gpus_idle"
    MEMORY_GROWING = "memory_growing"


@dataclass(frozen=True)
class Flag:
    """One thing a running run looks like: its kind and the reason in words."""

    kind: FlagKind
    reason: str

    def describe(self) -> dict[str, JsonValue]:
        """The flag as JSON: ``kind`` and ``reason``."""
        return {"kind": self.kind.value, "reason": self.reason}


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _window(telemetry: Telemetry, now: float, seconds: float) -> list[Sample] | None:
    """The samples of the last ``seconds``, when the samples cover that long."""
    if telemetry.started is None or now - telemetry.started < seconds:
        return None
    return [sample for sample in telemetry.samples if sample.t >= now - seconds]


def _all_idle(samples: list[Sample]) -> bool:
    rows = [row for sample in samples for row in sample.gpus.values()]
    return bool(rows) and all(row[0] is not None and row[0] <= IDLE_PERCENT for row in rows)


def flags_of(
    telemetry: Telemetry | None, *, now: float, stall_seconds: float | None = None
) -> tuple[Flag, ...]:
    """What a running run's samples say is wrong with it (nothing for a finished run's caller).

    Args:
        telemetry: Its samples (``read_telemetry``); ``None`` flags nothing.
        now: The wall-clock time (epoch seconds) to judge the samples at.
        stall_seconds: The stall time; the one the worker recorded when ``None`` (the job's
            ``stall_seconds``, else :data:`DEFAULT_STALL_SECONDS`).

    Returns:
        The flags, in the order of :class:`FlagKind`.
    """
    if telemetry is None or not telemetry.samples:
        return ()
    stall = stall_seconds or telemetry.stall_seconds or DEFAULT_STALL_SECONDS
    window = _window(telemetry, now, stall)
    flags: list[Flag] = []
    latest = telemetry.samples[-1]
    has_gpus = bool(latest.gpus)
    idle = window is not None and bool(window) and _all_idle(window)
    last_output = latest.last_output if latest.last_output is not None else telemetry.started
    silent_for = now - last_output if last_output is not None else 0.0
    if window is not None and silent_for >= stall and (idle or not has_gpus):
        gpus = ", GPUs 0%" if has_gpus else ""
        flags.append(Flag(FlagKind.SILENT, f"silent {_minutes(silent_for)}{gpus}"))
    elif idle:
        flags.append(Flag(FlagKind.GPUS_IDLE, f"GPUs 0% for {_minutes(stall)}"))
    growing = _memory_growing(telemetry, window)
    if growing is not None:
        flags.append(Flag(FlagKind.MEMORY_GROWING, growing))
    return tuple(flags)


def _memory_growing(telemetry: Telemetry, window: list[Sample] | None) -> str | None:
    samples = window if window else list(telemetry.samples)
    if len(samples) < 2:
        return None
    first, last = samples[0], samples[-1]
    for index, row in sorted(last.gpus.items()):
        used, total = row[1], row[2]
        before = first.gpus.get(index)
        if used is None or not total or before is None or before[1] is None:
            continue
        if used / total > FULL_FRACTION and used > before[1]:
            return f"GPU {index} memory {100 * used / total:.0f}% and growing"
    limit = telemetry.memory_limit_mib
    if (
        limit
        and last.rss_mib is not None
        and first.rss_mib is not None
        and last.rss_mib / limit > FULL_FRACTION
        and last.rss_mib > first.rss_mib
    ):
        return f"memory {100 * last.rss_mib / limit:.0f}% of the limit and growing"
    return None


def hourly_price(backend: str, resources: Resources) -> float | None:
    """The run's hourly list price on ``backend`` (its dated table), ``None`` if unknown or free.

    Args:
        backend: The backend's name (``"local"`` bills nothing).
        resources: The resources the run's spec asked for.
    """
    table = table_for(backend)
    if table is None:
        return None
    accelerator = resources.accelerator
    request = ResourceRequest(
        accelerator=(
            AcceleratorRequest(
                alternatives=(AcceleratorChoice(kind=accelerator.kind, count=accelerator.count),)
            )
            if accelerator is not None
            else None
        ),
        cpu=CpuRequest(per_node=resources.cpu) if resources.cpu else None,
        memory_mib=resources.memory_mib,
    )
    estimate = estimate_cost(
        request,
        timeout_seconds=3600,
        offers=table.accelerators,
        cpu_core_hour_usd=table.cpu_core_hour_usd,
        memory_gib_hour_usd=table.memory_gib_hour_usd,
    )
    return estimate.max_usd


def run_hourly_price(store: RunStore, handle: RunHandle, resources: Resources) -> float | None:
    """A run's hourly price: the one its plan quoted at submit (``price_quotes``: SkyPilot's
    catalog), else its backend's dated table (:func:`hourly_price`); ``None`` if unknown or free.

    Args:
        store: The store holding the run (its quotes are kept beside it).
        handle: The run.
        resources: The resources its spec asked for.
    """
    quoted = quoted_hourly_price(store, handle.run_id)
    return quoted if quoted is not None else hourly_price(handle.backend, resources)


def cost_so_far(elapsed_seconds: float, hourly_usd: float | None) -> float | None:
    """The cost of ``elapsed_seconds`` at ``hourly_usd`` (``hourly_price``), in US dollars.

    Returns:
        The cost rounded to a cent's hundredth; ``None`` when there is no price (local runs).
    """
    if hourly_usd is None:
        return None
    return round(max(0.0, elapsed_seconds) / 3600 * hourly_usd, 4)
