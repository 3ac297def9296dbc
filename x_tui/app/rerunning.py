"""Run a run's job again with the same settings, after asking, and open the new run.

:func:`rerun_plan` plans it through the service (so the job's extensions come back) and puts back
the staged spec and the frozen settings; the submit runs in a thread worker owned by the app.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.text import Text
from textual.app import App
from textual.screen import Screen

from x_tui.app.app_context import describe_error, notify_from_thread, service_of
from x_tui.app.confirm_screen import confirm_then_work
from x_tui.app.messages import OpenRun
from x_tui.app.run_sources import RunReader
from x_tui.app.service import Service
from x_tui.compute.operations import RunPlan
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import UserError
from x_tui.widgets.safe_text import safe_text


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


def ask_rerun(screen: Screen[object], handle: RunHandle) -> None:
    """Ask to run the job again with the run's settings, then submit it and open the new run."""
    app = screen.app
    question = Text("Run ")
    question.append_text(safe_text(handle.job, "bold"))
    question.append_text(safe_text(f" again on {handle.backend}, with the settings of "))
    question.append_text(safe_text(handle.run_id, "bold"))
    question.append(
        "?\nThe staged spec is reused when this machine keeps it; the job's retries and"
        " dependencies come from pyproject.toml, its secrets from this shell, as now.",
        style="dim",
    )

    confirm_then_work(
        app,
        question,
        confirm_label="Re-run",
        work=lambda: _rerun(app, handle),
        name=f"re-run {handle.run_id}",
        danger=False,
    )


def _rerun(app: App[object], handle: RunHandle) -> None:
    service = service_of(app)
    try:
        plan, origin = rerun_plan(service, handle)
        new = service.submit(plan)
    except Exception as error:  # nothing was submitted, or the backend said why not
        notify_from_thread(app, f"Re-run failed: {describe_error(error)}", severity="error")
        return
    notify_from_thread(app, f"Submitted {new.run_id} from {origin}")
    app.call_from_thread(open_run, app, new)


def open_run(app: App[object], handle: RunHandle) -> None:
    """Push the run screen of ``handle``, following its combined log (the app does, on
    :class:`~x_tui.app.messages.OpenRun`: the run screen's module imports this one)."""
    app.post_message(OpenRun(handle))
