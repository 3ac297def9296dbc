"""The ``?`` help: every key that works where the user pressed ``?``, generated from the bindings.

Nothing here is written by hand: the keys and descriptions come from the ``BINDINGS`` of the
focused widget, its containers, the screen and the app, exactly as Textual resolves them at that
moment (a key shadowed by a nearer binding is listed once, with the meaning it has there).
x-tui's own keys come first, grouped by where they are bound: the screen's own, then the focused
widget's and its containers', then the app's ("Everywhere"); Textual's generic keys (focus
moves, scrolling, copying, the palette) come last, in a group of their own. Keys that cannot act
right now are dimmed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

HELP_TITLE_ATTRIBUTE = "HELP_TITLE"
"""A class attribute a screen or widget may set to name its group in the help."""


def _group_title(node: DOMNode) -> str:
    title = getattr(node, HELP_TITLE_ATTRIBUTE, None)
    if isinstance(title, str) and title:
        return title
    if isinstance(node, App):
        return "Everywhere"
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z]|$)|[A-Z]?[a-z0-9]+|[A-Z]+", type(node).__name__)
    if not words:
        return type(node).__name__
    text = " ".join(word.lower() for word in words)
    return text[0].upper() + text[1:]


GENERIC_TITLE = "Generic keys"
"""The group of Textual's own keys, listed after x-tui's."""

OWN_MODULE = "x_tui"
"""The package whose classes declare x-tui's own keys."""


def _rank(node: DOMNode) -> int:
    if isinstance(node, Screen):
        return 0
    if isinstance(node, App):
        return 2
    return 1


def is_own(active: ActiveBinding) -> bool:
    """Whether x-tui declared this binding (in a class of its own), not Textual.

    Args:
        active: An active binding.
    """
    for cls in type(active.node).__mro__:
        if not cls.__module__.startswith(OWN_MODULE):
            continue
        for declared in cls.__dict__.get("BINDINGS", ()):
            if (
                isinstance(declared, Binding)
                and declared.action == active.binding.action
                and declared.description == active.binding.description
            ):
                return True
    return False


def group_bindings(
    bindings: Mapping[str, ActiveBinding],
) -> list[tuple[str, list[ActiveBinding]]]:
    """Group active bindings: x-tui's by where they are bound (the screen, widgets, the app),
    then Textual's generic ones.

    Args:
        bindings: The active bindings, by key (``Screen.active_bindings``).

    Returns:
        ``(group title, bindings)`` pairs; nodes of one class share a group, and each group keeps
        the order its bindings were declared in.
    """
    groups: dict[str, list[ActiveBinding]] = {}
    ranks: dict[str, int] = {}
    for active in bindings.values():
        if is_own(active):
            title = _group_title(active.node)
            rank = _rank(active.node)
        else:
            title, rank = GENERIC_TITLE, 3
        groups.setdefault(title, []).append(active)
        ranks[title] = min(ranks.get(title, 3), rank)
    ordered = sorted(groups, key=lambda title: ranks[title])
    return [(title, groups[title]) for title in ordered]


def _describe(binding: Binding) -> str:
    return binding.description or binding.action.replace("_", " ")


def _key_display(app: App[object], binding: Binding) -> str:
    return app.get_key_display(binding)


def _merge_keys(
    app: App[object], actives: Iterable[ActiveBinding]
) -> list[tuple[str, ActiveBinding]]:
    """One row per action: ``j`` and ``down`` bound to one action share a row."""
    rows: dict[tuple[int, str], tuple[list[str], ActiveBinding]] = {}
    for active in actives:
        slot = (id(active.node), active.binding.action)
        keys, _ = rows.setdefault(slot, ([], active))
        display = _key_display(app, active.binding)
        if display not in keys:
            keys.append(display)
    return [(", ".join(keys), active) for keys, active in rows.values()]


def bindings_table(app: App[object], actives: Iterable[ActiveBinding]) -> Table:
    """A two-column table of keys and what they do; disabled keys are dimmed.

    Args:
        app: The app, which formats keys for display.
        actives: One group's bindings.

    Returns:
        The table, built from ``Text`` cells (nothing is read as markup).
    """
    table = Table.grid(padding=(0, 2))
    table.add_column("key", no_wrap=True, min_width=10)
    table.add_column("description")
    for keys, active in _merge_keys(app, actives):
        style = "" if active.enabled else "dim"
        description = Text(_describe(active.binding), style=style)
        if active.tooltip:
            description.append(f"  {active.tooltip}", style="dim")
        table.add_row(Text(keys, style=f"bold {style}".strip()), description)
    return table


class HelpScreen(ModalScreen[None]):
    """The keys that work on the screen ``?`` was pressed on, grouped by where they are bound.

    | Key | Description |
    | :- | :- |
    | escape, ?, q | Close the help. |
    """

    HELP_TITLE = "Help"
    CSS_PATH = "../styles/help.tcss"
    BINDINGS = [
        Binding("escape", "close", "Close help"),
        Binding("question_mark", "close", "Close help", show=False),
        Binding("q", "close", "Close help", show=False),
    ]

    def __init__(self, bindings: Mapping[str, ActiveBinding], *, title: str = "Keys") -> None:
        """Show ``bindings``.

        Args:
            bindings: The bindings to describe, by key, usually ``screen.active_bindings`` of the
                screen ``?`` was pressed on (see :func:`help_for`).
            title: The heading, such as ``"Keys: run screen"``.
        """
        super().__init__()
        self._groups = group_bindings(bindings)
        self._title = title

    def compose(self) -> ComposeResult:
        """One titled table per group, in a scrolling panel."""
        with Vertical(id="help-dialog"):
            yield Static(Text(self._title, style="bold"), id="help-title")
            with VerticalScroll(id="help-groups"):
                for title, actives in self._groups:
                    yield Static(Text(title, style="bold underline"), classes="help-group-title")
                    yield Static(bindings_table(self.app, actives), classes="help-group")
            yield Static(
                Text("escape closes this help; ctrl+p opens the command palette", style="dim"),
                id="help-hint",
            )

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)


def help_for(screen: Screen[object]) -> HelpScreen:
    """The help for ``screen`` as it is now: its focused widget, the screen and the app.

    Args:
        screen: The screen ``?`` was pressed on.

    Returns:
        A help screen to push.
    """
    name = _group_title(screen)
    return HelpScreen(screen.active_bindings, title=f"Keys: {name.lower()}")
