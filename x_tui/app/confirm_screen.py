"""Modal questions: yes/no before an action that cannot be undone, and "which directory?".

The question names what the action touches (a run id, a job) and is shown as plain text, never
as markup. ``No`` has the focus, so a stray ``enter`` does nothing harmful; ``y`` confirms and
``n`` or ``escape`` declines. The screen is dismissed with ``True`` only when the user confirmed.
:func:`confirm_then_work` is the one way an action asks first and then works in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static


class ConfirmScreen(ModalScreen[bool]):
    """Ask one question; dismiss with ``True`` when the user confirms.

    | Key | Description |
    | :- | :- |
    | y | Confirm. |
    | n, escape | Decline. |
    """

    BINDINGS = [
        Binding("y", "confirm", "Yes"),
        Binding("n", "decline", "No"),
        Binding("escape", "decline", "No", show=False),
    ]

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
        background: $background 60%;
    }
    ConfirmScreen > #confirm-dialog {
        width: 64;
        max-width: 100%;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ConfirmScreen #confirm-question {
        width: 100%;
        margin-bottom: 1;
    }
    ConfirmScreen #confirm-buttons {
        width: 100%;
        height: auto;
        align-horizontal: right;
    }
    ConfirmScreen Button {
        margin-left: 2;
    }
    """

    def __init__(self, question: Text, *, confirm_label: str, danger: bool = True) -> None:
        """Build the question.

        Args:
            question: What is asked, already built as plain ``Text`` (see ``safe_text``).
            confirm_label: The confirming button's label, such as ``"Cancel run"``.
            danger: Whether to show the confirming button in the error colour.
        """
        super().__init__()
        self._question = question
        self._confirm_label = confirm_label
        self._danger = danger

    def compose(self) -> ComposeResult:
        """Lay out the question and the two buttons, ``No`` first in focus order."""
        with Vertical(id="confirm-dialog"):
            yield Static(self._question, id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(
                    Text(f"{self._confirm_label} (y)"),
                    id="confirm-yes",
                    variant="error" if self._danger else "primary",
                )
                yield Button(Text("No (n)"), id="confirm-no", variant="default")

    def on_mount(self) -> None:
        """Give ``No`` the focus so ``enter`` alone never confirms."""
        self.query_one("#confirm-no", Button).focus()

    @on(Button.Pressed, "#confirm-yes")
    def action_confirm(self) -> None:
        """Confirm: dismiss with ``True``."""
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no")
    def action_decline(self) -> None:
        """Decline: dismiss with ``False``."""
        self.dismiss(False)


def confirm_then_work(
    app: App[object],
    question: Text,
    *,
    confirm_label: str,
    work: Callable[[], None],
    name: str,
    danger: bool = True,
) -> None:
    """Ask ``question``; once confirmed, run ``work`` in a thread worker owned by the app.

    The worker outlives the screen that asked, and a failure in it never ends the app (``work``
    says how it went in a toast).

    Args:
        app: The app, which owns the worker.
        question: What is asked, as plain ``Text`` (see ``safe_text``).
        confirm_label: The confirming button's label, such as ``"Cancel run"``.
        work: What to do once confirmed; runs in a thread, so it touches no widget.
        name: The worker's group and description, such as ``"cancel <run id>"``.
        danger: Whether to show the confirming button in the error colour.
    """

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            app.run_worker(work, thread=True, group=name, exit_on_error=False, description=name)

    app.push_screen(ConfirmScreen(question, confirm_label=confirm_label, danger=danger), answered)


class AskPathScreen(ModalScreen[Path | None]):
    """Ask for a directory, prefilled; dismiss with it on ``enter``, ``None`` on ``escape``.

    | Key | Description |
    | :- | :- |
    | enter | Accept the directory. |
    | escape | Give up. |
    """

    BINDINGS = [Binding("escape", "give_up", "Back")]

    DEFAULT_CSS = """
    AskPathScreen {
        align: center middle;
        background: $background 60%;
    }
    AskPathScreen > #ask-dialog {
        width: 90%;
        max-width: 120;
        height: auto;
        border: thick $primary;
        background: $surface;
        padding: 1 2;
    }
    AskPathScreen #ask-question {
        margin-bottom: 1;
    }
    AskPathScreen #ask-hint {
        margin-top: 1;
    }
    """

    def __init__(self, question: Text, *, default: Path) -> None:
        """Ask ``question``, with ``default`` in the field.

        Args:
            question: What is asked, as plain ``Text``.
            default: The directory the field starts with.
        """
        super().__init__()
        self._question = question
        self._default = default

    def compose(self) -> ComposeResult:
        """The question, the field and a hint."""
        with Vertical(id="ask-dialog"):
            yield Static(self._question, id="ask-question")
            yield Input(value=str(self._default), id="ask-path")
            yield Static(Text("enter to go on, escape to go back", style="dim"), id="ask-hint")

    @on(Input.Submitted, "#ask-path")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        self.dismiss(Path(value).expanduser() if value else self._default)

    def action_give_up(self) -> None:
        """Dismiss without a directory."""
        self.dismiss(None)
