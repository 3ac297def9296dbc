"""The watcher's budget check: notify at 80% of a run's budget, cancel it at 100%.

A :class:`BudgetCheck` is one of the watcher's checks (:data:`~x_tui.app.watcher.Check`): after
every answer for an unfinished run it reads the run's guard (:mod:`x_tui.compute.run_guards`:
``max_cost``, ``max_duration``) and its cost so far (the elapsed time since submission at the
hourly price its plan priced it at, else the backend's dated table:
:func:`~x_tui.compute.run_health.cost_so_far`). At :data:`~x_tui.compute.run_guards.WARN_FRACTION`
it finds ``over_budget`` with the key ``80%``; at the whole budget it records why the run ends
(:mod:`x_tui.compute.run_endings`), then cancels it, and finds ``over_budget`` with the key
``100%``. The reason is written before the cancel, so a run is never found stopped without it;
a cancel that fails is tried again at the next answer.

This module imports no Textual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from x_tui.app.run_sources import RunReader
from x_tui.app.service import Service
from x_tui.app.watch_events import EventKind
from x_tui.app.watcher import Finding
from x_tui.compute.backend import RunState
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.run_endings import EndingBook, RunEnding
from x_tui.compute.run_guards import WARN_FRACTION, RunGuard
from x_tui.compute.run_health import cost_so_far, hourly_price
from x_tui.compute.store import RunHandle

BUDGET_WATCHER = "watcher"
"""Who ended a run stopped over its budget (the ending's ``by``)."""


class BudgetCheck:
    """Holds each unfinished run to its guard's budget (a watcher check)."""

    def __init__(self, service: Service, *, clock: Callable[[], float] = time.time) -> None:
        """Check the runs of ``service``'s state directory.

        Args:
            service: Reads the runs' specs and cancels them.
            clock: The current epoch time.
        """
        self.service = service
        self.guards = GuardBook(service.state_dir)
        self.endings = EndingBook(service.state_dir)
        self._clock = clock
        self._known: dict[str, tuple[RunGuard, float | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, handle: RunHandle, state: RunState) -> list[Finding]:
        """What the run's budget says now: nothing, ``80%``, or ``100%`` (and it is cancelled).

        Raises:
            UserError: If the run over its budget could not be cancelled (tried again next time).
            OSError: If its reason could not be recorded (it is not cancelled then).
        """
        if state.is_final:
            return []
        guard, hourly = self._guard_of(handle)
        if not guard.has_budget:
            return []
        elapsed = self._clock() - handle.submitted_at.timestamp()
        cost = cost_so_far(elapsed, hourly)
        share, words = guard.used(cost=cost, elapsed=elapsed)
        if share >= 1.0:
            reason = f"over budget: {words}"
            self.endings.record(
                handle.run_id,
                RunEnding(
                    state=RunState.CANCELLED.value,
                    reason=reason,
                    by=BUDGET_WATCHER,
                    at=self._clock(),
                ),
            )
            self.service.cancel(handle)
            return [
                Finding(
                    kind=EventKind.OVER_BUDGET,
                    key="100%",
                    reason=f"{reason} ({guard.budget_text()}); cancelled",
                    cost=cost,
                )
            ]
        if share >= WARN_FRACTION:
            return [
                Finding(
                    kind=EventKind.OVER_BUDGET,
                    key="80%",
                    reason=f"{share:.0%} of its budget: {words}",
                    cost=cost,
                )
            ]
        return []

    def cost_of(self, handle: RunHandle) -> float | None:
        """The run's cost so far in dollars (for events), ``None`` when it has no price."""
        _guard, hourly = self._guard_of(handle)
        return cost_so_far(self._clock() - handle.submitted_at.timestamp(), hourly)

    def _guard_of(self, handle: RunHandle) -> tuple[RunGuard, float | None]:
        """The run's guard and hourly price, read once per run."""
        with self._lock:
            known = self._known.get(handle.run_id)
        if known is not None:
            return known
        guard = self.guards.load(handle.run_id)
        hourly = guard.hourly_usd
        if hourly is None:
            spec, _note = RunReader(self.service, handle).spec()
            hourly = hourly_price(handle.backend, spec.resources) if spec is not None else None
        with self._lock:
            self._known[handle.run_id] = (guard, hourly)
        return guard, hourly
