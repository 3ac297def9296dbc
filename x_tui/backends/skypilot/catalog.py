"""The accelerators and hourly prices SkyPilot's catalogs know, read offline, for pickers and costs.

SkyPilot keeps its catalogs in a cache (``~/.sky/catalogs/<version>/<cloud>/vms.csv``) that it
downloads on demand, without a timeout. x-tui never triggers that: the bridge asks SkyPilot where
the cache is and reads the files already there (see ``sky_sdk.op_catalog``), so an empty cache
gives no offers rather than a hang. Prices are the catalog's: on-demand (or spot) US dollars per
hour for one machine, the cheapest region.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from x_tui.compute.estimate import AcceleratorOffer
from x_tui.compute.extensions import AcceleratorChoice, ResourceRequest
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.records import JsonValue

if TYPE_CHECKING:
    from x_tui.backends.skypilot.bridge import Bridge

CACHE_SECONDS: Final = 600.0
"""How long one reading of the catalogs is kept in this process."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Offer:
    """One machine shape a cloud offers with accelerators, and its hourly price.

    Attributes:
        cloud: The cloud, as the catalog directory names it (``aws``, ``gcp``...).
        accelerator: The accelerator kind, as SkyPilot spells it.
        count: How many accelerators one machine has.
        instance_type: The machine type.
        price: On-demand US dollars per hour, cheapest region.
        spot_price: Spot US dollars per hour, when offered.
        region: The region of that price.
    """

    cloud: str
    accelerator: str
    count: float
    instance_type: str
    price: float
    spot_price: float | None
    region: str

    def hourly(self, *, spot: bool) -> float | None:
        """The hourly price, spot or on-demand; ``None`` when spot is wanted and not offered."""
        return self.spot_price if spot else self.price


def _number(value: JsonValue) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_offers(answer: JsonValue) -> tuple[Offer, ...]:
    """The offers in the bridge's ``catalog`` answer; malformed entries are left out."""
    offers: list[Offer] = []
    entries = answer.get("offers") if isinstance(answer, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        count, price = _number(entry.get("count")), _number(entry.get("price"))
        if count is None or price is None or not isinstance(entry.get("accelerator"), str):
            continue
        offers.append(
            Offer(
                cloud=str(entry.get("cloud", "")),
                accelerator=str(entry["accelerator"]),
                count=count,
                instance_type=str(entry.get("instance_type", "")),
                price=price,
                spot_price=_number(entry.get("spot_price")),
                region=str(entry.get("region", "")),
            )
        )
    return tuple(offers)


def accelerator_kinds(offers: Iterable[Offer]) -> dict[str, tuple[int, ...]]:
    """Each accelerator kind offered, with the per-machine counts, for a picker."""
    kinds: dict[str, set[int]] = {}
    for offer in offers:
        kinds.setdefault(offer.accelerator, set()).add(int(offer.count))
    return {kind: tuple(sorted(counts)) for kind, counts in sorted(kinds.items())}


def accelerator_offers(
    offers: Iterable[Offer], *, spot: bool, source: str
) -> list[AcceleratorOffer]:
    """The catalog's offers as x-tui's picker and cost bound take them: one per kind.

    Each kind's price is per accelerator and hour: the dearest of its shapes' cheapest prices
    divided by their counts, so a bound made from it holds whichever shape SkyPilot picks.

    Args:
        offers: The catalog's machine shapes.
        spot: Price spot instances (shapes without a spot price are left out).
        source: Where the offers come from, for the picker.
    """
    shapes: dict[str, dict[int, float]] = {}
    for offer in offers:
        price = offer.hourly(spot=spot)
        count = int(offer.count)
        if price is None or count < 1 or count != offer.count:
            continue
        cheapest_here = shapes.setdefault(offer.accelerator, {})
        if count not in cheapest_here or price < cheapest_here[count]:
            cheapest_here[count] = price
    return [
        AcceleratorOffer(
            kind=kind,
            counts=tuple(sorted(counts)),
            hourly_usd=round(max(price / count for count, price in counts.items()), 4),
            source=source,
            note="spot prices" if spot else "on-demand prices, cheapest region",
        )
        for kind, counts in sorted(shapes.items())
    ]


def cheapest(offers: Iterable[Offer], choice: AcceleratorChoice, *, spot: bool) -> Offer | None:
    """The cheapest offer of exactly ``choice``'s kind and per-node count."""
    fitting = [
        offer
        for offer in offers
        if offer.accelerator.lower() == choice.kind.lower()
        and offer.count == choice.per_node
        and offer.hourly(spot=spot) is not None
    ]
    return min(fitting, key=lambda offer: offer.hourly(spot=spot) or 0.0, default=None)


def estimate(
    offers: Iterable[Offer], request: ResourceRequest, *, spot: bool
) -> dict[str, JsonValue] | None:
    """What the request costs an hour at the catalog's prices, for its first priced alternative.

    Returns:
        ``hourly_cost_usd`` (every node), the shape, cloud, machine type, region and node count;
        ``None`` when the job asks for no accelerator or no alternative has a price.
    """
    if request.accelerator is None:
        return None
    listed = list(offers)
    for choice in request.accelerator.alternatives:
        offer = cheapest(listed, choice, spot=spot)
        if offer is None:
            continue
        hourly = (offer.hourly(spot=spot) or 0.0) * request.nodes
        return {
            "hourly_cost_usd": round(hourly, 4),
            "accelerator": f"{choice.kind}:{choice.per_node}",
            "nodes": request.nodes,
            "spot": spot,
            "cloud": offer.cloud,
            "instance_type": offer.instance_type,
            "region": offer.region,
        }
    return None


CacheKey = tuple[Hashable, ...]


class CatalogCache:
    """The catalogs as last read, per SkyPilot, environment and set of clouds, for a while."""

    def __init__(self) -> None:
        """Start empty."""
        self._lock = threading.Lock()
        self._kept: dict[CacheKey, tuple[float, tuple[Offer, ...]]] = {}

    def get(self, key: CacheKey) -> tuple[Offer, ...] | None:
        """The offers read for ``key`` in the last :data:`CACHE_SECONDS`, if any."""
        with self._lock:
            kept = self._kept.get(key)
        if kept is None or time.monotonic() - kept[0] > CACHE_SECONDS:
            return None
        return kept[1]

    def put(self, key: CacheKey, offers: tuple[Offer, ...]) -> None:
        """Keep a reading."""
        with self._lock:
            self._kept[key] = (time.monotonic(), offers)


CACHE: Final = CatalogCache()
"""The process's catalog readings."""


def cached_offers(bridge: Bridge, *, cloud: str | None) -> tuple[Offer, ...]:
    """The offers of the catalog cache, for one cloud or all, read through the bridge once a while.

    Raises:
        BackendUnavailableError: If SkyPilot is not installed.
        ProviderError: If the catalogs cannot be read in time.
    """
    clouds = (cloud,) if cloud else ()
    # Where SkyPilot's catalogs are depends on its install and the environment (HOME...).
    key = (tuple(bridge.interpreter()), frozenset(os.environ.items()), clouds)
    kept = CACHE.get(key)
    if kept is not None:
        return kept
    answer = bridge.call(
        "catalog", {"clouds": list(clouds) or None}, what="reading SkyPilot's catalogs", seconds=60
    )
    offers = read_offers(answer)
    CACHE.put(key, offers)
    return offers


def describe_cost(
    offers: Callable[[], tuple[Offer, ...]], request: ResourceRequest, *, spot: bool
) -> dict[str, JsonValue] | str:
    """The request's hourly cost (see :func:`estimate`), or one sentence saying why there is none.

    Args:
        offers: Reads the catalog's offers; a ``UserError`` it raises is the reason given.
        request: The job's resources.
        spot: Price spot instances.
    """
    if request.accelerator is None:
        return "no estimate: the catalog prices machines by accelerator, and this job asks for none"
    try:
        found = estimate(offers(), request, spot=spot)
    except UserError as error:
        return f"no estimate: {error}"
    if found is None:
        return (
            f"no estimate: SkyPilot's catalog cache has no price for {request.accelerator}"
            " (`sky gpus list` fetches the catalogs)"
        )
    return found
