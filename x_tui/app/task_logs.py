"""One task's logs on the run screen: stdout or stderr, of its latest attempt or an earlier one.

The log file is found by the run's :class:`~x_tui.app.run_sources.RunReader` in a thread worker
(a remote run's log is peeked at and copied here first) and shown in a log view made for the
app's profile (:func:`~x_tui.app.log_view_settings.new_log_view`).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from x_tui.app.log_view_settings import new_log_view
from x_tui.app.run_sources import STREAMS, RunReader
from x_tui.widgets.log_view import LogView


class TaskLogs(Vertical):
    """One task's stdout or stderr, latest attempt or an earlier one, in a log view.

    | Key | Description |
    | :- | :- |
    | o | Switch between stdout and stderr. |
    | p | Show an earlier attempt's logs (cycles back to the latest). |
    """

    HELP_TITLE = "Task logs"
    BINDINGS = [
        Binding("o", "other_stream", "stdout/stderr", id="run.task.other_stream"),
        Binding("p", "earlier_attempt", "Earlier attempt", id="run.task.earlier_attempt"),
    ]

    DEFAULT_CSS = """
    TaskLogs {
        height: 1fr;
    }
    TaskLogs > .task-toolbar {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    TaskLogs > LogView {
        height: 1fr;
    }
    """

    def __init__(self, task: str, reader: RunReader, *, id: str | None = None) -> None:
        """Show the logs of ``task``.

        Args:
            task: The task's name.
            reader: Finds the log files of the run.
            id: The widget's id.
        """
        super().__init__(id=id)
        self.task_name = task
        self.reader = reader
        self.stream = "stdout"
        self.attempt: int | None = None
        self.attempts: tuple[int, ...] = ()
        self._active = False
        self._opened: Path | None = None

    def compose(self) -> ComposeResult:
        """A toolbar line over the log view."""
        yield Static(self._toolbar(), classes="task-toolbar")
        yield new_log_view(self.app, follow=True)

    def _toolbar(self) -> Text:
        text = Text()
        for stream in STREAMS:
            style = "bold reverse" if stream == self.stream else "dim"
            text.append(f" {stream} ", style=style)
        if self.attempts or self.attempt is not None:
            total = len(self.attempts) + 1
            shown = self.attempt if self.attempt is not None else total
            latest = " (latest)" if self.attempt is None else ""
            text.append(f"  attempt {shown} of {total}{latest}", style="bold")
            text.append("  p: earlier attempt", style="dim")
        text.append("  o: stdout/stderr", style="dim")
        return text

    def activate(self) -> None:
        """Open the log now that its tab is shown (tabs never shown read nothing)."""
        self._active = True
        self._open()

    def set_attempts(self, attempts: tuple[int, ...]) -> None:
        """The earlier attempts whose logs can be shown."""
        if attempts != self.attempts:
            self.attempts = attempts
            self.query_one(".task-toolbar", Static).update(self._toolbar())

    def show(self, *, stream: str | None = None, attempt: int | None = None) -> None:
        """Show a stream of the latest attempt (``attempt=None``) or of an earlier one."""
        if stream is not None:
            self.stream = stream
        self.attempt = attempt
        self.query_one(".task-toolbar", Static).update(self._toolbar())
        if self._active:
            self._open()

    def refresh_remote(self) -> None:
        """Peek again at a remote run's log (a local file is followed by the log view itself)."""
        if self._active and self.reader.outputs_dir() is None:
            self._open()

    def action_other_stream(self) -> None:
        """Switch between stdout and stderr."""
        self.show(stream="stderr" if self.stream == "stdout" else "stdout", attempt=self.attempt)

    def action_earlier_attempt(self) -> None:
        """Step back one attempt; from the first, back to the latest."""
        if not self.attempts:
            self.app.notify("This task was not retried.", markup=False)
            return
        if self.attempt is None:
            self.show(attempt=self.attempts[-1])
            return
        earlier = [number for number in self.attempts if number < self.attempt]
        self.show(attempt=earlier[-1] if earlier else None)

    @work(thread=True, exclusive=True, group="task-log")
    def _open(self) -> None:
        try:
            path = self.reader.task_log(self.task_name, self.stream, self.attempt)
        except Exception:  # a provider that cannot peek now shows an empty log
            path = None
        self.app.call_from_thread(self._opened_path, path)

    def _opened_path(self, path: Path | None) -> None:
        if not self.is_attached:
            return
        if path != self._opened:
            self._opened = path
            self.query_one(LogView).open(path)
