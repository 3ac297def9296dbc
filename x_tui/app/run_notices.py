"""Run events in an open TUI: a toast and a terminal notification, and the user's hook and URLs.

When a run this session saw unfinished ends in a way the settings' ``[notify]`` table asks to
hear of, the app shows a toast and, with ``terminal`` on, writes a terminal notification: OSC 9
where the terminal is known to show it (iTerm2, WezTerm, Ghostty, Windows Terminal), OSC 777 for
VTE terminals, foot and rxvt, a BEL anywhere else (and inside tmux or screen, which would swallow
the others). The hook and the Apprise URLs are the watcher's job; with no watcher running the
app announces there itself, through the same delivered-events record, so an event is announced
once whoever sees it first.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from textual.app import App

from x_tui.app.notify import DeliveredEvents, deliver_once, notification_line, wanted
from x_tui.app.settings import Settings
from x_tui.app.watch_events import EventKind
from x_tui.app.watch_lock import running_pid
from x_tui.app.watcher import event_for
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle

_SEVERITY = {
    EventKind.FAILED: "error",
    EventKind.PREEMPTED: "warning",
    EventKind.STALLED: "warning",
    EventKind.OVER_BUDGET: "warning",
}


def terminal_sequence(line: str, environment: Mapping[str, str] | None = None) -> str:
    """The escape sequence that shows ``line`` (already one sanitised line) as a notification.

    Args:
        line: The notification.
        environment: The terminal's environment (``os.environ`` when ``None``).

    Returns:
        An OSC 9 or OSC 777 sequence, or a BEL where neither is known to work.
    """
    env = os.environ if environment is None else environment
    if env.get("TMUX") or env.get("STY"):
        return "\a"
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    if program in ("iTerm.app", "WezTerm", "ghostty") or env.get("WT_SESSION"):
        return f"\x1b]9;{line}\x1b\\"
    if env.get("VTE_VERSION") or term.startswith(("foot", "rxvt")):
        return f"\x1b]777;notify;x-tui;{line}\x1b\\"
    return "\a"


def announce_in_app(
    app: App[Any],
    settings: Settings,
    handle: RunHandle,
    state: RunState,
    previous: RunState | None,
) -> None:
    """Show (and, with no watcher running, announce) ``handle`` entering ``state``.

    Called on the app's thread for each state change the monitor reports.
    """
    if previous is None or previous is state or not state.is_final:
        return  # only an end this session saw happen
    notify = settings.notify
    event = event_for(
        handle,
        EventKind(state.value),
        at=time.time(),
        previous=previous.value,
        reason=f"was {previous.value}",
    )
    if not wanted(notify, event):
        return
    line = notification_line(event)
    if notify.terminal:
        app.notify(
            line,
            title="Run ended",
            severity=_SEVERITY.get(event.kind, "information"),  # type: ignore[arg-type]
            markup=False,
        )
        driver = app._driver  # Textual writes its own BEL this way (App.bell)
        if not app.is_headless and driver is not None:
            driver.write(terminal_sequence(line))
    if not (notify.command or notify.urls):
        return
    state_dir = getattr(getattr(app, "service", None), "state_dir", None)
    if state_dir is None:
        return

    def deliver() -> None:
        if running_pid(state_dir) is not None:
            return  # the watcher announces (or has)
        # A record that cannot be written announces nothing (the watcher may still).
        with contextlib.suppress(OSError):
            deliver_once(event, notify, DeliveredEvents(state_dir))

    threading.Thread(target=deliver, name="x-tui announce", daemon=True).start()
