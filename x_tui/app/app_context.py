"""What a screen or a worker reaches through the app: its service and run monitor, toasts of
untrusted text, and an error as the user should read it.

The toasts strip control sequences and are never read as markup; :func:`notify_from_thread` is
the one a thread worker calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from textual.app import App

from x_tui.app.service import Service
from x_tui.compute.sanitize import plain, revealed
from x_tui.compute.worker.errors import UserError

if TYPE_CHECKING:
    from x_tui.app.monitor import RunMonitor

Severity = Literal["information", "warning", "error"]


def service_of(app: App[object]) -> Service:
    """The app's service (``app.service``).

    Raises:
        RuntimeError: If the app has none; every x-tui app has one.
    """
    service = getattr(app, "service", None)
    if not isinstance(service, Service):
        raise RuntimeError(f"{type(app).__name__} has no x-tui service")
    return service


def monitor_of(app: App[object]) -> RunMonitor | None:
    """The app's run monitor (``app.monitor``), when it has one."""
    from x_tui.app.monitor import RunMonitor

    monitor = getattr(app, "monitor", None)
    return monitor if isinstance(monitor, RunMonitor) else None


def notify(app: App[object], message: str, *, severity: Severity = "information") -> None:
    """A toast of untrusted text: control sequences removed, invisible characters shown as
    escapes, never read as markup."""
    app.notify(
        plain(revealed(message)),
        severity=severity,
        markup=False,
        timeout=8 if severity == "error" else 4,
    )


def notify_from_thread(
    app: App[object], message: str, *, severity: Severity = "information"
) -> None:
    """:func:`notify` from a worker thread."""
    app.call_from_thread(notify, app, message, severity=severity)


def describe_error(error: BaseException) -> str:
    """A user error's message as it is; anything else with its type, since it is unexpected."""
    if isinstance(error, UserError):
        return str(error)
    return f"{type(error).__name__}: {error}"
