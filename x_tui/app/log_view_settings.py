"""Every log view the app shows is made here, so each one follows the user's profile.

Under the low-bandwidth profile (``app.settings.low_bandwidth``) a log view batches appended lines
every 500 ms instead of every 50 ms (``LogView.low_bandwidth``). A view wraps long lines as the
user last chose with ``w`` (``app.settings.wrap``), else when the terminal is narrow.
"""

from __future__ import annotations

from textual.app import App

from x_tui.app.app_context import settings_of
from x_tui.app.settings import wraps_logs
from x_tui.widgets.log_view import LogView


def new_log_view(app: App[object], *, follow: bool, id: str | None = None) -> LogView:
    """An empty log view for ``app`` (open a file with ``LogView.open``).

    Args:
        app: The app, whose settings say whether the low-bandwidth profile is on.
        follow: Whether the view starts following the end of its file.
        id: The widget's id.

    Returns:
        The view.
    """
    settings = settings_of(app)
    wrap = wraps_logs(settings, app.size.width)
    return LogView(None, follow=follow, low_bandwidth=settings.low_bandwidth, wrap=wrap, id=id)
