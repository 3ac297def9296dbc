"""The order of a screen's keys in its footer: help first, then the focused widget's keys, then
the screen's, then the rest.

Textual's footer shows ``Screen.active_bindings`` in their order and cuts what does not fit, so on
an 80-column terminal the keys listed last are lost. A screen that overrides ``active_bindings``
with :func:`focused_first` keeps ``?`` and the keys of what the user is looking at in sight.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.app import App
from textual.binding import ActiveBinding
from textual.screen import Screen

HELP_ACTION = "help"
"""The app's help action (``?``), always first."""


def focused_first(
    screen: Screen[Any], bindings: Mapping[str, ActiveBinding]
) -> dict[str, ActiveBinding]:
    """``bindings`` reordered: help, the focused widget and its containers', the screen's, the rest.

    Args:
        screen: The screen.
        bindings: Its active bindings, as Textual resolves them.

    Returns:
        The same bindings in footer order.
    """

    def rank(active: ActiveBinding) -> int:
        if isinstance(active.node, App) and active.binding.action == HELP_ACTION:
            return 0
        if active.node is screen:
            return 2
        if isinstance(active.node, App):
            return 3
        return 1

    ordered = sorted(bindings.items(), key=lambda item: rank(item[1]))
    return dict(ordered)
