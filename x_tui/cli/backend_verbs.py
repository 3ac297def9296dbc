"""``x-tui backends [--accelerators] [--backend B] [--json]``: the backends, and what they offer.

Each registered backend is built from the project's settings for it (empty outside a project);
one that cannot be built here is listed with the reason. With ``--accelerators``, each one's
accelerator kinds, counts per node and hourly price per accelerator where known: from the backend
itself (``Capability.ACCELERATORS``: this machine's GPUs for ``local``, SkyPilot's catalog) or
from x-tui's dated price table (Modal), with its date and source. Nothing reaches a provider.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from x_tui.cli.output import print_json, say
from x_tui.cli.project_arg import project_root
from x_tui.compute.backend import capabilities_of
from x_tui.compute.offers import BackendOffers, backend_names, backend_offers
from x_tui.compute.operations import open_project
from x_tui.compute.sanitize import escaped
from x_tui.compute.worker.errors import UnknownBackendError, UserError, close_name
from x_tui.compute.worker.records import JsonValue

EXIT_OK = 0


def _settings(args: argparse.Namespace) -> Mapping[str, Mapping[str, JsonValue]]:
    """Each backend's settings from the project, when there is a readable one."""
    root = project_root(args)
    if root is None:
        return {}
    project = open_project(root)
    return project.config.backends if project.config is not None else {}


def _capabilities(name: str, settings: Mapping[str, JsonValue]) -> tuple[list[str], str | None]:
    from x_tui.compute.registry import load_backend

    try:
        built = load_backend(name, settings)
    except UnknownBackendError:
        raise
    except (UserError, ValueError, LookupError, TypeError) as error:
        return [], str(error)
    return sorted(capability.value for capability in capabilities_of(built)), None


def _offers_json(offers: BackendOffers) -> dict[str, JsonValue]:
    table = offers.table
    return {
        "source": offers.source,
        "accelerators": [offer.describe() for offer in offers.offers],
        "cpu_core_hour_usd": table.cpu_core_hour_usd if table else None,
        "memory_gib_hour_usd": table.memory_gib_hour_usd if table else None,
        "price_date": table.date if table else None,
        "price_note": table.note if table else None,
        "problem": offers.problem,
    }


def _price(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _offer_lines(offers: BackendOffers) -> list[str]:
    lines = []
    if offers.source:
        lines.append(f"  offers from {escaped(offers.source)}")
    if not offers.offers:
        lines.append("  no accelerators")
    else:
        width = max(len(escaped(offer.kind)) for offer in offers.offers)
        lines.append(f"  {'KIND':<{width}}  {'PER NODE':<8}  {'PER HOUR':>9}  NOTE")
        for offer in offers.offers:
            lines.append(
                f"  {escaped(offer.kind):<{width}}  {offer.counts_text():<8}"
                f"  {_price(offer.hourly_usd):>9}  {escaped(offer.note)}".rstrip()
            )
    table = offers.table
    if table is not None and (table.cpu_core_hour_usd or table.memory_gib_hour_usd):
        lines.append(
            f"  CPU {_price(table.cpu_core_hour_usd)} per core-hour, memory"
            f" {_price(table.memory_gib_hour_usd)} per GiB-hour; {escaped(table.note)}"
        )
    return lines


def backends(args: argparse.Namespace) -> int:
    """List the registered backends; with ``--accelerators``, what each one offers.

    Args:
        args: The parsed command line.

    Returns:
        0.

    Raises:
        UnknownBackendError: If ``--backend`` names no registered backend.
    """
    names = backend_names()
    if args.backend is not None:
        if args.backend not in names:
            raise UnknownBackendError(
                f"no compute backend named '{args.backend}'{close_name(args.backend, names)};"
                f" registered: {', '.join(names)}"
            )
        names = (args.backend,)
    settings = _settings(args)
    documents: list[dict[str, JsonValue]] = []
    for name in names:
        own = settings.get(name, {})
        capabilities, problem = _capabilities(name, own)
        document: dict[str, JsonValue] = {
            "name": name,
            "capabilities": list(capabilities),
            "problem": problem,
        }
        offers = backend_offers(name, own) if args.accelerators else None
        if offers is not None:
            document["offers"] = _offers_json(offers)
        documents.append(document)
        if args.json:
            continue
        shown = ", ".join(capabilities) if capabilities else "-"
        say(
            f"{escaped(name)}  {escaped(shown)}"
            + (f"  (cannot be used here: {escaped(problem)})" if problem else "")
        )
        if offers is not None:
            for line in _offer_lines(offers):
                say(line)
    if args.json:
        print_json({"backends": documents})
    return EXIT_OK
