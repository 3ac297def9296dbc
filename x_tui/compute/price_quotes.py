"""The hourly price a run's plan quoted, kept at submit, for its cost so far.

A backend whose prices x-tui keeps no dated table of (SkyPilot: each cloud's catalog, read at plan
time) says in its plan what the run costs an hour: ``cost.hourly_cost_usd``. ``submit_run`` keeps
that figure in x-tui's own side file, ``<state>/x-tui/prices/<run_id>.json`` (``{"hourly_usd":
H, "source": "..."}``), never in substrax's handle; :func:`quoted_hourly_price` reads it back
(bounded, checked) for ``run_health.cost_so_far``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from x_tui.compute.store import RunStore, check_run_id
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.record_files import read_json_file
from x_tui.compute.worker.records import JsonValue, write_atomic

QUOTE_BYTES = 4096
"""The most a price file is read."""


def prices_dir(runs: Path) -> Path:
    """Where the price quotes of the run store at ``runs`` are kept.

    Returns:
        ``<state>/x-tui/prices`` for ``<state>/compute/runs``; ``<runs>-prices`` beside a store
        kept elsewhere.
    """
    if runs.parent.name == "compute":
        return runs.parent.parent / "x-tui" / "prices"
    return runs.with_name(f"{runs.name}-prices")


def _price(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number < 1e6 else None


def plan_quote(provider_request: Mapping[str, JsonValue] | None) -> dict[str, JsonValue] | None:
    """The hourly price a backend's plan quoted (its ``cost.hourly_cost_usd``), if it quoted one.

    Returns:
        ``{"hourly_usd": H, "source": "..."}``, or ``None`` when the plan gave no price.
    """
    cost = provider_request.get("cost") if provider_request is not None else None
    if not isinstance(cost, dict):
        return None
    hourly = _price(cost.get("hourly_cost_usd"))
    if hourly is None:
        return None
    where = ", ".join(
        str(cost[key])
        for key in ("cloud", "instance_type", "region")
        if isinstance(cost.get(key), str)
    )
    spot = " spot" if cost.get("spot") is True else ""
    return {"hourly_usd": hourly, "source": f"the plan's catalog{spot} price ({where})"}


def quote_path(store: RunStore, run_id: str) -> Path:
    """The file of ``run_id``'s price quote (``delete`` removes it with the run).

    Raises:
        BadRecordError: If ``run_id`` is not of the run id form.
    """
    return prices_dir(store.root) / f"{check_run_id(run_id)}.json"


def save_quote(store: RunStore, run_id: str, quote: Mapping[str, JsonValue]) -> None:
    """Keep ``quote`` (:func:`plan_quote`) for ``run_id``, written whole or not at all.

    Raises:
        OSError: If it cannot be written.
    """
    write_atomic(quote_path(store, run_id), json.dumps(dict(quote)))


def quoted_hourly_price(store: RunStore, run_id: str) -> float | None:
    """The hourly price kept for ``run_id`` at submit; ``None`` when none was (or it is damaged)."""
    try:
        document = read_json_file(quote_path(store, run_id), max_bytes=QUOTE_BYTES)
    except (OSError, UserError, ValueError):
        return None
    return _price(document.get("hourly_usd")) if isinstance(document, dict) else None
