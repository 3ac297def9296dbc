"""Keeping the user's place across sessions, and saying what happened while they were away.

Twice a second, while the view may be changing, it is compared with the one last written: the main
screen's (its pane in front, runs filter and highlighted run) and, when a run screen is open, that
screen's (the run, its tab, the combined log's top line, filter and search), whatever modal screen
is in front of them. A change is written to ``<state>/x-tui/view.json``
(:mod:`x_tui.app.view_state`) at once, and an unchanged view every :data:`SEEN_EVERY` seconds, so
the file always says when the user last looked. A session killed without warning (SIGHUP when the
SSH link drops) has written where it was at most half a second before.
Nothing is written until the last view is reopened, so a session that ends early leaves the place
it was given.

The view may be changing while the last one is being reopened, while any screen is above the main
screen (a followed log moves by itself), and for :data:`SETTLE_SECONDS` after a key, a click or a
scroll (the app calls :meth:`ViewKeeper.view_may_change`), a screen pushed or popped, or a monitor
event (a run listed, ended or re-sorted can move the highlight). The main screen left alone changes
by none of these, so an idle app compares nothing: only the :data:`SEEN_EVERY` write wakes it.

On start the main screen's filter and pane come back at once, its highlighted run and the run
screen once the store holds the run. Once every run in the store has a state (or
:data:`AWAY_WAIT` seconds have passed), one "while you were away" line lists what happened since
the user last looked, newest first and numbered: the watcher's events, the runs another session
saw end, and the runs this session finds ended that were unfinished when the user left (so it
says something with no watcher running too). For :data:`AWAY_SECONDS` the number keys open those
runs (``1`` the first named).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.css.query import NoMatches
from textual.timer import Timer

from x_tui.app.app_context import context_of, monitor_of, service_of
from x_tui.app.final_states import FinalState, read_final_states
from x_tui.app.main_screen import MainScreen
from x_tui.app.view_state import AWAY_ITEMS, ViewState, read_view, write_view
from x_tui.app.watch_events import EventKind, EventLog
from x_tui.compute.sanitize import plain
from x_tui.compute.slices import slices
from x_tui.compute.store import RUN_ID_PATTERN, StoredRuns

if TYPE_CHECKING:
    from x_tui.app.monitor import RunMonitor

TICK_SECONDS = 0.5
"""How often the view is compared with the one last written while it may be changing."""

SETTLE_SECONDS = 5.0
"""How long the view is compared after something that may change it (a key, a screen, a monitor
event): what a key starts (a worker, a refill of the runs table) may land a little later."""

SEEN_EVERY = 30.0
"""How often an unchanged view is written again, to say the user is still looking."""

AWAY_WAIT = 5.0
"""How long the away line waits at most for every run's first state."""

AWAY_SECONDS = 60.0
"""How long the away line is shown, and its number keys open its runs."""

SELECT_TICKS = 4
"""Ticks after the store's first full listing to find the highlighted run's row before giving up."""


@dataclass(frozen=True, slots=True)
class AwayItem:
    """One thing that happened while the user was away.

    Attributes:
        run_id: The run (what its key opens).
        what: What happened to it (``"failed"``, ``"over budget"``...).
        at: When (epoch seconds), for the order.
    """

    run_id: str
    what: str
    at: float


def _main_screen(app: App[Any]) -> MainScreen | None:
    """The app's main screen (the bottom of its stack), if it has one yet."""
    return next((s for s in app.screen_stack if isinstance(s, MainScreen)), None)


def capture(app: App[Any], *, now: float) -> ViewState | None:
    """The app's view now: the main screen's, and the front-most run screen's if one is open.

    Returns:
        The view; ``None`` while a screen it reads is not mounted yet, or no more (the app is
        ending): a view read from half a screen would lose the place.
    """
    main = _main_screen(app)
    if main is None:
        return None
    try:
        pane, selected, runs_filter = main.runs_place()
    except NoMatches:
        return None
    view = ViewState(
        screen="main", pane=pane, selected_run=selected, runs_filter=runs_filter, seen_at=now
    )
    if len(app.screen_stack) < 2:
        return view  # no run screen above the main screen (nor its modules loaded yet)
    # The run screen and the log view load with the first run opened, not at start-up.
    from textual.widgets import TabbedContent

    from x_tui.app.run_screen import RunScreen
    from x_tui.widgets.log_view import LogView

    run_screen = next((s for s in reversed(app.screen_stack) if isinstance(s, RunScreen)), None)
    if run_screen is None:
        return view
    try:
        tab = run_screen.query_one("#run-tabs", TabbedContent).active or None
        place = run_screen.query_one("#combined-log", LogView).place()
    except NoMatches:
        return None
    return replace(
        view,
        screen="run",
        run_id=run_screen.handle.run_id,
        tab=tab,
        log_top=place.top_line,
        log_filter=place.filter,
        log_search=place.search,
    )


class ViewKeeper:
    """Writes the app's view as it changes, reopens the last one, and says what happened since."""

    def __init__(self, app: App[Any]) -> None:
        """Keep ``app``'s view in its service's state directory."""
        self.app = app
        self.state_dir = service_of(app).state_dir
        self.saved = read_view(self.state_dir)
        """The view the last session left (``None`` when there is none)."""
        self.away: tuple[AwayItem, ...] = ()
        """What the "while you were away" line names, in its keys' order."""
        self.away_line: str | None = None
        """The "while you were away" line, once shown (``None`` while there is nothing to say)."""
        saved = self.saved
        self._open_run = saved if saved is not None and saved.screen == "run" else None
        self._select = saved.selected_run if saved is not None else None
        self._filter_pending = saved is not None
        self._listed = False
        self._ticks_listed = 0
        self._away_due: float | None = (
            time.monotonic() + AWAY_WAIT if saved is not None and saved.seen_at > 0 else None
        )
        self._away_until = 0.0
        self._away_asked = False
        """Whether the away line is being worked out (in the writer's thread)."""
        self._last: ViewState | None = None
        self._settle_until = time.monotonic() + SETTLE_SECONDS
        self._timer: Timer | None = None
        self._timer_due = 0.0
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="x-tui view")

    @property
    def restoring(self) -> bool:
        """Whether part of the last view is still to be reopened (nothing is written until then)."""
        return self._filter_pending or self._open_run is not None or self._select is not None

    def start(self) -> None:
        """Reopen the last view and say what happened while away as the store is read; keep the
        view from now on (the app is running: screens and monitor events are subscribed to)."""
        self.app.screen_change_signal.subscribe(
            self.app, lambda _screen: self.view_may_change(), immediate=True
        )
        context = context_of(self.app)
        if context is not None:
            context.monitor_events.subscribe(
                self.app, lambda _event: self.view_may_change(), immediate=True
            )
        self._wake_in(TICK_SECONDS)

    def view_may_change(self) -> None:
        """Compare the view twice a second for a while: something that may change it happened
        (the app calls this for every input event)."""
        self._settle_until = time.monotonic() + SETTLE_SECONDS
        self._wake_in(TICK_SECONDS)

    def stop(self) -> None:
        """Write the view last seen once more, now (waited for); the screens are gone by now."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if not self.restoring and self._last is not None:
            self._save(replace(self._last, seen_at=time.time()))
        self._writer.shutdown(wait=True)

    def runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
        """Reopen the last session's run once the store holds it (or give up once read)."""
        self._listed = self._listed or complete
        view = self._open_run
        if view is None or view.run_id is None:
            self._open_run = None
            return
        handle = next((h for h in stored.handles if h.run_id == view.run_id), None)
        if handle is None:
            if complete:
                self._open_run = None
            return
        self._open_run = None
        from x_tui.app.run_screen import RunScreen
        from x_tui.widgets.log_view import LogPlace

        place = LogPlace(top_line=view.log_top, filter=view.log_filter, search=view.log_search)
        self.app.push_screen(RunScreen(handle, tab=view.tab, log_place=place))

    def away_keys_live(self) -> bool:
        """Whether the number keys open the away line's runs now."""
        return bool(self.away) and time.monotonic() < self._away_until

    def open_away(self, number: int) -> None:
        """Open the run the away line numbers ``number`` (from 1)."""
        if not 1 <= number <= len(self.away):
            return
        run_id = self.away[number - 1].run_id
        monitor = monitor_of(self.app)
        handles = monitor.stored.handles if monitor is not None else ()
        handle = next((h for h in handles if h.run_id == run_id), None)
        if handle is None:
            self.app.notify(
                plain(f"{run_id} is not in the store any more"), severity="warning", markup=False
            )
            return
        from x_tui.app.run_screen import RunScreen

        self.app.push_screen(RunScreen(handle))

    def _wake_in(self, seconds: float) -> None:
        """Compare the view in ``seconds``, unless a comparison is due sooner."""
        due = time.monotonic() + seconds
        if self._timer is not None:
            if self._timer_due <= due:
                return
            self._timer.stop()
        self._timer_due = due
        self._timer = self.app.set_timer(seconds, self._tick, name="view keeper")

    def _tick(self) -> None:
        self._timer = None
        self._compare()
        self._wake_in(self._next_wait())

    def _next_wait(self) -> float:
        """Seconds until the view must be compared again: soon while it may be changing, else
        when the unchanged view is due to be written again."""
        changing = (
            self.restoring
            or self._away_due is not None
            or len(self.app.screen_stack) > 1
            or time.monotonic() < self._settle_until
        )
        last = self._last
        if changing or last is None:
            return TICK_SECONDS
        return max(TICK_SECONDS, last.seen_at + SEEN_EVERY - time.time())

    def _compare(self) -> None:
        self._restore_main()
        self._say_away()
        if self.restoring:
            return  # the last view is not reopened yet: do not write over it
        now = time.time()
        view = capture(self.app, now=now)
        if view is None:
            return
        last = self._last
        if last is not None and last.same_place(view) and now - last.seen_at < SEEN_EVERY:
            return
        self._save(view)

    def _restore_main(self) -> None:
        saved = self.saved
        main = _main_screen(self.app)
        if saved is None or main is None or not main.is_mounted:
            return
        if self._filter_pending:
            self._filter_pending = False
            main.show_runs_filter(saved.runs_filter, pane=saved.pane)
        if self._select is None:
            return
        if main.highlight_run(self._select):
            self._select = None
        elif self._listed:
            self._ticks_listed += 1
            if self._ticks_listed > SELECT_TICKS:
                self._select = None  # gone from the store, or filtered out

    def _say_away(self) -> None:
        due = self._away_due
        saved = self.saved
        if due is None or saved is None or self._away_asked:
            return
        monitor = monitor_of(self.app)
        if time.monotonic() < due and not (self._listed and monitor is not None):
            return
        main = _main_screen(self.app)
        if time.monotonic() < due and main is not None and main.runs.taking_listing:
            return  # once the runs table has the store: the two would share the interpreter
        # The runs known to have ended when the user left (read by the monitor's watcher, off
        # this thread): one this session finds ended that is not among them ended while away.
        ended_before = monitor.kept_at_start if monitor is not None else frozenset()
        if ended_before is None:
            return  # looked at first: the copies below are of every run the store holds
        # Worked out in the writer's thread: the copies are of every run the store holds, and
        # on this thread they held keys and frames some 0.2 s with 100,000 runs.
        self._away_asked = True
        loop = asyncio.get_running_loop()
        with contextlib.suppress(RuntimeError):  # shut down: the app is ending
            self._writer.submit(self._find_away, monitor, saved.seen_at, due, ended_before, loop)

    def _find_away(
        self,
        monitor: RunMonitor | None,
        seen_at: float,
        due: float,
        ended_before: frozenset[str],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """What happened while the user was away (in the writer's thread); shown on the loop."""
        states, ends = monitor.known_states() if monitor is not None else ({}, {})
        handles = monitor.stored.handles if monitor is not None else ()
        # Every run is gone over in C (its id taken, set operations), not in a loop here, and a
        # slice at a time (x_tui.compute.slices): this thread shares the interpreter with the
        # event loop as the store is taken into the table.
        ids: list[str] = []
        for taken in slices(handles):
            ids += map(attrgetter("run_id"), taken)
        if time.monotonic() < due and not all(states.keys() >= set(part) for part in slices(ids)):
            self._away_asked = False  # asked again at the next comparison
            return
        ended_now: list[str] = []  # runs with a state that had not ended when the user left
        for part in slices(ids):
            ended_now += set(part).intersection(states).difference(ended_before)
        found: list[AwayItem] = []
        now = time.time()
        for run_id in sorted(ended_now):
            state = states[run_id]
            ended = ends.get(run_id)
            if state.is_final and (ended is None or ended > seen_at):
                found.append(AwayItem(run_id, state.value, ended or now))
        # The kept final states as the monitor holds them (read at start, and learnt since) of
        # runs that ended after the user left: not a second read of a cache of 100,000 runs.
        kept = (
            {
                run_id: (states[run_id], at)
                for run_id, at in ends.items()
                if at is not None and at > seen_at and run_id in states
            }
            if monitor is not None
            else None
        )
        items = away_items(self.state_dir, seen_at, found=found, kept=kept)
        with contextlib.suppress(RuntimeError):  # the event loop is closed: the app ended
            loop.call_soon_threadsafe(self._show_away, items)

    def _show_away(self, items: list[AwayItem]) -> None:
        self._away_due = None
        self.away = tuple(items[:AWAY_ITEMS])
        line = away_line(items)
        if line is None:
            return
        self.away_line = line
        self._away_until = time.monotonic() + AWAY_SECONDS
        self.app.notify(line, title="While you were away", timeout=AWAY_SECONDS, markup=False)

    def _save(self, view: ViewState) -> None:
        self._last = view
        with contextlib.suppress(RuntimeError):  # shut down: the app is ending
            self._writer.submit(_write_quietly, self.state_dir, view)


def _write_quietly(state_dir: Path, view: ViewState) -> None:
    # A state directory that cannot be written loses the place, nothing else.
    with contextlib.suppress(OSError):
        write_view(state_dir, view)


def away_items(
    state_dir: Path,
    since: float,
    *,
    found: tuple[AwayItem, ...] | list[AwayItem] = (),
    kept: Mapping[str, FinalState] | None = None,
) -> list[AwayItem]:
    """What happened to runs after ``since``, newest first, one item a run (its latest).

    Args:
        state_dir: The state directory: its watcher's events file and the final states other
            sessions kept.
        since: When the user last looked (epoch seconds).
        found: What this session found happened (runs unfinished when the user left, ended now).
        kept: The final states kept, when the caller holds them already (the monitor read them
            at start); ``None`` reads them from the state directory.

    Returns:
        The items, newest first.
    """
    latest: dict[str, AwayItem] = {}

    def keep(item: AwayItem) -> None:
        earlier = latest.get(item.run_id)
        if earlier is None or item.at >= earlier.at:
            latest[item.run_id] = item

    with contextlib.suppress(OSError):
        for event in EventLog(state_dir).read(since=since):
            # A record's run id is untrusted: one that is no run id names nothing to open.
            if event.kind not in (
                EventKind.PENDING,
                EventKind.RUNNING,
            ) and RUN_ID_PATTERN.fullmatch(event.run_id):
                keep(AwayItem(event.run_id, event.kind.value.replace("_", " "), event.at))
    if kept is None:
        kept = read_final_states(state_dir / "x-tui" / "final-states.json") or {}
    for run_id, (state, at) in kept.items():
        if at is not None and at > since:
            keep(AwayItem(run_id, state.value, at))
    for item in found:
        keep(item)
    return sorted(latest.values(), key=lambda item: item.at, reverse=True)


def away_line(items: list[AwayItem]) -> str | None:
    """The "while you were away" line for ``items`` (newest first), each numbered by its key;
    ``None`` when there is nothing to say."""
    if not items:
        return None
    shown = items[:AWAY_ITEMS]
    parts = [f"{number} {item.run_id} {item.what}" for number, item in enumerate(shown, 1)]
    line = " · ".join(parts)
    if len(items) > len(shown):
        line += f" and {len(items) - len(shown)} earlier"
    keys = "1" if len(shown) == 1 else f"1-{len(shown)}"
    line += f" (press {keys} to open)"
    return " ".join(plain(line).split())
