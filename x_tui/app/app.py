"""The x-tui application: the service, the run monitor, the main screen and the user's settings.

The app owns the engine's two long-lived parts, ``service`` (every backend call) and ``monitor``
(the store watcher and state poller), and publishes the monitor's messages on its
``monitor_events`` signal, to which each screen that shows runs subscribes, so each screen
updates its own widgets (:class:`~x_tui.app.app_context.AppContext` declares what screens reach
through the app). Screens and their handlers live in modules of their own.

| Key | Action |
| --- | --- |
| ``q`` | Quit (runs keep running: x-tui never stops a run by closing). |
| ``?`` | Help for the keys that work here. |
| ``escape`` | Back to the previous screen. |

The app never ends on its own: in a terminal smaller than ``fallback_screens.MIN_WIDTH`` x
``MIN_HEIGHT`` a notice covers every screen until it is enlarged, and an exception raised inside
the app (a widget that cannot render what a record holds) is shown in a panel in front of the
screen that failed (``fallback_screens``).
"""

from __future__ import annotations

import dataclasses
import difflib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual._context import active_message_pump
from textual.app import App
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.dom import NoScreen
from textual.geometry import Size
from textual.screen import Screen
from textual.signal import Signal
from textual.widget import Widget

from x_tui.app import GARBAGE_HOLD_SECONDS, collect_garbage_from_now_on
from x_tui.app.app_context import AppContext
from x_tui.app.fallback_screens import FailureScreen, TooSmallScreen, too_small
from x_tui.app.main_screen import MainScreen
from x_tui.app.messages import (
    ConfigChanged,
    MonitorEvent,
    OpenRun,
    RunsChanged,
    RunStateChanged,
    RunStatusFailed,
    RunStatusRecovered,
    SweepsChanged,
)
from x_tui.app.monitor import RunMonitor
from x_tui.app.run_follower import PollIntervals
from x_tui.app.service import Service
from x_tui.app.settings import Settings, save_setting
from x_tui.app.view_state import AWAY_ITEMS
from x_tui.compute.handle_versions import settings_file

if TYPE_CHECKING:  # the log view loads with the first screen that shows a log, not at start-up
    from x_tui.app.view_keeper import ViewKeeper
    from x_tui.widgets.log_view import LogView

STYLES = Path(__file__).resolve().parent.parent / "styles"
"""The directory of the app's ``.tcss`` files (absolute, so a subclass elsewhere finds them)."""


def _run_commands() -> type[Provider]:
    """The palette's run actions (imported when the palette first opens, not at start-up)."""
    from x_tui.app.commands import provider

    return provider()


class XTuiApp(AppContext):
    """Launch and watch the compute runs a project declares; see the module documentation."""

    TITLE = "x-tui"
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {
        *App.COMMANDS,
        _run_commands,
    }
    CSS_PATH = [STYLES / "app.tcss", STYLES / "main.tcss"]
    HELP_TITLE = "Everywhere"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("escape", "back", "Back", id="app.back", show=False),
        # The "while you were away" line's runs, by their numbers (x_tui.app.view_keeper).
        *(
            Binding(str(number), f"open_away({number})", f"Open away run {number}", show=False)
            for number in range(1, AWAY_ITEMS + 1)
        ),
    ]

    def __init__(
        self,
        project: Path | None,
        *,
        demo: bool = False,
        settings: Settings | None = None,
        service: Service | None = None,
        clock: Callable[[], float] = time.time,
        poll: bool = True,
        poll_intervals: PollIntervals | None = None,
    ) -> None:
        """Show the jobs of ``project`` and every run in the store.

        Args:
            project: The project root; ``None`` outside a project.
            demo: Whether ``project`` is the bundled demo (said in the title).
            settings: The user's settings; defaults when ``None``.
            service: The engine; one on the default state directory when ``None``.
            clock: The current epoch time, for ages and durations (tests pass a frozen one).
            poll: Whether the monitor asks backends for run states (snapshot tests turn it
                off and rely on the final states kept from earlier sessions).
            poll_intervals: How often unfinished runs are polled (the low-bandwidth profile
                makes them longer); the monitor's defaults when ``None``.
        """
        super().__init__()
        self.project = project
        self.settings = settings or Settings()
        self.service = service or Service()
        self.monitor_events: Signal[MonitorEvent] = Signal(self, "monitor-events")
        intervals = (poll_intervals or PollIntervals()).scaled(self.settings.refresh_scale)
        self.monitor = RunMonitor(
            self.service,
            self.post_message,
            project=project,
            poll=poll,
            first_interval=intervals.first,
            max_interval=intervals.max,
        )
        self.main_screen = MainScreen(project, clock=clock)
        self.view_keeper: ViewKeeper | None = None
        """Keeps the view across sessions (from mount on)."""
        if demo:
            self.sub_title = "demo"
        if self.settings.low_bandwidth:
            self.animation_level = "none"

    def get_default_screen(self) -> Screen[None]:
        """The main screen is the bottom of the screen stack."""
        return self.main_screen

    def on_mount(self) -> None:
        """Apply the user's theme and keys, report what in the settings was unusable, start.

        The view the last session left is reopened, and kept from now on
        (:mod:`x_tui.app.view_keeper`).
        """
        from x_tui.app.view_keeper import ViewKeeper

        self._apply_settings()
        self.view_keeper = ViewKeeper(self)
        self.view_keeper.start()
        self.monitor.start()
        self.screen_change_signal.subscribe(self, self._screen_changed)
        self._fit(self.size)

    def on_ready(self) -> None:
        """The first frame is on the screen: Python's cycle collector runs once the store is
        listed (the main screen says when), or at the latest :data:`GARBAGE_HOLD_SECONDS` from
        now."""
        self.set_timer(GARBAGE_HOLD_SECONDS, collect_garbage_from_now_on)

    def on_unmount(self) -> None:
        """Let go of the backend calls waited on (writes go on), stop the monitor's threads (runs
        are left running) and keep the view."""
        self.service.let_go()
        self.monitor.stop()
        keeper = self.view_keeper
        if keeper is not None:
            keeper.stop()

    async def on_event(self, event: events.Event) -> None:
        """Tell the view keeper of every key, click and scroll (the view may change after one)."""
        if isinstance(event, events.InputEvent) and self.view_keeper is not None:
            self.view_keeper.view_may_change()
        await super().on_event(event)

    def on_resize(self, event: events.Resize) -> None:
        """Cover the screens while the terminal is too small for them; uncover them after."""
        self._fit(event.size)

    def _screen_changed(self, screen: Screen[Any]) -> None:
        # A screen pushed while the terminal is too small goes under the notice too; a notice
        # left under a screen that was dismissed goes once the terminal is big enough.
        if isinstance(screen, TooSmallScreen) != too_small(self.size):
            self._fit(self.size)

    def _fit(self, size: Size) -> None:
        if not self.screen_stack:
            return
        top = self.screen
        small = too_small(size)
        for screen in self.screen_stack:
            # A covered screen lays nothing out, so nothing in it is arranged in too little room.
            screen.set_class(small and not isinstance(screen, TooSmallScreen), "-covered")
        if small:
            if isinstance(top, TooSmallScreen):
                top.show_size(size)
            else:
                self.push_screen(TooSmallScreen(size))
        elif isinstance(top, TooSmallScreen):
            self.pop_screen()

    def _handle_exception(self, error: Exception) -> None:
        """Show a failure inside the app in a panel and keep running (see the module docs).

        Textual stops the widget or screen that raised from handling anything more, so the screen
        it belongs to is closed (never the main screen) and the panel shown in its place. A
        failure of the app itself, of the panel or the too-small notice, or before the app runs,
        ends the app as Textual does, with the traceback.
        """
        failed = _failed_screen()
        if (
            failed is None
            or not self.is_running
            or failed not in self.screen_stack
            or isinstance(failed, (FailureScreen, TooSmallScreen))
        ):
            super()._handle_exception(error)
            return
        self.log.error(f"failure shown in a panel: {error!r}")
        while failed in self.screen_stack and len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(FailureScreen(error))

    def _apply_settings(self) -> None:
        settings = self.settings
        problems = list(settings.problems)
        if settings.theme is not None:
            if settings.theme in self.available_themes:
                self.theme = settings.theme
            else:
                names = sorted(self.available_themes)
                close = difflib.get_close_matches(settings.theme, names, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(
                    f"{settings.path}: theme: {settings.theme!r} is not a theme here{hint}"
                    f" (available: {', '.join(names)})"
                )
        if settings.keys:
            from x_tui.app.key_ids import key_ids, unknown_key_ids

            problems += unknown_key_ids(settings.path, settings.keys, key_ids())
            self.set_keymap(dict(settings.keys))
        for problem in problems:
            self.notify(problem, title="Settings", severity="warning", timeout=10, markup=False)

    # The monitor's messages -------------------------------------------------------------------

    def on_runs_changed(self, message: RunsChanged) -> None:
        """Publish to the screens; reopen the last session's run."""
        self.monitor_events.publish(message)
        keeper = self.view_keeper
        if keeper is not None:
            keeper.runs_changed(message.stored, complete=message.complete)

    def on_run_state_changed(self, message: RunStateChanged) -> None:
        """Publish to the screens; announce an end as asked."""
        self.monitor_events.publish(message)
        if message.previous is None or not message.state.is_final:
            return  # only an end this session saw happen is announced
        handle = next((h for h in self.monitor.stored.handles if h.run_id == message.run_id), None)
        if handle is not None:
            from x_tui.app.run_notices import announce_in_app

            announce_in_app(self, self.settings, handle, message.state, message.previous)

    def on_run_status_failed(self, message: RunStatusFailed) -> None:
        """Publish to the screens."""
        self.monitor_events.publish(message)

    def on_run_status_recovered(self, message: RunStatusRecovered) -> None:
        """Publish to the screens."""
        self.monitor_events.publish(message)

    def on_sweeps_changed(self, message: SweepsChanged) -> None:
        """Publish to the screens."""
        self.monitor_events.publish(message)

    def on_config_changed(self, message: ConfigChanged) -> None:
        """Publish to the screens."""
        self.monitor_events.publish(message)

    def on_open_run(self, message: OpenRun) -> None:
        """Push the run's screen, following its combined log."""
        from x_tui.app.run_screen import RunScreen  # imported on first use: start-up

        self.push_screen(RunScreen(message.handle))

    def on_log_view_wrap_changed(self, message: LogView.WrapChanged) -> None:
        """Remember the user's wrap choice for the next log views, and in the settings file."""
        self.settings = dataclasses.replace(self.settings, wrap=message.wrap)
        path = self.settings.path or settings_file()
        try:
            save_setting(path, "wrap", message.wrap)
        except OSError as error:
            self.notify(
                f"wrap not remembered: {error}", title="Settings", severity="warning", markup=False
            )

    # Actions ----------------------------------------------------------------------------------

    def action_help(self) -> None:
        """Show the keys that work where the user is (generated from the bindings)."""
        from x_tui.app.help_screen import HelpScreen, help_for

        if not isinstance(self.screen, (HelpScreen, FailureScreen, TooSmallScreen)):
            self.push_screen(help_for(self.screen))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer the away line's number keys only while it is shown (hidden from help after)."""
        if action == "open_away":
            keeper = self.view_keeper
            number = parameters[0] if parameters else None
            if keeper is None or not keeper.away_keys_live() or not isinstance(number, int):
                return False  # neither run nor shown
            return number <= len(keeper.away)
        return True

    def action_open_away(self, number: int) -> None:
        """Open the run the "while you were away" line numbers ``number``."""
        keeper = self.view_keeper
        if keeper is not None:
            keeper.open_away(number)

    def action_command_palette(self) -> None:
        """Open the command palette, unless a notice or a failure panel is in front."""
        if not isinstance(self.screen, (FailureScreen, TooSmallScreen)):
            super().action_command_palette()

    async def action_back(self) -> None:
        """Go back to the previous screen (the main screen stays, the too-small notice too)."""
        if len(self.screen_stack) > 1 and not isinstance(self.screen, TooSmallScreen):
            await self.pop_screen()


def _failed_screen() -> Screen[Any] | None:
    """The screen of the widget or screen whose handler raised, if it was one of them."""
    try:
        # Textual runs each handler with its own message pump as the active one.
        pump = active_message_pump.get()
    except LookupError:
        return None
    if isinstance(pump, Screen):
        return pump
    if isinstance(pump, Widget):
        try:
            return pump.screen
        except NoScreen:
            return None
    return None
