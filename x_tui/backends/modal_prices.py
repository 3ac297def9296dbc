"""What Modal charges, as a dated table: enough to say what a run can cost before it is submitted.

Base rates in US dollars, as Modal's pricing page (https://modal.com/pricing) listed them on
:data:`PRICES_AS_OF`; H200, A100-40GB and A10 are from the same page's per-second rates at the
time of writing and not checked again on that date. Region and non-preemptible multipliers are not
included. A GPU function also pays for its CPU cores and memory (Modal's defaults, 0.125 cores and
128 MiB, when the job asks for none). No network is ever used: the table is the answer, and its
date says how old it is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Final

PRICES_AS_OF: Final = dt.date(2026, 5, 7)
"""When the rates below were read from Modal's pricing page."""

SOURCE: Final = "https://modal.com/pricing (base rates, no region or non-preemptible multiplier)"
"""Where the rates come from."""

GPU_PER_HOUR: Final[Mapping[str, float]] = {
    "B200": 6.25,
    "H200": 4.5396,
    "H100": 3.9492,
    "A100-80GB": 2.4984,
    "A100-40GB": 2.0988,
    "A100": 2.0988,
    "L40S": 1.9512,
    "A10": 1.1016,
    "A10G": 1.1016,
    "L4": 0.7992,
    "T4": 0.5904,
}
"""US dollars per GPU-hour, by kind as Modal spells it (``A100`` is the 40 GB one)."""

CPU_CORE_PER_HOUR: Final = 0.0000131 * 3600
"""US dollars per physical core-hour."""
MEMORY_GIB_PER_HOUR: Final = 0.00000222 * 3600
"""US dollars per GiB-hour of memory."""
DEFAULT_CPU: Final = 0.125
"""The cores Modal gives a function that asks for none."""
DEFAULT_MEMORY_MIB: Final = 128
"""The memory Modal gives a function that asks for none."""


def gpu_price(shape: str) -> float | None:
    """The hourly price of one Modal ``gpu`` shape (``"H100!:8"``), or ``None`` if unknown.

    ``!`` (exactly that kind) costs the same as the kind; a ``+`` (that kind or better) is priced
    as the kind named.
    """
    kind, _, count = shape.partition(":")
    price = GPU_PER_HOUR.get(kind.rstrip("!+").upper())
    if price is None:
        return None
    return price * (int(count) if count else 1)


def hourly_price(
    gpu: str | tuple[str, ...] | None, *, cpu: float | None, memory_mib: int | None
) -> float | None:
    """The most a Modal function with these options costs per hour, or ``None`` if unknown.

    Args:
        gpu: Modal's ``gpu``: none, one shape, or fallbacks (priced as the dearest).
        cpu: The cores asked for; Modal's default when ``None``.
        memory_mib: The memory asked for; Modal's default when ``None``.

    Returns:
        US dollars per hour, or ``None`` when a GPU kind is not in the table.
    """
    shapes = (gpu,) if isinstance(gpu, str) else (gpu or ())
    prices = [gpu_price(shape) for shape in shapes]
    if any(price is None for price in prices):
        return None
    gpus = max((price for price in prices if price is not None), default=0.0)
    cores = cpu if cpu is not None else DEFAULT_CPU
    memory = (memory_mib if memory_mib is not None else DEFAULT_MEMORY_MIB) / 1024
    return gpus + cores * CPU_CORE_PER_HOUR + memory * MEMORY_GIB_PER_HOUR
