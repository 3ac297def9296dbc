"""The plan that runs a stored run's job again: same backend, same frozen settings, same spec.

Used by the TUI's re-run action (:mod:`x_tui.app.rerunning`) and by the watcher when it
resubmits a preempted run (:mod:`x_tui.app.watch_resubmits`). This module imports no Textual.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from x_tui.app.run_sources import RunReader
from x_tui.app.service import Service
from x_tui.compute.operations import RunPlan
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import UserError


def rerun_plan(service: Service, handle: RunHandle) -> tuple[RunPlan, str]:
    """The plan that runs ``handle``'s job again: same backend, same frozen settings, same spec,
    and the job's extensions (retries, dependencies, secrets by name).

    The job is planned again through the service from the project's pyproject.toml, on the run's
    backend, which brings back what a spec cannot hold (the extensions, the resource request,
    the cost bound); the spec the run was staged with replaces the planned one when this machine
    keeps it (a sweep's values, an accelerator chosen at submit), and the settings are the ones
    frozen into the handle. Secret values are not kept anywhere: submit reads them again from
    this shell.

    Args:
        service: The service.
        handle: The run to repeat.

    Returns:
        The plan and where it came from, in words.

    Raises:
        UserError: If neither the staged spec nor the job can be found, or the backend cannot
            be built.
    """
    spec, note = RunReader(service, handle).spec()
    project = Path(handle.project)
    settings = dict(handle.settings)
    staged = spec.resources.accelerator if spec is not None else None
    try:
        opened = service.open_project(project)
        planned = service.plan(opened, handle.job, backend=handle.backend)
        if staged is not None and planned.spec.resources.accelerator != staged:
            # Chosen at submit, not configured: ask for it again, as it was given.
            planned = service.plan(
                opened, handle.job, backend=handle.backend, accelerator=str(staged)
            )
    except UserError as error:
        if spec is None:
            raise
        plan = RunPlan(
            project=project, spec=spec, backend=handle.backend, settings=settings,
            provider_request=None,
        )  # fmt: skip
        return plan, f"the spec it was staged with, without the job's extensions ({error})"
    if spec is None:
        where = f"the job as {project}/pyproject.toml declares it now ({note})"
        return dataclasses.replace(planned, settings=settings), where
    request = planned.request
    if staged is None and request is not None and request.accelerator is not None:
        request = dataclasses.replace(request, accelerator=None)
    plan = dataclasses.replace(planned, spec=spec, settings=settings, request=request)
    return plan, "the spec it was staged with and the job's extensions"
