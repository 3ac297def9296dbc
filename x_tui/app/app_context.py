"""What a screen or a worker reaches through the app, typed: its service, run monitor, settings
and the monitor's events; toasts of untrusted text, and an error as the user should read it.

:class:`AppContext` declares what x-tui's app holds (``XTuiApp`` derives from it and sets each),
so a screen reaches it through :func:`context_of` with its type, never by looking a name up. The
toasts strip control sequences and are never read as markup; :func:`notify_from_thread` is the
one a thread worker calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from textual.app import App
from textual.signal import Signal

from x_tui.app.messages import MonitorEvent
from x_tui.app.monitor import RunMonitor
from x_tui.app.service import Service
from x_tui.app.settings import Settings
from x_tui.compute.sanitize import plain, revealed
from x_tui.compute.worker.errors import UserError

Severity = Literal["information", "warning", "error"]


class AppContext(App[int]):
    """The x-tui app as its screens and workers reach it (``x_tui.app.app.XTuiApp`` sets each).

    Attributes:
        project: The project root the app was started in; ``None`` outside a project.
        settings: The user's settings.
        service: Every backend call, with its deadline.
        monitor: The store watcher and state poller.
        monitor_events: The monitor's events, published on the event loop as they arrive
            (:data:`~x_tui.app.messages.MonitorEvent`); a screen subscribes on mount.
    """

    project: Path | None
    settings: Settings
    service: Service
    monitor: RunMonitor
    monitor_events: Signal[MonitorEvent]


def context_of(app: App[Any]) -> AppContext | None:
    """``app`` as x-tui's app; ``None`` for another app (a widget's test app)."""
    return app if isinstance(app, AppContext) else None


def service_of(app: App[Any]) -> Service:
    """The app's service.

    Raises:
        RuntimeError: If ``app`` is not x-tui's app; every x-tui app has a service.
    """
    context = context_of(app)
    if context is None:
        raise RuntimeError(f"{type(app).__name__} has no x-tui service")
    return context.service


def monitor_of(app: App[Any]) -> RunMonitor | None:
    """The app's run monitor; ``None`` for an app that is not x-tui's."""
    context = context_of(app)
    return context.monitor if context is not None else None


def settings_of(app: App[Any]) -> Settings:
    """The user's settings in ``app``; the defaults for an app that is not x-tui's."""
    context = context_of(app)
    return context.settings if context is not None else Settings()


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
