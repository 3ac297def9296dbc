"""The run screen's fetch bar: how a fetch of the run's outputs is going, and where the copy goes.

Hidden until the first :class:`~x_tui.app.fetching.FetchProgress` of the run arrives; the target
path and any error are untrusted text, shown through ``safe_text``.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from x_tui.app.fetching import FetchProgress, format_bytes
from x_tui.widgets.safe_text import safe_text


class FetchBar(Horizontal):
    """One line: what was copied so far, into where, and a progress bar when the size is known."""

    def compose(self) -> ComposeResult:
        """The label and the bar."""
        yield Static(Text(""), id="fetch-label")
        yield ProgressBar(total=None, show_eta=False, id="fetch-progress")

    def show(self, message: FetchProgress) -> None:
        """Show how the fetch is going (and that it ended, or why it failed).

        Args:
            message: The fetch's latest progress.
        """
        self.display = True
        label = self.query_one("#fetch-label", Static)
        progress = self.query_one("#fetch-progress", ProgressBar)
        text = Text("Fetched " if message.finished else "Fetching ")
        text.append(f"{message.files} files, {format_bytes(message.copied_bytes)}")
        text.append(" into ")
        text.append_text(safe_text(str(message.target), "bold"))
        if message.error is not None:
            text = safe_text(f"Fetch failed: {message.error}", "bold red")
        label.update(text)
        if message.total_bytes:
            progress.update(total=message.total_bytes, progress=message.copied_bytes)
        elif message.finished:
            done = max(message.copied_bytes, 1)
            progress.update(total=done, progress=done)
        if message.finished:
            progress.display = message.error is None and bool(message.total_bytes)
