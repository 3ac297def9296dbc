"""Run a run's job again with the same settings, after asking, and open the new run.

:func:`~x_tui.app.rerun_plans.rerun_plan` plans it through the service (so the job's extensions
come back) and puts back the staged spec and the frozen settings; the submit runs in a thread
worker owned by the app.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App
from textual.screen import Screen

from x_tui.app.app_context import describe_error, notify_from_thread, service_of
from x_tui.app.confirm_screen import confirm_then_work
from x_tui.app.messages import OpenRun
from x_tui.app.rerun_plans import rerun_plan
from x_tui.compute.store import RunHandle
from x_tui.widgets.safe_text import safe_text


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
