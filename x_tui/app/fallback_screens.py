"""Screens shown in place of the app's own when they cannot be drawn, so the app keeps running.

- :class:`TooSmallScreen` covers every screen while the terminal is smaller than
  :data:`MIN_WIDTH` x :data:`MIN_HEIGHT` (tables, tabs and footers cannot be laid out in less;
  Textual itself fails to wrap text in a width of zero). It says how big the terminal is and how
  big it must be; it goes away, and the screen under it comes back as it was, once the terminal is
  big enough again. Only ``q`` works meanwhile.
- :class:`FailureScreen` is shown when something inside the app failed (a widget that cannot
  render what a record holds, a handler that raised): the error and where it happened, in a
  panel, instead of the traceback that would end the app. ``escape`` goes back to the screen
  that failed, ``q`` quits. A failure while this panel is in front ends the app as before,
  so a panel that cannot be drawn never loops.

Both are full screens (not modal), so the screen under them is not drawn while they are in front:
a widget that fails on every frame fails once.
"""

from __future__ import annotations

import traceback
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Static

from x_tui.widgets.safe_text import safe_text

MIN_WIDTH = 20
"""The narrowest terminal x-tui draws its screens in, in columns."""

MIN_HEIGHT = 5
"""The lowest terminal x-tui draws its screens in, in rows."""

_FRAMES_SHOWN = 6
"""How many of the innermost traceback frames the failure panel names."""


def too_small(size: Size) -> bool:
    """Whether a terminal of ``size`` is too small for x-tui's screens."""
    return size.width < MIN_WIDTH or size.height < MIN_HEIGHT


class TooSmallScreen(Screen[None]):
    """Says the terminal is too small, in whatever room there is; see the module documentation."""

    DEFAULT_CSS = """
    TooSmallScreen {
        align: center middle;
        overflow: hidden;
    }
    TooSmallScreen > Static {
        width: 100%;
        height: auto;
        text-align: center;
        text-wrap: wrap;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "nothing", show=False),
        Binding("question_mark", "nothing", show=False),
        Binding("ctrl+p", "nothing", show=False),
    ]

    def __init__(self, size: Size) -> None:
        """Say that ``size`` is too small.

        Args:
            size: The terminal's size now.
        """
        super().__init__()
        self._message = Static(self._text(size), markup=False)

    def compose(self) -> ComposeResult:
        """The one message."""
        yield self._message

    def show_size(self, size: Size) -> None:
        """Say the terminal's new size (still too small).

        Args:
            size: The terminal's size now.
        """
        self._message.update(self._text(size))

    def action_nothing(self) -> None:
        """Keys that would open another screen do nothing while the terminal is too small."""

    @staticmethod
    def _text(size: Size) -> Text:
        return Text(
            f"{size.width}x{size.height} is too small: x-tui needs {MIN_WIDTH}x{MIN_HEIGHT}."
            " Enlarge the terminal, or press q to quit."
        )


class FailureScreen(Screen[None]):
    """A panel naming what failed inside the app; see the module documentation."""

    DEFAULT_CSS = """
    FailureScreen {
        align: center middle;
    }
    FailureScreen > Static {
        width: 100%;
        max-width: 100;
        height: auto;
        max-height: 100%;
        border: round $error;
        border-title-color: $error;
        padding: 0 1;
        overflow: hidden auto;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_failure", "Back", id="failure.back"),
        Binding("question_mark", "nothing", show=False),
    ]

    def __init__(self, error: BaseException) -> None:
        """Show ``error``.

        Args:
            error: What was raised.
        """
        super().__init__()
        self.errors = [error]
        self._panel = Static(self._text(), markup=False)
        self._panel.border_title = "Something in x-tui failed"

    def compose(self) -> ComposeResult:
        """The panel."""
        yield self._panel

    def add(self, error: BaseException) -> None:
        """Name another failure (the panel shows the latest and how many there were).

        Args:
            error: What was raised.
        """
        self.errors.append(error)
        self._panel.update(self._text())

    def action_dismiss_failure(self) -> None:
        """Go back to the screen that failed."""
        self.app.pop_screen()

    def action_nothing(self) -> None:
        """Help is not available over the panel."""

    def _text(self) -> Text:
        error = self.errors[-1]
        text = Text()
        text.append_text(safe_text(f"{type(error).__name__}: {error}", "bold"))
        frames = traceback.extract_tb(error.__traceback__)[-_FRAMES_SHOWN:]
        for frame in frames:
            text.append("\n  ")
            text.append_text(safe_text(f"{frame.filename}:{frame.lineno} in {frame.name}", "dim"))
        count = len(self.errors)
        if count > 1:
            text.append(f"\n({count} failures since this panel opened)", style="dim")
        text.append(
            "\n\nThe app keeps running and no run was touched."
            " escape: back to the screen that failed · q: quit"
        )
        return text
