"""Delete a finished run (its record and its files on this machine), after asking.

A run that has not ended (or whose state is not known yet) is refused with a toast, before any
question; the deletion runs in a thread worker owned by the app, through the service, which asks
the backend once more and refuses a run still going. The monitor then reads the store again, so
the row goes.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App
from textual.screen import Screen

from x_tui.app.app_context import describe_error, monitor_of, notify, notify_from_thread, service_of
from x_tui.app.confirm_screen import confirm_then_work
from x_tui.compute.store import RunHandle
from x_tui.widgets.safe_text import safe_text


def ask_delete(screen: Screen[object], handle: RunHandle) -> None:
    """Ask to delete the run, then delete it in a worker; a run still going is refused."""
    app = screen.app
    monitor = monitor_of(app)
    state = monitor.state_of(handle.run_id) if monitor is not None else None
    if state is None or not state.is_final:
        where = state.value if state is not None else "not known to have ended"
        notify(
            app,
            f"{handle.run_id} is {where}: only a run that has ended is deleted (c cancels it)",
            severity="warning",
        )
        return
    question = Text("Delete run ")
    question.append_text(safe_text(handle.run_id, "bold"))
    question.append_text(safe_text(f" ({state.value})?"))
    question.append(
        "\nIts record and its files on this machine are removed; fetched copies stay.",
        style="dim",
    )

    confirm_then_work(
        app,
        question,
        confirm_label="Delete run",
        work=lambda: _delete(app, handle),
        name=f"delete {handle.run_id}",
    )


def _delete(app: App[object], handle: RunHandle) -> None:
    try:
        service_of(app).delete(handle)
    except Exception as error:  # refused or failed: said in a toast, never raised into the UI
        notify_from_thread(app, f"Not deleted: {describe_error(error)}", severity="error")
        return
    notify_from_thread(app, f"Deleted {handle.run_id}")
    monitor = monitor_of(app)
    if monitor is not None:
        monitor.rescan()
