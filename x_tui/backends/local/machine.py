"""What this machine has, for the local backend's plan and its accelerator offers.

CPU count and memory from the OS; GPUs from ``nvidia-smi`` when it is on ``PATH`` (none
otherwise), asked once per process (the answer is kept: a machine's GPUs do not change while x-tui
runs, and each plan of the submit screen would otherwise start ``nvidia-smi``). A GPU's name
(``NVIDIA H100 80GB HBM3``, ``Tesla T4``) is read into the hardware grammar's kind (``H100``,
``T4``) where it names one; an unknown GPU keeps its own name.

This module only reads; it never changes the machine.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections import Counter
from collections.abc import Sequence

from x_tui.backends.local.process import command_output
from x_tui.compute.estimate import AcceleratorOffer
from x_tui.compute.worker.records import JsonValue

SOURCE = "this machine (nvidia-smi)"
"""Where the local backend's offers come from."""

_PLAIN_KINDS = (
    "H100", "H200", "B200", "A10G", "A10", "A40", "L40S", "L40", "L4", "T4", "V100", "P100",
    "MI300X",
)  # fmt: skip


def gpu_kind(name: str) -> str | None:
    """The grammar's kind for a GPU name as ``nvidia-smi`` gives it.

    Args:
        name: Such as ``"NVIDIA A100-SXM4-80GB"`` or ``"Tesla T4"``.

    Returns:
        The kind, such as ``"A100-80GB"`` or ``"T4"``; ``None`` when the name names none.
    """
    upper = name.upper()
    tokens = upper.replace("-", " ").split()
    if "A100" in tokens:
        if "80GB" in upper:
            return "A100-80GB"
        return "A100-40GB" if "40GB" in upper else "A100"
    if "RTX PRO 6000" in " ".join(tokens):
        return "RTX-PRO-6000"
    for token in tokens:
        if token in _PLAIN_KINDS:
            return token
    return None


def gpu_names() -> tuple[str, ...]:
    """Each GPU's name, one entry per GPU, as ``nvidia-smi`` lists them (none without it)."""
    return tuple(line.split(",")[0].strip() for line in gpu_lines())


@functools.cache
def gpu_lines() -> tuple[str, ...]:
    """``<name>, <memory>`` per GPU, as ``nvidia-smi`` lists them (none without it); asked once."""
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        return ()
    output = command_output([nvidia_smi, "--query-gpu=name,memory.total", "--format=csv,noheader"])
    if output is None:
        return ()
    return tuple(line.strip() for line in output.splitlines() if line.strip())


def offers(names: tuple[str, ...] | None = None) -> list[AcceleratorOffer]:
    """This machine's GPUs as offers: one per kind, the count it has, no price.

    Args:
        names: The GPU names; ``nvidia-smi``'s when ``None``.

    Returns:
        The offers, in the order the kinds first appear.
    """
    found = Counter(gpu_names() if names is None else names)
    result = []
    for name, count in found.items():
        kind = gpu_kind(name)
        result.append(
            AcceleratorOffer(
                kind=kind or name,
                counts=(count,),
                hourly_usd=None,
                source=SOURCE,
                note=name if kind else f"{name}: a GPU the hardware grammar does not name",
            )
        )
    return result


def runs_on(names: tuple[str, ...] | None = None) -> str:
    """What a local run gets, in words: ``this machine: 8 x H100 (NVIDIA H100 80GB HBM3)``."""
    listed = offers(names)
    if not listed:
        return "this machine, without a GPU (nvidia-smi lists none)"
    parts = []
    for offer in listed:
        name = offer.note.split(":")[0]
        label = offer.kind if name == offer.kind else f"{offer.kind} ({name})"
        parts.append(f"{offer.counts[0]} x {label}")
    return "this machine: " + ", ".join(parts)


def shortfall(asked: Sequence[tuple[str, int]], names: tuple[str, ...] | None = None) -> str | None:
    """Why this machine cannot give any of the accelerator shapes asked for, or ``None``.

    A local run does not wait for what is missing: it runs on what the machine has (CPUs only
    without a GPU), which is why the submit screen asks the user to acknowledge this first.

    Args:
        asked: The shapes, as (kind, count) in order of preference.
        names: The GPU names; ``nvidia-smi``'s when ``None``.

    Returns:
        A sentence naming what was asked and what this machine has; ``None`` when one shape fits.
    """
    if not asked:
        return None
    have: Counter[str] = Counter()
    for offer in offers(names):
        have[offer.kind.upper()] += offer.counts[0]
    for kind, count in asked:
        wanted = kind.upper().rstrip("!")
        found = sum(n for have_kind, n in have.items() if have_kind.startswith(wanted))
        if found >= count:
            return None
    shapes = " or ".join(f"{kind}:{count}" for kind, count in asked)
    return f"the job asks for {shapes}; the local backend runs it on {runs_on(names)} instead"


def machine() -> dict[str, JsonValue]:
    """CPU count, memory in MiB, and each GPU as ``nvidia-smi`` lists it."""
    try:
        memory_mib: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        memory_mib = None
    return {"cpus": os.cpu_count(), "memory_mib": memory_mib, "gpus": list(gpu_lines())}
