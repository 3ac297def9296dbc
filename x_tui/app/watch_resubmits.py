"""The watcher's answer to a preemption: submit the run's job again, linked to the original.

A run whose guard (:mod:`x_tui.compute.run_guards`) still has ``preemption_retries`` left is
submitted again by :class:`Resubmitter` once its backend reads it ``preempted``: the same plan a
re-run makes (:func:`~x_tui.app.rerun_plans.rerun_plan`: the staged spec, the frozen settings,
the job's extensions), with the original's budget, one retry fewer, and ``resubmitted_from``
naming the original. The new run's guard is written before it starts (by ``submit_run``), then
the original's guard gains ``resubmitted_as``; a run that already names its replacement is never
submitted again.

This module imports no Textual.
"""

from __future__ import annotations

import dataclasses

from x_tui.app.rerun_plans import rerun_plan
from x_tui.app.service import Service
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.store import RunHandle


class Resubmitter:
    """Submits a preempted run's job again while its guard has retries left."""

    def __init__(self, service: Service) -> None:
        """Plan and submit through ``service``; guards in its state directory."""
        self.service = service
        self.guards = GuardBook(service.state_dir)

    def __call__(self, handle: RunHandle) -> RunHandle | None:
        """Submit ``handle``'s job again if its guard says so.

        Returns:
            The new run, or ``None`` when the run has no retries left or was resubmitted already.

        Raises:
            UserError: If the job cannot be planned or the backend refuses it.
            OSError: If the original's guard cannot be written (the new run exists, linked back).
        """
        guard = self.guards.load(handle.run_id)
        if guard.preemption_retries <= 0 or guard.resubmitted_as is not None:
            return None
        plan, _origin = rerun_plan(self.service, handle)
        follower = dataclasses.replace(
            guard,
            preemption_retries=guard.preemption_retries - 1,
            hourly_usd=None,
            resubmitted_from=handle.run_id,
            resubmitted_as=None,
        )
        new = self.service.submit(dataclasses.replace(plan, guard=follower))
        self.guards.write(handle.run_id, dataclasses.replace(guard, resubmitted_as=new.run_id))
        return new
