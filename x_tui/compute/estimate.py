"""What a backend offers, whether it offers what a run asks for, and the most a run can cost.

A backend that knows its accelerators declares ``Capability.ACCELERATORS`` and answers
``accelerators() -> list[AcceleratorOffer]`` (the kinds, the counts one node has, the hourly price
of one accelerator where known) and ``check_offer(request)``, which raises before anything is
submitted when a kind or count is not offered (a remote backend calls :func:`check_offer` here;
the local backend never refuses: it runs on what the machine has). A backend that declares
nothing may still have a dated price table in :mod:`x_tui.compute.prices`.

:func:`estimate_cost` turns a request, the job's timeout and those offers into a
:class:`CostEstimate`: the hourly price times the accelerators (every node's) times the timeout
in hours, plus CPU and memory where a table prices them, or ``unknown`` with the reason.

Nothing here reaches a provider or the network.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from x_tui.compute.extensions import AcceleratorChoice, ResourceRequest
from x_tui.compute.resources import ResourceError
from x_tui.compute.worker.records import JsonValue


@dataclass(frozen=True, kw_only=True, slots=True)
class AcceleratorOffer:
    """One accelerator kind a backend can give.

    Attributes:
        kind: The kind, spelled as the hardware grammar spells it (``"H100"``); for a local GPU
            the grammar does not know, its name as ``nvidia-smi`` gives it.
        counts: The counts one node can have, ascending (``(1, 2, 4, 8)``).
        hourly_usd: The price of one accelerator for one hour, in US dollars; ``None`` unknown.
        source: Where the offer and its price come from (a dated table, a catalog, this machine).
        note: Anything else a user choosing should know.
    """

    kind: str
    counts: tuple[int, ...]
    hourly_usd: float | None = None
    source: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        """Check the figures.

        Raises:
            ValueError: If there is no count, a count is below one, or the price is negative.
        """
        if not self.kind or not self.counts or any(count < 1 for count in self.counts):
            raise ValueError(f"an accelerator offer needs a kind and counts >= 1, not {self!r}")
        if self.hourly_usd is not None and self.hourly_usd < 0:
            raise ValueError(f"{self.kind}: a price cannot be negative ({self.hourly_usd})")

    def counts_text(self) -> str:
        """The counts, such as ``1-8`` or ``1, 2, 4, 8``."""
        counts = sorted(self.counts)
        if counts == list(range(counts[0], counts[-1] + 1)) and len(counts) > 2:
            return f"{counts[0]}-{counts[-1]}"
        return ", ".join(str(count) for count in counts)

    def describe(self) -> dict[str, JsonValue]:
        """The offer as JSON."""
        return {
            "kind": self.kind,
            "counts_per_node": list(self.counts),
            "hourly_usd": self.hourly_usd,
            "source": self.source,
            "note": self.note,
        }


def find_offer(offers: Sequence[AcceleratorOffer], kind: str) -> AcceleratorOffer | None:
    """The offer of ``kind`` (compared case-insensitively), or ``None``."""
    for offer in offers:
        if offer.kind.upper() == kind.upper():
            return offer
    return None


def check_offer(
    request: ResourceRequest, offers: Sequence[AcceleratorOffer], *, backend: str
) -> None:
    """Refuse a request for an accelerator, or a count per node, that the backend does not offer.

    Every alternative must be offered: the provider may pick any of them.

    Args:
        request: The run's resources.
        offers: What the backend offers.
        backend: Its name, for the message.

    Raises:
        ResourceError: Naming the first alternative not offered, the nearest offered kind and
            every offered kind with its counts.
    """
    if request.accelerator is None:
        return
    listing = ", ".join(f"{offer.kind}:{offer.counts_text()}" for offer in offers) or "none"
    for choice in request.accelerator.alternatives:
        offer = find_offer(offers, choice.kind)
        if offer is None:
            close = difflib.get_close_matches(choice.kind, [o.kind for o in offers], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ResourceError(
                f"accelerator {str(choice)!r}: {backend} does not offer {choice.kind}{hint}"
                f" (offered, per node: {listing}; see x-tui backends --accelerators"
                f" --backend {backend})"
            )
        if choice.per_node not in offer.counts:
            per_node = f"{choice.per_node} per node" if choice.nodes > 1 else str(choice.count)
            raise ResourceError(
                f"accelerator {str(choice)!r}: {backend} offers {choice.kind} in counts of"
                f" {offer.counts_text()} per node, not {per_node}"
            )


@dataclass(frozen=True, kw_only=True, slots=True)
class CostEstimate:
    """The most a run can cost, or why that is unknown.

    Attributes:
        max_usd: The bound in US dollars; ``None`` when unknown.
        hours: The run's timeout in hours, the longest it can be billed for.
        lines: How the bound was reached, one part per line.
        unknown: Why there is no bound; ``None`` when there is one.
        source: Where the prices come from (a dated table, a catalog).
    """

    max_usd: float | None
    hours: float
    lines: tuple[str, ...] = ()
    unknown: str | None = None
    source: str | None = None

    def text(self) -> str:
        """One line: ``at most $189.57 ...`` or ``unknown: <why>``."""
        if self.max_usd is None:
            return f"unknown: {self.unknown}"
        return f"at most ${self.max_usd:,.2f} (the timeout, {self.hours:g} h, at list prices)"

    def describe(self) -> dict[str, JsonValue]:
        """The estimate as JSON."""
        return {
            "max_usd": None if self.max_usd is None else round(self.max_usd, 4),
            "timeout_hours": self.hours,
            "breakdown": list(self.lines),
            "unknown": self.unknown,
            "source": self.source,
        }


def _money(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _rate(value: float) -> str:
    return f"${value:,.4f}/h"


def _choice_cost(
    choice: AcceleratorChoice, offers: Sequence[AcceleratorOffer], hours: float
) -> tuple[float | None, str]:
    offer = find_offer(offers, choice.kind)
    if offer is None or offer.hourly_usd is None:
        return None, f"no price is known for {choice.kind}"
    cost = offer.hourly_usd * choice.count * hours
    nodes = f" on {choice.nodes} nodes" if choice.nodes > 1 else ""
    return cost, (
        f"{choice.kind} x {choice.count}{nodes} at {_rate(offer.hourly_usd)}"
        f" for {hours:g} h = {_money(cost)}"
    )


def estimate_cost(
    request: ResourceRequest | None,
    *,
    timeout_seconds: float,
    offers: Sequence[AcceleratorOffer],
    cpu_core_hour_usd: float | None = None,
    memory_gib_hour_usd: float | None = None,
    source: str | None = None,
) -> CostEstimate:
    """The most a run can cost: its resources at list prices for its whole timeout.

    With accelerator alternatives the dearest one counts (the provider may give any). CPU and
    memory count only where they are priced and the request names them; a run that asks for
    nothing priced has no bound.

    Args:
        request: The run's resources; ``None`` asks for nothing.
        timeout_seconds: The job's timeout.
        offers: The backend's offers, with prices.
        cpu_core_hour_usd: The price of one CPU core for an hour, when priced apart.
        memory_gib_hour_usd: The price of one GiB of memory for an hour, when priced apart.
        source: Where the prices come from.

    Returns:
        The estimate.
    """
    hours = timeout_seconds / 3600
    request = request or ResourceRequest()
    lines: list[str] = []
    total = 0.0
    priced = False
    if request.accelerator is not None:
        costs: list[tuple[float, str]] = []
        for choice in request.accelerator.alternatives:
            cost, line = _choice_cost(choice, offers, hours)
            if cost is None:
                return CostEstimate(max_usd=None, hours=hours, unknown=line, source=source)
            costs.append((cost, line))
        dearest = max(costs, key=lambda item: item[0])
        many = len(costs) > 1
        lines.append(dearest[1] + (" (the dearest alternative)" if many else ""))
        total += dearest[0]
        priced = True
    nodes = request.nodes
    if request.cpu is not None and cpu_core_hour_usd is not None:
        cores = request.cpu.per_node * nodes
        cost = cores * cpu_core_hour_usd * hours
        lines.append(f"{cores:g} CPU cores at {_rate(cpu_core_hour_usd)} = {_money(cost)}")
        total += cost
        priced = True
    if request.memory_mib is not None and memory_gib_hour_usd is not None:
        gib = request.memory_mib / 1024 * nodes
        cost = gib * memory_gib_hour_usd * hours
        lines.append(f"{gib:g} GiB of memory at {_rate(memory_gib_hour_usd)} = {_money(cost)}")
        total += cost
        priced = True
    if not priced:
        return CostEstimate(
            max_usd=None,
            hours=hours,
            unknown="the run asks for nothing this backend prices (no accelerator, and no CPU or"
            " memory figure that is priced apart); it is billed by use",
            source=source,
        )
    if request.accelerator is not None and cpu_core_hour_usd is not None and request.cpu is None:
        lines.append("CPU and memory the job does not request are billed by use, on top")
    return CostEstimate(max_usd=total, hours=hours, lines=tuple(lines), source=source)


def unknown_estimate(timeout_seconds: float, reason: str) -> CostEstimate:
    """An estimate with no bound, and why.

    Args:
        timeout_seconds: The job's timeout.
        reason: Why there is no bound.

    Returns:
        The estimate.
    """
    return CostEstimate(max_usd=None, hours=timeout_seconds / 3600, unknown=reason)
