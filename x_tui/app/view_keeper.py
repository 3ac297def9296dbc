"""Keeping the user's place across sessions, and saying what happened while they were away.

Twice a second the app's view (the screen, the run shown, its tab, the combined log's top line,
filter and search) is compared with the one last written; a change is written to
``<state>/x-tui/view.json`` (:mod:`x_tui.app.view_state`) at once, and an unchanged view every
:data:`SEEN_EVERY` seconds, so the file always says when the user last looked. A session killed
without warning (SIGHUP when the SSH link drops) has written where it was at most half a second
before.

On start the view last kept is reopened once its run is in the store, and one "while you were
away" line lists what happened since the user last looked: from the watcher's events file, or,
when no watcher wrote one, the runs the store's kept final states say ended since.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.app import App
from textual.css.query import NoMatches
from textual.widgets import TabbedContent

from x_tui.app.app_context import service_of
from x_tui.app.final_states import read_final_states
from x_tui.app.run_screen import RunScreen
from x_tui.app.view_state import ViewState, read_view, write_view
from x_tui.app.watch_events import EventKind, EventLog
from x_tui.compute.sanitize import plain
from x_tui.compute.store import StoredRuns
from x_tui.widgets.log_view import LogPlace, LogView

TICK_SECONDS = 0.5
"""How often the view is compared with the one last written."""

SEEN_EVERY = 30.0
"""How often an unchanged view is written again, to say the user is still looking."""

AWAY_ITEMS = 6
"""How many events the "while you were away" line names (then "and N more")."""


def capture(app: App[Any], *, now: float) -> ViewState:
    """The app's view now."""
    screen = app.screen
    if isinstance(screen, RunScreen):
        tab: str | None = None
        place = LogPlace()
        try:
            tab = screen.query_one("#run-tabs", TabbedContent).active or None
            place = screen.query_one("#combined-log", LogView).place()
        except NoMatches:
            pass
        return ViewState(
            screen="run",
            run_id=screen.handle.run_id,
            tab=tab,
            log_top=place.top_line,
            log_filter=place.filter,
            log_search=place.search,
            seen_at=now,
        )
    selected = getattr(screen, "selected_run", None)
    handle = selected() if callable(selected) else None
    return ViewState(screen="main", run_id=getattr(handle, "run_id", None), seen_at=now)


class ViewKeeper:
    """Writes the app's view as it changes and reopens the last one."""

    def __init__(self, app: App[Any]) -> None:
        """Keep ``app``'s view in its service's state directory."""
        self.app = app
        self.state_dir = service_of(app).state_dir
        self.saved = read_view(self.state_dir)
        """The view the last session left (``None`` when there is none)."""
        self.away_line: str | None = None
        """The "while you were away" line shown at start, if there was anything to say."""
        self._restoring = self.saved if self.saved is not None else None
        self._last: ViewState | None = None
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="x-tui view")

    def start(self) -> None:
        """Say what happened while the user was away, then keep the view from now on."""
        if self.saved is not None and self.saved.seen_at > 0:
            self.away_line = away_line(self.state_dir, self.saved.seen_at)
            if self.away_line is not None:
                self.app.notify(
                    self.away_line, title="While you were away", timeout=20, markup=False
                )
        self.app.set_interval(TICK_SECONDS, self._tick)

    def stop(self) -> None:
        """Write the view last seen once more, now (waited for); the screens are gone by now."""
        if self._restoring is None and self._last is not None:
            self._save(replace(self._last, seen_at=time.time()))
        self._writer.shutdown(wait=True)

    def runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
        """Reopen the last session's run once the store holds it (or give up once read)."""
        view = self._restoring
        if view is None:
            return
        if view.screen != "run" or view.run_id is None:
            self._restoring = None
            return
        handle = next((h for h in stored.handles if h.run_id == view.run_id), None)
        if handle is None:
            if complete:
                self._restoring = None
            return
        self._restoring = None
        place = LogPlace(top_line=view.log_top, filter=view.log_filter, search=view.log_search)
        self.app.push_screen(RunScreen(handle, tab=view.tab, log_place=place))

    def _tick(self) -> None:
        if self._restoring is not None:
            return  # the last view is not reopened yet: do not write over it
        now = time.time()
        view = capture(self.app, now=now)
        last = self._last
        if last is not None and last.same_place(view) and now - last.seen_at < SEEN_EVERY:
            return
        self._save(view)

    def _save(self, view: ViewState) -> None:
        self._last = view
        with contextlib.suppress(RuntimeError):  # shut down: the app is ending
            self._writer.submit(_write_quietly, self.state_dir, view)


def _write_quietly(state_dir: Path, view: ViewState) -> None:
    # A state directory that cannot be written loses the place, nothing else.
    with contextlib.suppress(OSError):
        write_view(state_dir, view)


def away_line(state_dir: Path, since: float) -> str | None:
    """What happened to runs after ``since``, in one line; ``None`` when nothing did."""
    log = EventLog(state_dir)
    items: list[str] = []
    if log.path.exists():
        for event in log.read(since=since):
            if event.kind in (EventKind.PENDING, EventKind.RUNNING):
                continue
            items.append(f"{event.run_id} {event.kind.value.replace('_', ' ')}")
    else:
        finals = read_final_states(state_dir / "x-tui" / "final-states.json") or {}
        ended = sorted(
            (at, run_id, state.value)
            for run_id, (state, at) in finals.items()
            if at is not None and at > since
        )
        items = [f"{run_id} {state}" for _, run_id, state in ended]
    if not items:
        return None
    shown = items[-AWAY_ITEMS:]
    more = len(items) - len(shown)
    line = ", ".join(shown) + (f" and {more} more" if more else "")
    return " ".join(plain(line).split())
