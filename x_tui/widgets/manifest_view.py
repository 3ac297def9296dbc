"""A run's manifest as a table: each task's status, exit code, seconds and files, with retries.

One row per task of the job (tasks the manifest does not list yet are ``waiting``, the first of
them ``running``, with its elapsed time and the files it wrote so far, while the run goes on;
once a run ended they are ``cancelled``, ``cut short`` or ``not run``), and under a retried task
one row per earlier attempt. Below the table, the files the highlighted task wrote. ``enter`` on
a row posts :class:`ManifestView.TaskChosen` so the screen can open that task's (or attempt's)
logs. Every value from the manifest is untrusted and goes through ``safe_text``.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from x_tui.compute.backend import RunState
from x_tui.compute.worker.manifest import JobManifest, TaskOutcome, TaskStatus
from x_tui.widgets.measured_table import MeasuredTable
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
    "cancelled": "bold dark_orange",
    "cut short": "bold red",
    "not run": "dim",
}

STATUS_WIDTH = max(map(len, STATUS_STYLES))
"""The status column's width: its widest word."""


class ProgressInfo(Protocol):
    """The task running now, as its files show it."""

    @property
    def started_at(self) -> float | None:
        """When it started (seconds since the epoch), if known."""
        ...

    @property
    def files(self) -> tuple[str, ...]:
        """The files it wrote so far, without its logs."""
        ...

    @property
    def more(self) -> bool:
        """Whether it wrote more files than ``files`` lists."""
        ...


class ManifestRow(NamedTuple):
    """One row of the table and what the files panel says under it."""

    key: str
    """The row's key: ``task:<name>`` or ``attempt:<name>:<number>``."""
    task: str
    """The task."""
    attempt: int | None
    """The earlier attempt's number, or ``None`` for the task's own row."""
    cells: tuple[Text, ...]
    """The cells."""
    files: tuple[str, ...]
    """The files the task wrote (so far, while it runs)."""
    running: bool = False
    """Whether the task is running, so its files are those written so far."""


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
    state: RunState | None = None,
    progress: Mapping[str, ProgressInfo] | None = None,
    now: float | None = None,
) -> list[ManifestRow]:
    """The table's rows, each task followed by its earlier attempts.

    Args:
        manifest: The run's manifest, if it has one yet.
        tasks: The job's tasks in order (from its spec); tasks only the manifest names follow.
        attempts: Each retried task's earlier attempts, oldest first.
        running: Whether the run is still going, so the first task without an outcome is
            ``running`` rather than ``waiting``.
        state: The run's state, which names a task left without an outcome once the run ended
            (``cancelled``, ``cut short``, ``not run``).
        progress: Tasks with files but no outcome yet, by name: the running one's elapsed time
            and files so far.
        now: The time (seconds since the epoch) the elapsed time is counted to.

    Returns:
        The rows.
    """
    done = manifest.tasks if manifest is not None else ()
    outcomes: dict[str, TaskOutcome] = {task.name: task for task in done}
    order = list(tasks) + [name for name in outcomes if name not in tasks]
    order += [name for name in (progress or {}) if name not in order]
    rows: list[ManifestRow] = []
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
            rows.append(ManifestRow(f"task:{name}", name, None, cells, files))
        else:
            first = not next_found
            next_found = True
            seen = (progress or {}).get(name) if first else None
            label_state = _missing_state(running=running, state=state, first=first)
            files = seen.files if seen is not None else ()
            elapsed = Text("")
            if seen is not None and seen.started_at is not None and now is not None and running:
                elapsed = Text(_elapsed(now - seen.started_at), justify="right")
            count = Text("")
            if seen is not None:
                count = Text(f"{len(files)}{'+' if seen.more else ''}", justify="right")
            cells = (label, status_text(label_state), Text("-", style="dim"), elapsed, count)
            rows.append(
                ManifestRow(
                    f"task:{name}", name, None, cells, files, running=running and seen is not None
                )
            )
        for attempt in earlier:
            attempt_label = Text(f"  ↳ attempt {attempt.number}", style="dim")
            rows.append(
                ManifestRow(
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


def _elapsed(seconds: float) -> str:
    """A running task's time so far, in whole seconds under a minute (it ticks each second)."""
    seconds = max(0.0, seconds)
    return f"{int(seconds)} s" if seconds < 60 else format_seconds(seconds)


def _missing_state(*, running: bool, state: RunState | None, first: bool) -> str:
    """What a task the manifest has no outcome for is: by the run's state and its place."""
    if running:
        return "running" if first else "waiting"
    if not first:
        return "not run"
    if state is RunState.CANCELLED:
        return "cancelled"
    return "cut short"


def manifest_summary(
    manifest: JobManifest | None,
    problem: str | None,
    *,
    total: int,
    state: RunState | None = None,
    last_log_line: str | None = None,
) -> Text:
    """One line above the table: how far the run got, or why there is no manifest.

    Args:
        manifest: The run's manifest, if it has one.
        problem: Why it cannot be read, if it cannot.
        total: The job's task count.
        state: The run's state; once final, everything is said in the past tense.
        last_log_line: The combined log's last line, said when a run ended without a manifest.

    Returns:
        The line.
    """
    if problem is not None:
        return safe_text(problem, "bold red")
    ended = state is not None and state.is_final
    if manifest is None:
        if not ended:
            return Text(
                "No manifest yet: the worker writes it once the device probe has answered.",
                style="dim",
            )
        if state is RunState.CANCELLED:
            return Text("The run was cancelled before its worker wrote a manifest.", style="bold")
        line = safe_text("The run ended without a manifest", "bold red")
        if last_log_line:
            line.append_text(safe_text(f"; its log's last line was: {last_log_line}", "red"))
        else:
            line.append(": its worker never wrote one.", style="red")
        return line
    counts: dict[TaskStatus, int] = {}
    for task in manifest.tasks:
        counts[task.status] = counts.get(task.status, 0) + 1
    parts = [f"{count} {status.value}" for status, count in counts.items()]
    done = f"{len(manifest.tasks)} of {max(total, len(manifest.tasks))} tasks ran"
    if manifest.finished:
        head = "finished · "
    elif not ended:
        head = "in progress · "
    elif state is RunState.CANCELLED:
        head = "cancelled · "
    else:
        head = "ended unfinished · "
    line = Text(head + done)
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
        self._rows: list[ManifestRow] = []

    def compose(self) -> ComposeResult:
        """A summary line, the task table and the highlighted task's files."""
        yield Static(Text("Reading the run's files…", style="dim"), id="manifest-summary")
        yield MeasuredTable(cursor_type="row", zebra_stripes=True)
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
            # The status column is as wide as its widest word from the start, so a row that
            # turns from "running" to "cancelled" as the run ends is never cut.
            width = STATUS_WIDTH if key == "status" else None
            table.add_column(Text(label), key=key, width=width)

    def show(
        self,
        manifest: JobManifest | None,
        *,
        tasks: Sequence[str],
        attempts: Mapping[str, Sequence[AttemptInfo]],
        running: bool,
        problem: str | None = None,
        state: RunState | None = None,
        progress: Mapping[str, ProgressInfo] | None = None,
        now: float | None = None,
        last_log_line: str | None = None,
    ) -> None:
        """Show what the manifest says now; the highlighted row stays where it was.

        Args:
            manifest: The run's manifest, if it has one yet.
            tasks: The job's tasks in order.
            attempts: Each retried task's earlier attempts.
            running: Whether the run is still going.
            problem: Why the manifest cannot be read, if it cannot.
            state: The run's state (past tense once it is final).
            progress: The running task's start and files so far, by name.
            now: The time its elapsed time is counted to (seconds since the epoch).
            last_log_line: The combined log's last line, for a run that ended without a
                manifest.
        """
        self.query_one("#manifest-summary", Static).update(
            manifest_summary(
                manifest, problem, total=len(tasks), state=state, last_log_line=last_log_line
            )
        )
        rows = manifest_rows(
            manifest, tasks, attempts, running=running, state=state, progress=progress, now=now
        )
        if rows == self._rows:
            return
        self._rows = rows
        table: DataTable[Text] = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        for row in rows:
            table.add_row(*row.cells, key=row.key)
        if rows:
            table.move_cursor(row=min(max(cursor, 0), len(rows) - 1), animate=False)
        self._show_files(table.cursor_row)

    def _show_files(self, index: int) -> None:
        files_view = self.query_one("#manifest-files", Static)
        if not 0 <= index < len(self._rows):
            files_view.update(Text(""))
            return
        row = self._rows[index]
        task, files = row.task, row.files
        if row.attempt is not None:
            files_view.update(Text(f"attempt {row.attempt}: enter opens its logs", style="dim"))
            return
        if not files:
            note = "no files besides its logs yet" if row.running else "no files besides its logs"
            files_view.update(safe_text(f"{task}: {note}", "dim"))
            return
        so_far = " so far" if row.running else ""
        text = safe_text(f"{task} wrote {len(files)} file(s){so_far}:", "bold")
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
            row = self._rows[event.cursor_row]
            self.post_message(self.TaskChosen(row.task, row.attempt))
