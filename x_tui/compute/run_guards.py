"""What the watcher holds a run to, and what it did about it: x-tui's guard side file of a run.

A run's budget (``max_cost``, ``max_duration``), how many times it is resubmitted after a
preemption (``preemption_retries``), and the links between a preempted run and the run that
replaced it live in ``<state>/x-tui/guards/<run_id>.json``, never in substrax's spec or handle
(substrax reads those byte for byte). The job table (or its ``[tool.x-tui.jobs.<name>]`` overlay)
sets the guard with :data:`GUARD_KEYS`; ``x-tui run --max-cost/--max-duration`` and the submit
screen replace the budget for one run. :func:`~x_tui.compute.operations.submit_run` writes the
file right after the run's launch record and before anything of the run starts, so no run starts
unguarded; the watcher writes the links.

The side files themselves are :mod:`x_tui.compute.guard_book`'s.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from x_tui.compute.resources import ResourceError, parse_duration
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue

GUARD_KEYS = ("max_cost", "max_duration", "preemption_retries")
"""The job-table keys of a run's guard (x-tui's own: substrax refuses them in its table)."""

WARN_FRACTION = 0.8
"""The share of a budget at which the watcher notifies."""

MAX_PREEMPTION_RETRIES = 100
"""The most resubmissions a job may ask for."""

MAX_COST_USD = 10_000_000.0
"""The largest budget in dollars (a bigger one is a typo)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunGuard:
    """A run's budget, its preemption retries and its links to the runs it replaced or became.

    Attributes:
        max_cost_usd: Cancel the run once its cost so far reaches this many US dollars.
        max_duration_seconds: Cancel the run once it has run this long since its submission.
        preemption_retries: How many more times the run is resubmitted after a preemption.
        hourly_usd: The run's hourly price as its plan priced it, what its cost so far is
            counted at (``None``: the backend's dated table, or unknown).
        resubmitted_from: The preempted run this one replaces.
        resubmitted_as: The run that replaced this one after it was preempted.
    """

    max_cost_usd: float | None = None
    max_duration_seconds: float | None = None
    preemption_retries: int = 0
    hourly_usd: float | None = None
    resubmitted_from: str | None = None
    resubmitted_as: str | None = None

    def __bool__(self) -> bool:
        """Whether there is anything to keep for the run."""
        return bool(
            self.has_budget
            or self.preemption_retries
            or self.resubmitted_from
            or self.resubmitted_as
        )

    @property
    def has_budget(self) -> bool:
        """Whether a cost or a duration limit is set."""
        return self.max_cost_usd is not None or self.max_duration_seconds is not None

    def with_budget(
        self, *, max_cost_usd: float | None = None, max_duration_seconds: float | None = None
    ) -> RunGuard:
        """This guard with each limit given replacing the job's."""
        return dataclasses.replace(
            self,
            max_cost_usd=max_cost_usd if max_cost_usd is not None else self.max_cost_usd,
            max_duration_seconds=(
                max_duration_seconds
                if max_duration_seconds is not None
                else self.max_duration_seconds
            ),
        )

    def budget_text(self) -> str:
        """``"budget $5.00, 2h"`` (``""`` without a budget)."""
        parts = []
        if self.max_cost_usd is not None:
            parts.append(f"${self.max_cost_usd:,.2f}")
        if self.max_duration_seconds is not None:
            parts.append(duration_text(self.max_duration_seconds))
        return f"budget {', '.join(parts)}" if parts else ""

    def used(self, *, cost: float | None, elapsed: float) -> tuple[float, str]:
        """The largest share of the budget used, and how, in words.

        Args:
            cost: The run's cost so far in dollars (``None``: unknown, the cost limit is not
                judged).
            elapsed: Seconds since the run was submitted.

        Returns:
            ``(fraction, words)``: ``(0.0, "")`` without a budget; otherwise the larger of the
            cost's and the duration's share, with ``"$4.10 of $5.00"`` or ``"1h36m of 2h"``.
        """
        found: tuple[float, str] = (0.0, "")
        if self.max_cost_usd is not None and cost is not None:
            share = cost / self.max_cost_usd if self.max_cost_usd > 0 else math.inf
            found = (share, f"cost ${cost:,.2f} of ${self.max_cost_usd:,.2f}")
        if self.max_duration_seconds is not None:
            share = elapsed / self.max_duration_seconds
            if share > found[0] or not found[1]:
                found = (
                    share,
                    f"ran {duration_text(elapsed)} of {duration_text(self.max_duration_seconds)}",
                )
        return found

    def to_json(self, run_id: str) -> dict[str, JsonValue]:
        """The side file's content."""
        return {"run_id": run_id, **dataclasses.asdict(self)}


def duration_text(seconds: float) -> str:
    """``"2h"``, ``"1h30m"``, ``"45m"``, ``"30s"``: the coarsest units that say it."""
    total = round(max(0.0, seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    if secs or not text:
        text += f"{secs}s"
    return text


def parse_max_cost(value: object, *, where: str) -> float:
    """A budget in US dollars: a positive number, or text such as ``"5"``, ``"$12.50"``.

    Raises:
        ConfigError: If it is not a positive finite amount up to :data:`MAX_COST_USD`; the
            message starts with ``where``.
    """
    amount: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        amount = float(value)
    elif isinstance(value, str):
        try:
            amount = float(value.strip().removeprefix("$").replace(",", ""))
        except ValueError:
            amount = None
    if amount is None or not math.isfinite(amount) or not 0 < amount <= MAX_COST_USD:
        raise ConfigError(
            f"{where}: expected a positive amount of US dollars such as 5 or '12.50', got {value!r}"
        )
    return amount


def parse_max_duration(value: object, *, where: str) -> float:
    """A duration limit in seconds (``"2h"``, ``"90m"``, ``3600``).

    Raises:
        ConfigError: If it is not a positive duration; the message starts with ``where``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{where}: expected a duration such as '2h', got {value!r}")
    try:
        seconds = parse_duration(value)
    except ResourceError as error:
        raise ConfigError(f"{where}: {error}") from None
    return seconds


def read_guard(table: dict[str, Any], *, where: str) -> RunGuard:
    """The guard a job table declares (:data:`GUARD_KEYS`), checked.

    Args:
        table: The job's table, its overlay merged.
        where: The file and table, for messages.

    Raises:
        ConfigError: If a value is of the wrong type or out of range.
    """
    guard = RunGuard()
    if "max_cost" in table:
        guard = dataclasses.replace(
            guard, max_cost_usd=parse_max_cost(table["max_cost"], where=f"{where} max_cost")
        )
    if "max_duration" in table:
        guard = dataclasses.replace(
            guard,
            max_duration_seconds=parse_max_duration(
                table["max_duration"], where=f"{where} max_duration"
            ),
        )
    if "preemption_retries" in table:
        retries = table["preemption_retries"]
        if (
            isinstance(retries, bool)
            or not isinstance(retries, int)
            or not 0 <= retries <= MAX_PREEMPTION_RETRIES
        ):
            raise ConfigError(
                f"{where} preemption_retries: expected a whole number from 0 to"
                f" {MAX_PREEMPTION_RETRIES}, got {retries!r}"
            )
        guard = dataclasses.replace(guard, preemption_retries=retries)
    return guard
