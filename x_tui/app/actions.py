"""What a user can do to a run, on any screen that shows one: cancel, fetch, re-run, copy its id.

Each action is a function of the screen it was started from and the run's handle, so the run
screen and the main screen's runs table share one implementation (:mod:`x_tui.app.cancelling`,
:mod:`x_tui.app.fetching`, :mod:`x_tui.app.rerunning`, re-exported here); :class:`RunActions`
wires them to keys (:data:`RUN_ACTION_BINDINGS`) for a screen that says which run is selected.
Backend calls go through the app's :class:`~x_tui.app.service.Service` in thread workers owned
by the app (a fetch goes on when the user leaves the screen); the workers never touch a widget:
they notify, post :class:`FetchProgress` to the screen that asked, or schedule a screen push on
the app.

Cancel and re-run ask first (:class:`~x_tui.app.confirm_screen.ConfirmScreen`); fetch asks where
to, prefilled with ``operations.fetch_root()``. None of them is bound to ``ctrl+d``, ``ctrl+k``,
``ctrl+b`` or ``ctrl+a``.
"""

from __future__ import annotations

from typing import cast

from textual.binding import ActiveBinding, Binding
from textual.screen import Screen

from x_tui.app.app_context import (
    Severity,
    describe_error,
    monitor_of,
    notify,
    notify_from_thread,
    service_of,
)
from x_tui.app.cancelling import ask_cancel, ask_cancel_sweep, sweep_action
from x_tui.app.fetching import (
    PROGRESS_SECONDS,
    FetchProgress,
    ask_fetch,
    directory_size,
    format_bytes,
    start_fetch,
)
from x_tui.app.footer_keys import focused_first
from x_tui.app.rerun_plans import rerun_plan
from x_tui.app.rerunning import ask_rerun, open_run
from x_tui.compute.store import RunHandle

RUN_ACTION_BINDINGS: list[Binding] = [
    Binding("c", "cancel_run", "Cancel run", id="run.cancel"),
    Binding("f", "fetch_run", "Fetch", id="run.fetch"),
    Binding("r", "rerun", "Re-run", id="run.rerun"),
    Binding("y", "copy_run_id", "Copy id", id="run.copy_id"),
    Binding("x", "command_lines", "Commands", show=False, id="run.command_lines"),
]
"""The run actions' keys, for a screen's ``BINDINGS`` (each has an id for the user's keymap)."""


def copy_run_id(screen: Screen[object], handle: RunHandle) -> None:
    """Put the run's id on the clipboard (OSC 52, so it works over SSH) and say so."""
    screen.app.copy_to_clipboard(handle.run_id)
    notify(screen.app, f"Copied {handle.run_id}")


def show_command_lines(screen: Screen[object], handle: RunHandle) -> str:
    """Show the run actions' ``x-tui`` command lines in a toast and copy them (OSC 52).

    Returns:
        The text shown and copied: one ``# action`` comment and command per action.
    """
    from x_tui.app.command_lines import run_action_commands

    lines = [f"{command}  # {action}" for action, command in run_action_commands(handle).items()]
    text = "\n".join(lines)
    screen.app.copy_to_clipboard(text + "\n")
    notify(screen.app, text + "\n(copied)")
    return text


# The mixin ------------------------------------------------------------------------------------


class RunActions:
    """Run actions for a screen: mix in before ``Screen`` and add :data:`RUN_ACTION_BINDINGS`.

    The screen says which run the actions apply to by overriding :meth:`selected_run`.
    """

    def selected_run(self) -> RunHandle | None:
        """The run the actions apply to; ``None`` when no run is selected."""
        return None

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The screen's active bindings in footer order: help, the focused widget's (a log
        view's), then the screen's run actions (see ``x_tui.app.footer_keys``)."""
        screen = cast("Screen[object]", self)
        bindings: dict[str, ActiveBinding] = Screen.active_bindings.fget(screen)  # type: ignore[attr-defined]
        return focused_first(screen, bindings)

    def _run_for_action(self) -> tuple[Screen[object], RunHandle] | None:
        screen = cast("Screen[object]", self)
        handle = self.selected_run()
        if handle is None:
            notify(screen.app, "No run selected", severity="warning")
            return None
        return screen, handle

    def action_cancel_run(self) -> None:
        """Cancel the selected run, after asking."""
        chosen = self._run_for_action()
        if chosen is not None:
            ask_cancel(*chosen)

    def action_fetch_run(self) -> None:
        """Fetch the selected run's outputs, after asking where to."""
        chosen = self._run_for_action()
        if chosen is not None:
            ask_fetch(*chosen)

    def action_rerun(self) -> None:
        """Run the selected run's job again with its settings, after asking."""
        chosen = self._run_for_action()
        if chosen is not None:
            ask_rerun(*chosen)

    def action_command_lines(self) -> None:
        """Show and copy the ``x-tui`` command line behind each run action."""
        chosen = self._run_for_action()
        if chosen is not None:
            show_command_lines(*chosen)

    def action_copy_run_id(self) -> None:
        """Copy the selected run's id to the clipboard."""
        chosen = self._run_for_action()
        if chosen is not None:
            copy_run_id(*chosen)


__all__ = [
    "PROGRESS_SECONDS",
    "RUN_ACTION_BINDINGS",
    "FetchProgress",
    "RunActions",
    "Severity",
    "ask_cancel",
    "ask_cancel_sweep",
    "ask_fetch",
    "ask_rerun",
    "copy_run_id",
    "describe_error",
    "directory_size",
    "format_bytes",
    "monitor_of",
    "notify",
    "notify_from_thread",
    "open_run",
    "rerun_plan",
    "service_of",
    "show_command_lines",
    "start_fetch",
    "sweep_action",
]
