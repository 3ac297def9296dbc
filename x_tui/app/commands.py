"""The command palette's x-tui commands (``ctrl+p``): the run actions, submitting a job, opening
a run, and the help, for the screen the palette was opened on.

The app lists :class:`RunCommands` in its ``COMMANDS``, so the palette offers them on every
screen. A :class:`~x_tui.app.actions.RunActionScreen` with a run selected (the run screen, the
main screen's highlighted run) gets each run action it offers that has palette text in
:data:`~x_tui.app.actions.RUN_ACTIONS`; with a sweep's row highlighted, each action with a sweep
handler ("Cancel sweep", "Copy id" of the sweep); a screen with a ``project`` gets
one "Submit <job>" per job; every stored run can be opened by typing part of its id. Titles hold
only run ids, sweep ids and job names, which are validated to letters, digits, ``.``, ``_`` and
``-``; anything else is shown as plain text, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from x_tui.app.actions import RUN_ACTIONS, RunActionScreen, run_on_run, run_on_sweep
from x_tui.app.app_context import monitor_of
from x_tui.app.rerunning import open_run
from x_tui.compute.operations import Project

MAX_RUNS_OFFERED = 500
"""At most this many stored runs (the newest) are searched for "Open run"."""


@dataclass(frozen=True, slots=True)
class Command:
    """One palette entry.

    Attributes:
        title: What the palette shows and matches against.
        run: What choosing it does.
        help: One line under the title (x-tui's own words only).
        discoverable: Whether it is listed before anything is typed.
    """

    title: str
    run: Callable[[], object]
    help: str
    discoverable: bool = True


def run_commands(screen: Screen[object]) -> Iterator[Command]:
    """The commands that make sense on ``screen`` now.

    Args:
        screen: The screen the palette was opened on.

    Yields:
        Its commands: run actions first, then submits, help, and opening stored runs.
    """
    from x_tui.app.help_screen import help_for

    app = screen.app
    yield from _sweep_commands(screen)
    if isinstance(screen, RunActionScreen):
        yield from _run_action_commands(screen)
    project = getattr(screen, "project", None)
    if isinstance(project, Project) and project.config is not None:
        for job in project.config.jobs:
            yield Command(
                f"Submit {job}",
                partial(_submit, screen, job),
                "Open the submit screen for this job",
            )
    yield Command(
        "Keys (help)", lambda: app.push_screen(help_for(screen)), "Every key on this screen"
    )
    monitor = monitor_of(app)
    if monitor is not None:
        for stored in monitor.stored.handles[:MAX_RUNS_OFFERED]:
            yield Command(
                f"Open run {stored.run_id}",
                partial(open_run, app, stored),
                "Show the run's logs, manifest and devices",
                discoverable=False,
            )


def _run_action_commands(screen: RunActionScreen) -> Iterator[Command]:
    """The actions ``screen`` offers that have palette text, on its selected run, if it has one;
    not those that do not apply to it (cancelling a run that ended)."""
    handle = screen.selected_run()
    if handle is None:
        return
    state = screen.selected_state()
    for action in RUN_ACTIONS.values():
        if (
            action.palette is not None
            and screen.offers(action)
            and action.not_applicable(state) is None
        ):
            yield Command(
                f"{action.palette} {handle.run_id}",
                partial(run_on_run, screen, action, handle),
                action.palette_help,
            )


def _sweep_commands(screen: Screen[object]) -> Iterator[Command]:
    """The actions with a sweep handler, on the sweep whose row is highlighted, if one is."""
    chosen = screen.selected_sweep() if isinstance(screen, RunActionScreen) else None
    if chosen is None:
        return
    sweep, handles = chosen
    for action in RUN_ACTIONS.values():
        if action.sweep is not None and action.sweep_palette is not None:
            yield Command(
                f"{action.sweep_palette} {sweep.sweep_id}",
                partial(run_on_sweep, screen, action, sweep, handles),
                action.palette_help.replace("the run", "the sweep"),
            )


def provider() -> type[Provider]:
    """:class:`RunCommands`, for ``App.COMMANDS`` (called, so this module loads on first use)."""
    return RunCommands


def _submit(screen: Screen[object], job: str) -> None:
    from x_tui.app.submit_screen import SubmitScreen

    project = getattr(screen, "project", None)
    screen.app.push_screen(
        SubmitScreen(job, project=project if isinstance(project, Project) else None)
    )


class RunCommands(Provider):
    """Palette provider for the run actions, job submits, stored runs and the help."""

    def _commands(self) -> list[Command]:
        return list(run_commands(self.screen))

    async def discover(self) -> Hits:
        """The commands listed before anything is typed (cheap: no stored runs)."""
        for command in self._commands():
            if command.discoverable:
                yield DiscoveryHit(
                    Text(command.title), command.run, text=command.title, help=command.help
                )

    async def search(self, query: str) -> Hits:
        """The commands whose title matches ``query``, best first."""
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score <= 0:
                continue
            display = (
                matcher.highlight(command.title)
                if "[" not in command.title
                else Text(command.title)
            )
            yield Hit(score, display, command.run, text=command.title, help=command.help)
