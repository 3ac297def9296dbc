"""The read-only mode of the web view: the app shows everything and changes nothing.

``x-tui serve`` starts each browser session's app with ``X_TUI_READ_ONLY=1`` unless it was given
``--allow-actions``; then submit and every run action that changes or starts something (all but
those :data:`x_tui.app.actions.RUN_ACTIONS` marks ``read_only``) are refused with one toast saying
how to allow them. This module imports no Textual at import time.
"""

from __future__ import annotations

import os
from typing import Any

READ_ONLY_ENV = "X_TUI_READ_ONLY"
"""``1`` makes the app read-only."""

REFUSAL = "read-only web view: actions are off (start it with x-tui serve --allow-actions)"


def is_read_only() -> bool:
    """Whether this process's app is read-only (``X_TUI_READ_ONLY=1``)."""
    return os.environ.get(READ_ONLY_ENV, "").strip() == "1"


def refused(app: Any) -> bool:
    """In read-only mode, say so in a toast and return ``True``; else ``False``."""
    if not is_read_only():
        return False
    app.notify(REFUSAL, severity="warning", markup=False)
    return True
