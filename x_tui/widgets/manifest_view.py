"""A run's manifest as a table: each task's status, exit code, seconds and files, with retries.

One row per task of the job (tasks the manifest does not list yet are ``waiting``, the first of
them ``running`` while the run goes on), and under a retried task one row per earlier attempt.
Below the table, the files the highlighted task wrote. ``enter`` on a row posts
:class:`ManifestView.TaskChosen` so the screen can open that task's (or attempt's) logs. Every
value from the manifest is untrusted and goes through ``safe_text``.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from x_tui.compute.manifest import JobManifest, TaskOutcome, TaskStatus
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.spec_view import format_seconds

MAX_FILES_SHOWN = 200
"""At most this many of a task's files are listed under the table."""

STATUS_STYLES: Mapping[str, str] = {
    "succeeded": "bold green",
    "failed": "bold red",
    "timed-out": "bold dark_orange",
    "running": "bold dodger_blue1",
    "waiting": "dim",
}


class AttemptInfo(Protocol):
    """An earlier attempt of a retried task, as the table needs it."""

    @property
    def number(self) -> int:
        """Which try (1 is the first)."""
        ...

    @property
    def status(self) -> str:
        """How it ended."""
        ...

    @property
    def returncode(self) -> int | None:
        """Its exit code, if it had one."""
        ...

    @property
    def seconds(self) -> float | None:
        """How long it ran, if recorded."""
        ...


def exit_text(returncode: int | None) -> Text:
    """An exit code as shown: ``0``, ``3``, ``-9 SIGKILL``, or ``-`` when there was none."""
    if returncode is None:
        return Text("-", style="dim")
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "signal"
        return Text(f"{returncode} {name}", style="red")
    return Text(str(returncode), style="" if returncode == 0 else "red")


def status_text(status: str) -> Text:
    """A task status in its colour (plain text, never markup)."""
    return safe_text(status, STATUS_STYLES.get(status, ""))


def manifest_rows(
    manifest: JobManifest | None,
    tasks: Sequence[str],
    attempts: Mapping[str, Sequence[AttemptInfo]],
    *,
    running: bool,
) -> list[tuple[str, str, int | None, tuple[Text, ...], tuple[str, ...]]]:
    """The table's rows: ``(row key, task, attempt, cells, files)``.

    Args:
        manifest: The run's manifest, if it has one yet.
        tasks: The job's tasks in order (from its spec); tasks only the manifest names follow.
        attempts: Each retried task's earlier attempts, oldest first.
        running: Whether the run is still going, so the first task without an outcome is
            ``running`` rather than ``waiting``.

    Returns:
        The rows, each task followed by its earlier attempts.
    """
    done = manifest.tasks if manifest is not None else ()
    outcomes: dict[str, TaskOutcome] = {task.name: task for task in done}
    order = list(tasks) + [name for name in outcomes if name not in tasks]
    rows: list[tuple[str, str, int | None, tuple[Text, ...], tuple[str, ...]]] = []
    next_found = False
    for name in order:
        outcome = outcomes.get(name)
        earlier = attempts.get(name, ())
        label = safe_text(name)
        if earlier:
            label.append(f"  (try {len(earlier) + 1})", style="dim")
        if outcome is not None:
            files = outcome.outputs
            cells = (
                label,
                status_text(outcome.status.value),
                exit_text(outcome.returncode),
                Text(format_seconds(outcome.seconds), justify="right"),
                Text(f"{len(files)}", justify="right"),
            )
        else:
            state = "running" if running and not next_found else "waiting"
            next_found = True
            files = ()
            cells = (label, status_text(state), Text("-", style="dim"), Text(""), Text(""))
        rows.append((f"task:{name}", name, None, cells, files))
        for attempt in earlier:
            attempt_label = Text(f"  ↳ attempt {attempt.number}", style="dim")
            rows.append(
                (
                    f"attempt:{name}:{attempt.number}",
                    name,
                    attempt.number,
                    (
                        attempt_label,
                        status_text(attempt.status),
                        exit_text(attempt.returncode),
                        Text(format_seconds(attempt.seconds), justify="right"),
                        Text(""),
                    ),
                    (),
                )
            )
    return rows


def manifest_summary(manifest: JobManifest | None, problem: str | None, *, total: int) -> Text:
    """One line above the table: how far the run got, or why there is no manifest."""
    if problem is not None:
        return safe_text(problem, "bold red")
    if manifest is None:
        return Text("No manifest yet: the worker writes it after the first task.", style="dim")
    counts: dict[TaskStatus, int] = {}
    for task in manifest.tasks:
        counts[task.status] = counts.get(task.status, 0) + 1
    parts = [f"{count} {status.value}" for status, count in counts.items()]
    done = f"{len(manifest.tasks)} of {max(total, len(manifest.tasks))} tasks ran"
    line = Text(("finished · " if manifest.finished else "in progress · ") + done)
    if parts:
        line.append(" · " + ", ".join(parts))
    return line


class ManifestView(Vertical):
    """A run's tasks with their outcomes and earlier attempts; ``enter`` opens a task's logs."""

    DEFAULT_CSS = """
    ManifestView {
        height: 1fr;
    }
    ManifestView > #manifest-summary {
        height: auto;
        padding: 0 1;
    }
    ManifestView > DataTable {
        height: 1fr;
    }
    ManifestView > #manifest-files {
        height: auto;
        max-height: 8;
        padding: 0 1;
        border-top: solid $panel-lighten-2;
    }
    """

    @dataclass
    class TaskChosen(Message):
        """The user chose a task's row (``attempt`` is set for an earlier attempt's row).

        Attributes:
            task: The task's name.
            attempt: The earlier attempt's number, or ``None`` for the latest.
        """

        task: str
        attempt: int | None

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """Build an empty view (see :meth:`show`)."""
        super().__init__(id=id, classes=classes)
        self._rows: list[tuple[str, str, int | None, tuple[Text, ...], tuple[str, ...]]] = []

    def compose(self) -> ComposeResult:
        """A summary line, the task table and the highlighted task's files."""
        yield Static(Text("No manifest yet.", style="dim"), id="manifest-summary")
        table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True)
        yield table
        yield Static(Text(""), id="manifest-files")

    def on_mount(self) -> None:
        """Add the columns."""
        table = self.query_one(DataTable)
        for label, key in (
            ("task", "task"),
            ("status", "status"),
            ("exit", "exit"),
            ("seconds", "seconds"),
            ("files", "files"),
        ):
            table.add_column(Text(label), key=key)

    def show(
        self,
        manifest: JobManifest | None,
        *,
        tasks: Sequence[str],
        attempts: Mapping[str, Sequence[AttemptInfo]],
        running: bool,
        problem: str | None = None,
    ) -> None:
        """Show what the manifest says now; the highlighted row stays where it was.

        Args:
            manifest: The run's manifest, if it has one yet.
            tasks: The job's tasks in order.
            attempts: Each retried task's earlier attempts.
            running: Whether the run is still going.
            problem: Why the manifest cannot be read, if it cannot.
        """
        self.query_one("#manifest-summary", Static).update(
            manifest_summary(manifest, problem, total=len(tasks))
        )
        rows = manifest_rows(manifest, tasks, attempts, running=running)
        if [(key, cells) for key, _, _, cells, _ in rows] == [
            (key, cells) for key, _, _, cells, _ in self._rows
        ]:
            return
        self._rows = rows
        table: DataTable[Text] = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        for key, _task, _attempt, cells, _files in rows:
            table.add_row(*cells, key=key)
        if rows:
            table.move_cursor(row=min(max(cursor, 0), len(rows) - 1), animate=False)
        self._show_files(table.cursor_row)

    def _show_files(self, index: int) -> None:
        files_view = self.query_one("#manifest-files", Static)
        if not 0 <= index < len(self._rows):
            files_view.update(Text(""))
            return
        _key, task, attempt, _cells, files = self._rows[index]
        if attempt is not None:
            files_view.update(Text(f"attempt {attempt}: enter opens its logs", style="dim"))
            return
        if not files:
            files_view.update(safe_text(f"{task}: no files besides its logs", "dim"))
            return
        text = safe_text(f"{task} wrote {len(files)} file(s):", "bold")
        for name in files[:MAX_FILES_SHOWN]:
            text.append("\n  ")
            text.append_text(safe_text(name))
        if len(files) > MAX_FILES_SHOWN:
            text.append(f"\n  … and {len(files) - MAX_FILES_SHOWN} more", style="dim")
        files_view.update(text)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_files(event.cursor_row)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self._rows):
            _key, task, attempt, _cells, _files = self._rows[event.cursor_row]
            self.post_message(self.TaskChosen(task, attempt))
