"""A screen's first focus styled once, with the screen, rather than before it too.

Textual restyles a widget as it gains focus (and the subtree of its nearest ancestor with a
``:focus-within`` rule), and restyles every node of a screen as the screen is first shown (its
first ``ScreenResume``). A screen's first focus comes as it is composed, before it is shown, so
those first restyles are thrown away: for the runs table, whose every restyle styles its 18
component classes again, some 5 ms of x-tui's first frame. A screen that uses
:class:`FocusStyledWithScreen` for the widgets it focuses first, and :func:`styled_with_screen`
in its ``_update_focus_styles``, leaves them to the screen's own restyle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.dom import NoScreen
from textual.screen import Screen
from textual.widget import Widget


def styled_with_screen(screen: Screen[Any]) -> bool:
    """Whether ``screen`` is yet to be shown for the first time (every node is restyled then)."""
    return screen.stack_updates == 0


if TYPE_CHECKING:
    _Mixin = Widget
else:
    # A widget to the type checker only: a mixin named before a widget's Textual base must not
    # be one (Textual takes a widget's first widget base for the CSS it inherits).
    _Mixin = object


class FocusStyledWithScreen(_Mixin):
    """A widget (a mixin, before its Textual base) whose focus, given before its screen is first
    shown, is styled by the screen's restyle then."""

    def watch_has_focus(self, has_focus: bool) -> None:
        """Restyle for the focus change, unless the screen's first showing will."""
        try:
            later = styled_with_screen(self.screen)
        except NoScreen:  # (being removed: restyled as Textual does)
            later = False
        if not later:
            super().watch_has_focus(has_focus)
