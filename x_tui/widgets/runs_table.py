"""The runs table: every stored run, newest first, with its live state, age and duration.

Rows are keyed by run id and updated in place (a state change rewrites one cell; a new run is
added and the table re-sorted), never cleared and re-added, except when the filter changes. Every
cell is a ``rich.text.Text`` built by ``safe_text`` (a ``str`` cell would be parsed as markup). An
unreadable record gets a row of its own, keyed by its file, with the reason. Ages and durations
are redrawn only when their text changes (a heap of due times, not a sweep of every row), so a
table of ten thousand runs costs nothing while it sits still.

| Key | Action |
| --- | --- |
| ``enter`` | Open the highlighted run (posts ``RunsTable.RunChosen``). |
| ``up``/``down``, ``pgup``/``pgdn``, ``home``/``end`` | Move (DataTable's own keys). |
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable

from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns, run_id_time
from x_tui.widgets.safe_text import safe_text

COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("run", "Run", None),
    ("job", "Job", None),
    ("backend", "Backend", None),
    ("state", "State", 12),
    ("age", "Age", 4),
    ("duration", "Took", 6),
)
"""(column key, heading, fixed width or ``None`` to fit the content) of each column, in order."""

STATE_STYLES: Mapping[RunState | None, tuple[str, str]] = {
    RunState.PENDING: ("… pending", "dim"),
    RunState.RUNNING: ("▶ running", "bold cyan"),
    RunState.SUCCEEDED: ("✓ succeeded", "green"),
    RunState.FAILED: ("✗ failed", "bold red"),
    RunState.CANCELLED: ("■ cancelled", "yellow"),
    None: ("· checking", "dim"),
}
"""The text and style of each state: a glyph as well as a colour, so no state rests on colour."""

_EMPTY = "—"
_REASON_WIDTH = 12
"""How much of an unreadable record's reason its row shows (the line under the table has all)."""
_INSERT_CHUNK = 500
"""Rows added per turn of the event loop when many arrive at once (the store's first read)."""


def format_span(seconds: float) -> str:
    """A short human span: ``42s``, ``17m``, ``3h05m``, ``2d04h``.

    Args:
        seconds: The span; a negative one (a clock skew) reads as ``0s``.

    Returns:
        The text, at most six characters for spans under 100 days.
    """
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def format_age(seconds: float) -> str:
    """A coarse human age, at most four characters: ``42s``, ``17m``, ``5h``, ``12d``.

    Args:
        seconds: How long ago; a negative one (a clock skew) reads as ``0s``.

    Returns:
        The text.
    """
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    if whole < 86400:
        return f"{whole // 3600}h"
    return f"{whole // 86400}d"


def next_change(seconds: float, *, fine: bool) -> float:
    """How many seconds until a growing span shows another text.

    Args:
        seconds: The span now.
        fine: For :func:`format_span` (a running run's duration); else for :func:`format_age`.

    Returns:
        The wait, always positive.
    """
    if seconds < 0:
        return -seconds + 0.001
    if seconds < 60:
        step = 1
    elif seconds < 3600 or (fine and seconds < 86400):
        step = 60
    else:
        step = 3600 if (fine or seconds < 86400) else 86400
    return step - (seconds % step)


@dataclass(slots=True)
class _Row:
    key: str
    order: tuple[float, str]
    handle: RunHandle | None = None
    path: Path | None = None
    reason: str | None = None
    state: RunState | None = None
    ended: float | None = None
    problem: str | None = None


class RunsTable(DataTable[Text]):
    """Every stored run, newest first; see the module documentation."""

    HELP_TITLE = "Runs"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Open run", id="runs.open"),
    ]

    class RunChosen(Message):
        """The user chose a run (``enter`` on its row)."""

        def __init__(self, handle: RunHandle) -> None:
            """Name the run.

            Args:
                handle: The chosen run's handle.
            """
            super().__init__()
            self.handle = handle

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        min_refresh: float = 1.0,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Make an empty table.

        Args:
            clock: The current epoch time (tests pass a frozen one).
            min_refresh: The shortest wait between two redraws of ages and durations.
            id: The widget's id.
            classes: Its CSS classes.
        """
        super().__init__(cursor_type="row", zebra_stripes=False, id=id, classes=classes)
        self._clock = clock
        self._min_refresh = min_refresh
        self._rows: dict[str, _Row] = {}
        self._shown: set[str] = set()
        self._filter = ""
        self._due: list[tuple[float, str]] = []
        self._next_at: dict[str, float] = {}
        self._oldest: tuple[float, str] | None = None
        self._timer: Timer | None = None
        self._pending: list[_Row] = []

    def on_mount(self) -> None:
        """Add the columns."""
        for key, heading, width in COLUMNS:
            self.add_column(Text(heading), key=key, width=width)

    # Feeding the table --------------------------------------------------------------------------

    def show_stored(
        self,
        stored: StoredRuns,
        *,
        states: Callable[[str], RunState | None] = lambda run_id: None,
        ended: Callable[[str], float | None] = lambda run_id: None,
    ) -> None:
        """Make the table hold exactly what the store holds, touching only rows that changed.

        Args:
            stored: The store's handles and unreadable records.
            states: The last known state of a run, by id.
            ended: When a finished run ended, by id.
        """
        wanted: dict[str, _Row] = {}
        for handle in stored.handles:
            row = self._rows.get(handle.run_id)
            if row is None or (row.handle is not handle and row.handle != handle):
                row = _Row(
                    key=handle.run_id,
                    order=(handle.submitted_at.timestamp(), handle.run_id),
                    handle=handle,
                    state=states(handle.run_id),
                    ended=ended(handle.run_id),
                )
            wanted[row.key] = row
        for path, reason in stored.unreadable.items():
            key = f"file:{path}"
            row = self._rows.get(key)
            if row is None or row.reason != reason:
                row = _Row(key=key, order=(_file_time(path), path.name), path=path, reason=reason)
            wanted[key] = row
        for key in [key for key in self._rows if key not in wanted]:
            del self._rows[key]
            if key in self._shown:
                self._shown.discard(key)
                self.remove_row(key)
        added: list[_Row] = []
        for key, row in wanted.items():
            old = self._rows.get(key)
            self._rows[key] = row
            if old is row or not self._matches(row):
                continue
            if key in self._shown:
                self._rewrite(row)
            else:
                added.append(row)
        self._insert(added)

    def set_state(self, run_id: str, state: RunState, ended: float | None = None) -> None:
        """Show a run's new state.

        Args:
            run_id: The run.
            state: Its state.
            ended: When it ended, if it is final.
        """
        row = self._rows.get(run_id)
        if row is None:
            return
        row.state, row.ended, row.problem = state, ended, None
        if run_id in self._shown:
            self.update_cell(run_id, "state", self._state_cell(row))
            self.update_cell(run_id, "duration", self._duration_cell(row))
            self._schedule(row)

    def set_problem(self, run_id: str, reason: str) -> None:
        """Show that a run's backend could not say where it is.

        Args:
            run_id: The run.
            reason: The backend's message (untrusted).
        """
        row = self._rows.get(run_id)
        if row is None:
            return
        row.problem = reason
        if run_id in self._shown:
            self.update_cell(run_id, "state", self._state_cell(row))

    def set_filter(self, text: str) -> None:
        """Show only the runs whose id, job, backend or state contains ``text`` (any case).

        Args:
            text: The filter; empty shows every run.
        """
        text = text.strip().lower()
        if text == self._filter:
            return
        self._filter = text
        cursor = self.highlighted_key()
        self.clear()
        self._shown.clear()
        self._pending.clear()
        self._oldest = None
        self._insert([row for row in self._rows.values() if self._matches(row)])
        if cursor is not None and cursor in self._shown:
            self.move_cursor(row=self.get_row_index(cursor))

    @property
    def min_refresh(self) -> float:
        """The shortest wait, in seconds, between two redraws of ages and durations."""
        return self._min_refresh

    @property
    def filter_text(self) -> str:
        """The filter in force (lower case), empty when every run is shown."""
        return self._filter

    @property
    def shown_count(self) -> int:
        """How many rows the table shows (or is about to)."""
        return len(self._shown)

    # Reading the table --------------------------------------------------------------------------

    def highlighted_key(self) -> str | None:
        """The key of the highlighted row: a run id, or ``file:<path>`` for an unreadable record."""
        if self.row_count == 0:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # the cursor may point past the rows for one frame after a removal
            return None
        return key.value

    def highlighted_handle(self) -> RunHandle | None:
        """The highlighted run's handle (``None`` on an unreadable record or an empty table)."""
        key = self.highlighted_key()
        row = self._rows.get(key) if key is not None else None
        return row.handle if row is not None else None

    def describe(self, key: str | None) -> Text:
        """One line about a row, for the line under the table: the reason, the problem or where.

        Args:
            key: The row's key.

        Returns:
            The text (empty for no row).
        """
        row = self._rows.get(key) if key is not None else None
        if row is None:
            return Text()
        if row.path is not None:
            return Text.assemble(
                safe_text(str(row.path), "bold"), ": ", safe_text(row.reason or "", "red")
            )
        assert row.handle is not None
        if row.problem is not None:
            return Text.assemble(
                safe_text(row.handle.run_id, "bold"), ": ", safe_text(row.problem, "red")
            )
        return Text.assemble(
            safe_text(row.handle.run_id, "bold"),
            " from ",
            safe_text(row.handle.project),
            f"  submitted {row.handle.submitted_at:%Y-%m-%d %H:%M:%S} UTC",
        )

    def action_choose(self) -> None:
        """Post ``RunChosen`` for the highlighted run."""
        handle = self.highlighted_handle()
        if handle is not None:
            self.post_message(self.RunChosen(handle))

    # Internals ------------------------------------------------------------------------------------

    def _matches(self, row: _Row) -> bool:
        if not self._filter:
            return True
        words = [row.key, STATE_STYLES[row.state][0]]
        if row.handle is not None:
            words += [row.handle.job, row.handle.backend]
        else:
            words += ["unreadable", row.reason or ""]
        return any(self._filter in word.lower() for word in words)

    def _insert(self, rows: list[_Row]) -> None:
        if not rows:
            return
        rows.sort(key=lambda row: row.order, reverse=True)
        for row in rows:
            self._shown.add(row.key)
        self._pending.extend(rows)
        self._add_pending()

    def _add_pending(self) -> None:
        chunk, self._pending = self._pending[:_INSERT_CHUNK], self._pending[_INSERT_CHUNK:]
        cursor = self.highlighted_key()
        at_top = self.cursor_row == 0
        needs_sort = False
        for row in chunk:
            if row.key not in self._shown or row.key not in self._rows or row.key in self.rows:
                continue
            if self._oldest is not None and row.order > self._oldest:
                needs_sort = True
            self._oldest = row.order if self._oldest is None else min(self._oldest, row.order)
            self.add_row(*self._cells(row), key=row.key)
            self._schedule(row, rearm=False)
        if needs_sort:
            orders = {_run_text(row): row.order for row in self._rows.values()}
            self.sort("run", key=lambda cell: orders.get(cell.plain, (0.0, "")), reverse=True)
            # A cursor on the newest run stays on the newest (a run just submitted); one lower
            # down stays on its run.
            if at_top:
                self.move_cursor(row=0, animate=False)
            elif cursor is not None and cursor in self._shown:
                self.move_cursor(row=self.get_row_index(cursor), animate=False)
        self._rearm()
        if self._pending:
            self.call_later(self._add_pending)

    def _cells(self, row: _Row) -> tuple[Text, ...]:
        if row.handle is None:
            return (
                safe_text(_run_text(row), "red"),
                safe_text(_shorten(row.reason or "", _REASON_WIDTH), "red"),
                Text(_EMPTY, style="dim"),
                Text("✗ unreadable", style="bold red"),
                Text(format_age(self._clock() - row.order[0])),
                Text(_EMPTY, style="dim"),
            )
        return (
            safe_text(row.handle.run_id),
            safe_text(row.handle.job),
            safe_text(row.handle.backend),
            self._state_cell(row),
            Text(format_age(self._clock() - row.order[0])),
            self._duration_cell(row),
        )

    def _rewrite(self, row: _Row) -> None:
        for (key, _, _), cell in zip(COLUMNS, self._cells(row), strict=True):
            self.update_cell(row.key, key, cell)
        self._schedule(row)

    def _state_cell(self, row: _Row) -> Text:
        label, style = STATE_STYLES[row.state]
        if row.problem is not None:
            return Text("? unknown", style="bold magenta")
        return Text(label, style=style)

    def _duration_cell(self, row: _Row) -> Text:
        if row.state is None or row.state is RunState.PENDING:
            return Text(_EMPTY, style="dim")
        if row.state.is_final:
            if row.ended is None:
                return Text(_EMPTY, style="dim")
            return Text(format_span(row.ended - row.order[0]))
        return Text(format_span(self._clock() - row.order[0]), style="cyan")

    def _schedule(self, row: _Row, *, rearm: bool = True) -> None:
        now = self._clock()
        due = now + next_change(now - row.order[0], fine=_running(row))
        self._next_at[row.key] = due
        heapq.heappush(self._due, (due, row.key))
        if rearm:
            self._rearm()

    def _rearm(self) -> None:
        if not self._due or not self.is_mounted:
            return
        delay = max(self._min_refresh, self._due[0][0] - self._clock())
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        now = self._clock()
        touched: set[str] = set()
        while self._due and self._due[0][0] <= now:
            due, key = heapq.heappop(self._due)
            if key in touched or self._next_at.get(key) != due:
                continue
            if key not in self._shown or key not in self._rows:
                self._next_at.pop(key, None)
                continue
            touched.add(key)
            row = self._rows[key]
            self.update_cell(key, "age", Text(format_age(now - row.order[0])))
            if row.handle is not None:
                self.update_cell(key, "duration", self._duration_cell(row))
            due = now + next_change(now - row.order[0], fine=_running(row))
            self._next_at[key] = due
            heapq.heappush(self._due, (due, key))
        self._rearm()


def _run_text(row: _Row) -> str:
    """What the run column shows: the run id, or an unreadable record's file name stem."""
    if row.handle is not None:
        return row.handle.run_id
    return row.path.stem if row.path is not None else row.key


def _running(row: _Row) -> bool:
    return (
        row.state is not None
        and row.handle is not None
        and not row.state.is_final
        and (row.state is not RunState.PENDING)
    )


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _file_time(path: Path) -> float:
    moment = run_id_time(path.stem)
    if moment is not None:
        return moment.timestamp()
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
