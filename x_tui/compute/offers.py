"""What a backend offers and what a run on it can cost, without reaching the provider.

A backend that declares ``Capability.ACCELERATORS`` answers ``accelerators()`` and
``check_offer(request)`` itself (the local backend: this machine's GPUs; SkyPilot: its catalog).
For one that declares nothing, x-tui's dated price table (:mod:`x_tui.compute.prices`, Modal's)
stands in. :func:`check_backend_offer` refuses an accelerator that is not offered before anything
is submitted; :func:`estimate_for` bounds a run's cost from the same offers. A backend whose runs
nobody bills sets an ``unbilled`` attribute to say why (the local backend).

:mod:`x_tui.compute.operations` re-exports :class:`BackendOffers`, :func:`backend_names` and
:func:`backend_offers` for the CLI and the TUI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.records import JsonValue

if TYPE_CHECKING:
    from x_tui.compute.estimate import AcceleratorOffer, CostEstimate
    from x_tui.compute.extensions import ResourceRequest
    from x_tui.compute.prices import PriceTable


@dataclass(frozen=True, kw_only=True, slots=True)
class BackendOffers:
    """What a backend offers, as far as x-tui can tell without reaching the provider.

    Attributes:
        backend: The backend's name.
        offers: Its accelerator kinds, counts per node and prices.
        source: Where they come from: the backend itself, or a dated price table.
        table: The dated price table used, when one was (it also prices CPU and memory).
        problem: Why the backend could not be asked (not installed here...), when it could not.
    """

    backend: str
    offers: tuple[AcceleratorOffer, ...] = ()
    source: str | None = None
    table: PriceTable | None = None
    problem: str | None = None


def backend_names() -> tuple[str, ...]:
    """The registered backends' names, sorted."""
    from x_tui.compute.registry import backend_names as registered

    return registered()


def backend_offers(name: str, settings: Mapping[str, JsonValue] | None = None) -> BackendOffers:
    """The accelerators a backend offers: from the backend (``Capability.ACCELERATORS``), else
    from x-tui's dated price table for it.

    Args:
        name: The backend's name.
        settings: Its settings table (the project's, when there is one); empty when ``None``.

    Returns:
        The offers; when the backend cannot be built here, its price table's offers (if any) and
        the reason in ``problem``.

    Raises:
        UnknownBackendError: If no such backend is registered.
    """
    from x_tui.compute.registry import load_backend
    from x_tui.compute.worker.errors import UnknownBackendError

    try:
        built: object = load_backend(name, settings or {})
    except UnknownBackendError:
        raise
    except (UserError, ValueError, LookupError, TypeError) as error:
        return offers_of(None, name, problem=f"the {name} backend cannot be used here: {error}")
    return offers_of(built, name)


def offers_of(built: object, name: str, *, problem: str | None = None) -> BackendOffers:
    """What a built backend offers: its own list, else its dated price table's, else nothing.

    Args:
        built: The backend; ``None`` when it could not be built.
        name: Its registered name.
        problem: Why it could not be built, kept in the answer.

    Returns:
        The offers.
    """
    from x_tui.compute.backend import Capability, ability
    from x_tui.compute.prices import table_for

    table = table_for(name)
    offering = ability(built, Capability.ACCELERATORS)
    if offering is not None:
        try:
            offers = tuple(offering.accelerators())
        except (UserError, OSError) as error:
            problem = f"the {name} backend could not list its accelerators: {error}"
        else:
            sources = sorted({offer.source for offer in offers if offer.source})
            return BackendOffers(
                backend=name,
                offers=offers,
                source="; ".join(sources) or f"the {name} backend",
                table=table,
            )
    if table is not None:
        return BackendOffers(
            backend=name,
            offers=table.accelerators,
            source=table.label,
            table=table,
            problem=problem,
        )
    return BackendOffers(backend=name, problem=problem)


def check_backend_offer(built: object, name: str, request: ResourceRequest | None) -> None:
    """Refuse an accelerator the backend (or its dated price table) does not offer.

    Args:
        built: The backend.
        name: Its registered name.
        request: The run's resources; nothing is checked without an accelerator.

    Raises:
        ResourceError: If the backend's ``check_offer`` refuses it, or, for a backend that
            declares no offers, its dated price table does not list it.
    """
    from x_tui.compute.backend import Capability, ability
    from x_tui.compute.estimate import check_offer
    from x_tui.compute.prices import table_for

    if request is None or request.accelerator is None:
        return
    offering = ability(built, Capability.ACCELERATORS)
    if offering is not None:
        offering.check_offer(request)
        return
    table = table_for(name)
    if table is not None:
        check_offer(request, table.accelerators, backend=name)


def estimate_for(
    built: object, name: str, request: ResourceRequest | None, timeout_seconds: float
) -> CostEstimate:
    """The most a run can cost on a backend, from its offers or its dated price table.

    Args:
        built: The backend.
        name: Its registered name.
        request: The run's resources.
        timeout_seconds: The job's timeout.

    Returns:
        The estimate; unknown, with the reason, for a backend that sets ``unbilled``, lists
        nothing and has no table, or cannot be asked.
    """
    from x_tui.compute.estimate import estimate_cost, unknown_estimate

    unbilled = getattr(built, "unbilled", None)
    if isinstance(unbilled, str) and unbilled:
        return unknown_estimate(timeout_seconds, unbilled)
    offers = offers_of(built, name)
    if offers.problem is not None and not offers.offers:
        return unknown_estimate(timeout_seconds, offers.problem)
    if not offers.offers and offers.table is None:
        return unknown_estimate(
            timeout_seconds,
            f"the {name} backend lists no accelerators or prices, and x-tui keeps no price"
            " table for it",
        )
    table = offers.table
    return estimate_cost(
        request,
        timeout_seconds=timeout_seconds,
        offers=offers.offers,
        cpu_core_hour_usd=table.cpu_core_hour_usd if table else None,
        memory_gib_hour_usd=table.memory_gib_hour_usd if table else None,
        source=offers.source,
    )
