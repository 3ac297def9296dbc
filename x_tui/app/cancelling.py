"""Cancel a run, or every unfinished run of a sweep, after asking.

The question is a :class:`~x_tui.app.confirm_screen.ConfirmScreen`; the cancel runs in a thread
worker owned by the app, through the service (one backend call per run, each with its deadline),
says how it went in a toast and asks the monitor to poll the runs again soon.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App
from textual.screen import Screen

from x_tui.app.app_context import describe_error, monitor_of, notify, notify_from_thread, service_of
from x_tui.app.confirm_screen import confirm_then_work
from x_tui.compute.store import RunHandle
from x_tui.compute.sweeps import Sweep, parameters_text
from x_tui.widgets.safe_text import safe_text


def ask_cancel(screen: Screen[object], handle: RunHandle) -> None:
    """Ask to cancel the run, then cancel it in a worker; a run that already ended is left."""
    app = screen.app
    monitor = monitor_of(app)
    state = monitor.state_of(handle.run_id) if monitor is not None else None
    if state is not None and state.is_final:
        notify(app, f"{handle.run_id} already {state.value}; nothing to cancel")
        return
    question = Text("Cancel run ")
    question.append_text(safe_text(handle.run_id, "bold"))
    question.append_text(safe_text(f" on {handle.backend}?"))
    question.append("\nIts tasks are stopped; outputs written so far are kept.", style="dim")

    confirm_then_work(
        app,
        question,
        confirm_label="Cancel run",
        work=lambda: _cancel(app, handle),
        name=f"cancel {handle.run_id}",
    )


def _cancel(app: App[object], handle: RunHandle) -> None:
    notify_from_thread(app, f"Cancelling {handle.run_id}…")
    try:
        service_of(app).cancel(handle)
    except Exception as error:  # a provider's failure is shown, never raised into the UI
        notify_from_thread(app, f"Cancel failed: {describe_error(error)}", severity="error")
        return
    notify_from_thread(app, f"Cancelled {handle.run_id}")
    monitor = monitor_of(app)
    if monitor is not None:
        monitor.poll_soon(handle.run_id)


def ask_cancel_sweep(screen: Screen[object], sweep: Sweep, handles: tuple[RunHandle, ...]) -> None:
    """Ask to cancel every unfinished run of a sweep, then cancel them one by one in a worker."""
    app = screen.app
    monitor = monitor_of(app)

    def unfinished(handle: RunHandle) -> bool:
        state = monitor.state_of(handle.run_id) if monitor is not None else None
        return state is None or not state.is_final

    going = tuple(handle for handle in handles if unfinished(handle))
    if not going:
        notify(app, f"Every run of {sweep.sweep_id} has ended; nothing to cancel")
        return
    question = Text(f"Cancel {len(going)} run{'' if len(going) == 1 else 's'} of sweep ")
    question.append_text(safe_text(sweep.sweep_id, "bold"))
    question.append_text(safe_text(f" ({sweep.job} on {sweep.backend})?"))
    for handle in going:
        values = sweep.parameters_of(handle.run_id) or {}
        question.append("\n  ")
        question.append_text(safe_text(f"{handle.run_id}  {parameters_text(values)}"))
    question.append("\nTheir tasks are stopped; outputs written so far are kept.", style="dim")

    confirm_then_work(
        app,
        question,
        confirm_label="Cancel runs",
        work=lambda: _cancel_sweep(app, sweep, going),
        name=f"cancel {sweep.sweep_id}",
    )


def _cancel_sweep(app: App[object], sweep: Sweep, handles: tuple[RunHandle, ...]) -> None:
    notify_from_thread(app, f"Cancelling {len(handles)} runs of {sweep.sweep_id}…")
    service = service_of(app)
    monitor = monitor_of(app)
    failed: list[str] = []
    for handle in handles:
        try:
            service.cancel(handle)
        except Exception as error:  # each run is tried; the failures are reported together
            failed.append(f"{handle.run_id}: {describe_error(error)}")
        if monitor is not None:
            monitor.poll_soon(handle.run_id)
    if failed:
        notify_from_thread(
            app,
            f"Cancelled {len(handles) - len(failed)} of {len(handles)} runs of {sweep.sweep_id};"
            f" failed: {'; '.join(failed)}",
            severity="error",
        )
        return
    notify_from_thread(app, f"Cancelled {len(handles)} runs of {sweep.sweep_id}")
