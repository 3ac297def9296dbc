"""The run actions: everything a user can do to a run, each declared once in :data:`RUN_ACTIONS`.

One :class:`RunAction` holds what every part of the UI needs of an action: its name, key and
key id (for ``[keys]`` in the settings), the footer and help label, the palette's text, the
handler for a run and the one for a sweep's row, the headless ``x-tui`` command it corresponds to,
the screens that offer it, whether the read-only web view allows it and the runs it applies to
(``c`` only to a run still going, ``d`` only to one that ended: on another run the footer dims
its key and gives the reason). The screens' ``BINDINGS`` (:func:`run_action_bindings`), the
footer and the ``?`` help (both read the bindings), the command palette
(:mod:`x_tui.app.commands`), the sweep rows' dispatch, the command lines (``x``) and the README's
key table (:mod:`x_tui.app.key_ids`) all come from it.

Adding an action is one entry in :data:`RUN_ACTIONS` and one handler, a function of the screen
it was started from and the run's handle. Handlers live in modules of their own, loaded on the
action's first use (:class:`LaterHandler`), so this table costs the app's start-up nothing.

:class:`RunActionScreen` is the screen that offers the actions: a key runs
``run_action('<name>')``, which refuses what the read-only web view does not allow, hands a
sweep's row to the action's sweep handler and a run to its run handler. None of the actions is
bound to ``ctrl+d``, ``ctrl+k``, ``ctrl+b`` or ``ctrl+a``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from textual.binding import ActiveBinding, Binding
from textual.screen import Screen

from x_tui.app import command_lines
from x_tui.app.app_context import monitor_of, notify
from x_tui.app.footer_keys import focused_first
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle
from x_tui.compute.sweeps import Sweep

RunHandler = Callable[[Screen[Any], RunHandle], object]
"""What an action does to one run, given the screen it was started from."""

SweepHandler = Callable[[Screen[Any], Sweep, tuple[RunHandle, ...]], None]
"""What an action does on a sweep's row: the sweep and its runs in the store."""

Where = Literal["main", "run"]
"""A screen that offers run actions: the main screen's runs pane, or the run screen."""

BOTH: frozenset[Where] = frozenset({"main", "run"})

AppliesTo = Literal["any", "going", "ended"]
"""The runs an action applies to: any run, a run still going, or a run that has ended."""

_NOT_APPLICABLE: Mapping[AppliesTo, str] = {
    "going": "Only for a run still going (this one has ended)",
    "ended": "Only for a run that has ended (this one is still going)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunAction:
    """One run action, declared once.

    Attributes:
        name: Its name: the ``run_action`` parameter, and the word the command lines use.
        key: Its default key, as Textual names it.
        key_id: Its binding id, for ``[keys]`` in the settings file.
        label: What the footer and the help call it.
        verb: What it does, in "select one run of the sweep to ..." (a sweep it cannot act on).
        run: The handler for one run.
        sweep: The handler for a sweep's row; ``None`` when the action needs one run.
        palette: The palette's title before the run id (``None``: not in the palette).
        sweep_palette: The palette's title before a sweep id, when ``sweep`` is set.
        palette_help: The palette's line under the title.
        command: The headless ``x-tui`` command line that does the same, when there is one.
        where: The screens that offer it.
        show: Whether the footer shows its key (the help always does).
        read_only: Whether the read-only web view allows it (it changes nothing, starts nothing).
        applies_to: The runs it applies to. On any other run its key is shown dimmed, with the
            reason as its tooltip, and pressing it says why (its handler checks again).
    """

    name: str
    key: str
    key_id: str
    label: str
    verb: str
    run: RunHandler
    sweep: SweepHandler | None = None
    palette: str | None = None
    sweep_palette: str | None = None
    palette_help: str = ""
    command: Callable[[RunHandle], list[str]] | None = None
    where: frozenset[Where] = BOTH
    show: bool = True
    read_only: bool = False
    applies_to: AppliesTo = "any"

    @property
    def binding_action(self) -> str:
        """The action string its key binding runs."""
        return f"run_action({self.name!r})"

    def binding(self) -> Binding:
        """The key binding that runs this action on a :class:`RunActionScreen`."""
        return Binding(self.key, self.binding_action, self.label, show=self.show, id=self.key_id)

    def not_applicable(self, state: RunState | None) -> str | None:
        """Why it does not apply to a run in ``state``; ``None`` when it does.

        A run whose state is not known yet (``None``) is offered every action.
        """
        if state is None or self.applies_to == "any":
            return None
        if state.is_final == (self.applies_to == "ended"):
            return None
        return _NOT_APPLICABLE[self.applies_to]


@dataclass(frozen=True, slots=True)
class LaterHandler:
    """A handler ``module.function``, imported when the action is first used (start-up).

    Attributes:
        module: The handler's module.
        function: Its name there.
    """

    module: str
    function: str

    def resolve(self) -> Callable[..., object]:
        """The handler itself (its module imported now)."""
        handler: Callable[..., object] = getattr(
            importlib.import_module(self.module), self.function
        )
        return handler

    def __call__(self, *arguments: object) -> None:
        """Call the handler with ``arguments``."""
        self.resolve()(*arguments)


def copy_run_id(screen: Screen[object], handle: RunHandle) -> None:
    """Put the run's id on the clipboard (OSC 52, so it works over SSH) and say so."""
    screen.app.copy_to_clipboard(handle.run_id)
    notify(screen.app, f"Copied {handle.run_id}")


def copy_sweep_id(screen: Screen[object], sweep: Sweep, handles: tuple[RunHandle, ...]) -> None:
    """Put the sweep's id on the clipboard and say so."""
    screen.app.copy_to_clipboard(sweep.sweep_id)
    notify(screen.app, f"Copied {sweep.sweep_id}")


def show_command_lines(screen: Screen[object], handle: RunHandle) -> str:
    """Show the run's ``x-tui`` command lines in a toast and copy them (OSC 52).

    Returns:
        The text shown and copied: one command and ``# name`` comment per line (see
        :func:`action_commands`).
    """
    lines = [f"{command}  # {name}" for name, command in action_commands(handle).items()]
    text = "\n".join(lines)
    screen.app.copy_to_clipboard(text + "\n")
    notify(screen.app, text + "\n(copied)")
    return text


RUN_ACTIONS: Mapping[str, RunAction] = {
    action.name: action
    for action in (
        RunAction(
            name="cancel",
            key="c",
            key_id="run.cancel",
            label="Cancel run",
            verb="cancel",
            run=LaterHandler("x_tui.app.cancelling", "ask_cancel"),
            sweep=LaterHandler("x_tui.app.cancelling", "ask_cancel_sweep"),
            palette="Cancel",
            sweep_palette="Cancel sweep",
            palette_help="Stop the run's tasks (asks first)",
            command=command_lines.cancel_command,
            applies_to="going",
        ),
        RunAction(
            name="fetch",
            key="f",
            key_id="run.fetch",
            label="Fetch",
            verb="fetch",
            run=LaterHandler("x_tui.app.fetching", "ask_fetch"),
            palette="Fetch",
            palette_help="Copy the run's outputs here (asks where to)",
            command=command_lines.fetch_command,
        ),
        RunAction(
            name="re-run",
            key="r",
            key_id="run.rerun",
            label="Re-run",
            verb="re-run",
            run=LaterHandler("x_tui.app.rerunning", "ask_rerun"),
            palette="Re-run",
            palette_help="Run the job again with the same settings (asks first)",
            command=command_lines.rerun_command,
        ),
        RunAction(
            name="copy id",
            key="y",
            key_id="run.copy_id",
            label="Copy id",
            verb="copy",
            run=copy_run_id,
            sweep=copy_sweep_id,
            palette="Copy id",
            sweep_palette="Copy id",
            palette_help="Put the run id on the clipboard",
            read_only=True,
        ),
        RunAction(
            name="delete",
            key="d",
            key_id="main.delete_run",
            label="Delete",
            verb="delete",
            run=LaterHandler("x_tui.app.deleting", "ask_delete"),
            palette="Delete",
            palette_help="Remove the ended run's record and local files (asks first)",
            command=command_lines.delete_command,
            where=frozenset({"main"}),
            applies_to="ended",
        ),
        RunAction(
            name="shell",
            key="exclamation_mark",
            key_id="run.shell",
            label="Shell",
            verb="open a shell in",
            run=LaterHandler("x_tui.app.run_shell", "open_shell"),
            palette="Shell in",
            palette_help="A shell in the run's directory, with its environment (local runs)",
            show=False,
        ),
        RunAction(
            name="commands",
            key="x",
            key_id="run.command_lines",
            label="Commands",
            verb="show the commands of",
            run=show_command_lines,
            palette="Commands of",
            palette_help="Show and copy the x-tui command line behind each action",
            where=frozenset({"run"}),
            show=False,
            read_only=True,
        ),
    )
}
"""Every run action, by name, in the order the footer, the help and the palette list them."""

_BY_BINDING_ACTION: Mapping[str, RunAction] = {
    action.binding_action: action for action in RUN_ACTIONS.values()
}


def run_action_bindings(where: Where) -> list[Binding]:
    """The bindings of the actions ``where`` offers, for that screen's ``BINDINGS``."""
    return [action.binding() for action in RUN_ACTIONS.values() if where in action.where]


def action_commands(handle: RunHandle) -> dict[str, str]:
    """The headless command line of watching the run and of each action that has one, by name.

    Args:
        handle: The run.

    Returns:
        ``status`` and ``logs`` first (what the run screen shows), then the actions' in order.
    """
    lines = {
        "status": command_lines.shell_line(command_lines.status_command(handle)),
        "logs": command_lines.shell_line(command_lines.logs_command(handle)),
    }
    for action in RUN_ACTIONS.values():
        if action.command is not None:
            lines[action.name] = command_lines.shell_line(action.command(handle))
    return lines


class RunActionScreen(Screen[None]):
    """A screen that offers the run actions: add ``run_action_bindings(WHERE)`` to ``BINDINGS``.

    The screen says what the actions apply to by overriding :meth:`selected_run` (and, where a
    sweep's row can be highlighted, :meth:`selected_sweep`).
    """

    WHERE: Where = "run"
    """Which screen's actions this screen offers."""

    _dimmed_actions: frozenset[str] = frozenset()
    """The run actions whose keys were last shown dimmed (see :meth:`refresh_run_actions`)."""

    def selected_run(self) -> RunHandle | None:
        """The run the actions apply to; ``None`` when no run is selected."""
        return None

    def selected_sweep(self) -> tuple[Sweep, tuple[RunHandle, ...]] | None:
        """The sweep whose row is selected, with its runs in the store; ``None`` if none is."""
        return None

    def offers(self, action: RunAction) -> bool:
        """Whether this screen offers ``action``."""
        return self.WHERE in action.where

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The active bindings in footer order: help, the focused widget's (a log view's, the
        runs table's), then the screen's run actions (see ``x_tui.app.footer_keys``).

        A run action that does not apply to the selected run (``c`` on a run that ended) is
        marked disabled, so the footer dims it, with the reason as its tooltip. It stays bound:
        pressing it runs its handler, which says why it does nothing.
        """
        bindings = focused_first(self, super().active_bindings)
        state = self.selected_state()
        if state is None:
            return bindings
        for key, active in bindings.items():
            action = _BY_BINDING_ACTION.get(active.binding.action)
            reason = action.not_applicable(state) if action is not None else None
            if reason is not None and active.enabled:
                bindings[key] = active._replace(enabled=False, tooltip=reason)
        return bindings

    def refresh_run_actions(self) -> None:
        """Refresh the keys if the selected run changed which run actions apply (its state or
        another run selected); most changes of selection or state leave them as they were."""
        state = self.selected_state()
        dimmed = frozenset(
            name for name, action in RUN_ACTIONS.items() if action.not_applicable(state)
        )
        if dimmed != self._dimmed_actions:
            self._dimmed_actions = dimmed
            self.refresh_bindings()

    def selected_state(self) -> RunState | None:
        """The selected run's state, when one run is selected and it is known (the monitor's)."""
        monitor = monitor_of(self.app)
        if monitor is None or self.selected_sweep() is not None:
            return None
        handle = self.selected_run()
        return monitor.state_of(handle.run_id) if handle is not None else None

    def action_run_action(self, name: str) -> None:
        """Run the action ``name`` on the selected sweep's row or run."""
        action = RUN_ACTIONS.get(name)
        if action is None or not self.offers(action):
            return
        sweep = self.selected_sweep()
        if sweep is not None:
            run_on_sweep(self, action, *sweep)
            return
        handle = self.selected_run()
        if handle is None:
            notify(self.app, "No run selected", severity="warning")
            return
        run_on_run(self, action, handle)


def _refused(screen: Screen[Any], action: RunAction) -> bool:
    from x_tui.app.read_only import refused

    return not action.read_only and refused(screen.app)


def run_on_run(screen: Screen[Any], action: RunAction, handle: RunHandle) -> None:
    """Run ``action`` on one run, unless the read-only web view refuses it (with a toast)."""
    if not _refused(screen, action):
        action.run(screen, handle)


def run_on_sweep(
    screen: Screen[Any], action: RunAction, sweep: Sweep, handles: tuple[RunHandle, ...]
) -> None:
    """Run ``action`` on a sweep's row; an action that needs one run says to select one."""
    if action.sweep is None:
        notify(screen.app, f"Select one run of the sweep to {action.verb} it", severity="warning")
    elif not _refused(screen, action):
        action.sweep(screen, sweep, handles)
