"""The runs table: every stored run, newest first, with its live state, age and duration; a
sweep's runs grouped under a row of their own.

Rows are keyed by run id and updated in place (a state change rewrites one cell; a new run is
added and the table re-sorted), never cleared and re-added, except when the filter changes. Every
cell is a ``rich.text.Text`` built by ``safe_text`` (a ``str`` cell would be parsed as markup). An
unreadable record gets a row of its own, keyed by its file, with the reason. A sweep gets a group
row keyed ``sweep:<sweep_id>`` with its runs right under it (:mod:`x_tui.widgets.run_rows`). Ages
and durations are redrawn only when their text changes (a heap of due times, not a sweep of every
row), so a table of ten thousand runs costs nothing while it sits still.

Rows are built as they come into view, a page at a time: the table holds the first rows of the
order, down to a page past the cursor and the bottom of the view, and keeps the rest, sorted, in
a backlog that scrolling, paging and moving the cursor draw from (``end`` draws all of it, a
chunk per turn of the event loop, the cursor following). Filtering and sorting work on every run
the table knows, built or not, and the count of rows shown counts them all. A listing of many runs
(the whole store, read once its newest runs are on the screen) is taken in a slice per turn of
the event loop, so that keys and frames go on meanwhile; the table shows what it held until the
listing is in, and a state change, a filter or a newer listing that comes meanwhile holds.

Columns come in the order they give way in a narrow terminal (the rightmost first): the run id
and its state stay. By default only the runs of the project the app was opened on are shown
(``p`` shows every project's, and only then the Project column); ``o`` sorts by the next column
and ``O`` turns the order round (the sorted column's heading carries ▼ or ▲); a sweep's runs stay
under their group row, in grid order.

| Key | Action |
| --- | --- |
| ``enter`` | Open the highlighted run (posts ``RunsTable.RunChosen``); on a sweep, its first run. |
| ``j``/``k``, ``up``/``down``, ``pgup``/``pgdn`` | Move the cursor. |
| ``g``/``home``, ``G``/``end`` | Move the cursor to the first, the last row. |
| ``p`` | Only this project's runs, or every project's. |
| ``o``, ``O`` | Sort by the next column; reverse the order. |
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import ClassVar, TypeVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.theme import Theme
from textual.timer import Timer
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.compute.sweeps import StoredSweeps, Sweep
from x_tui.widgets import run_rows
from x_tui.widgets.first_focus import FocusStyledWithScreen
from x_tui.widgets.run_cells import RedrawQueue, format_age
from x_tui.widgets.run_rows import Membership, RunRow, SortKey, group_key
from x_tui.widgets.run_states import STATE_COMPONENTS, StateStyles, state_css, state_styles
from x_tui.widgets.table_cells import TextCells

COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("run", "Run", None),
    ("state", "State", 12),
    ("age", "Age", 4),
    ("duration", "Took", 6),
    ("job", "Job", None),
    ("project", "Project", None),
    ("backend", "Backend", None),
)
"""(column key, heading, fixed width or ``None`` to fit the content) of each column, in order:
the order they give way in when the terminal is narrow, the rightmost first."""

COLUMN_KEYS = tuple(key for key, _, _ in COLUMNS)

SORTS: tuple[str | None, ...] = (None, *(key for key in COLUMN_KEYS if key != "age"))
"""What ``o`` cycles through: newest first (``None``, the Age column), then each other column
shown."""

WATCH_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("progress", "Progress", 16),
    ("gpu", "GPU", 4),
    ("cost", "Cost", 8),
)
"""(column key, heading, width) of the columns shown while a run is watched: its progress and
ETA (or its flags), mean GPU use, cost so far. Each appears only while some running run has
something to show and it fits beside the columns before it, so a narrow table hides them
rather than cut them off, the cost first of all."""

WatchCells = tuple[Text, Text, Text]
"""A run's progress (or flags), GPU and cost cells."""

PAGE_ROWS = 200
"""Rows built at a time: the table keeps this many built past the cursor and the view's bottom."""
_DRAIN_CHUNK = 2000
"""Rows built per turn of the event loop while ``end`` draws the whole backlog."""
LISTING_SLICE = 4000
"""Runs of a listing taken in per turn of the event loop: a listing of more (the whole store, read
after its newest runs are on the screen) is taken a slice at a time, keys and frames going on
between the slices, rather than in one turn (0.37-0.49 s for 100,000 runs)."""
LISTING_YIELDS = 8
"""Turns of the event loop the listing leaves to the rest of the app between two slices. A key
goes from the app to the screen and the table, and its move on to the frame, a turn each: after a
single turn each of those steps waited for a slice (with 100,000 runs the slowest key of a sample
came 0.15-0.33 s after it was pressed); with eight they all go between two slices (0.09-0.18
s)."""
REFIT_ROWS = 2 * PAGE_ROWS
"""Built rows past which a column that gave way is not put back in place: the table is refilled
for it (see :data:`REFILL_ROWS`)."""
REFILL_ROWS = 10 * PAGE_ROWS
"""Built rows up to which a widened table is refilled at once to put a column back, where the
cursor is within :data:`REFIT_ROWS` of the top (in a store of 100,000 runs the refill took
0.10 s with 1,700 rows built, 0.34 s with all of them); past them, or with the cursor further
down, it comes back with the next refill."""
GIVE_WAY = ("backend", "project", "job", "duration", "age")
"""The columns that give way, in this order, where the table is too narrow for them all (the run
and its state stay): hidden, rather than cut off at the right edge."""
WATCH_GIVE_WAY = ("backend", "project", "job", "duration")
"""Those that give way, in this order, to make room for a watched run's progress: the job (a
run's id begins with its job's name, and a sweep's run sits under its group's row), and last
the time taken (a running run's is about its age), so that the progress shows at 80x24."""
_STATE_SORTS = frozenset({"state", "duration"})
"""The sorts a run's state change can move its row in."""
_Pending = tuple[SortKey, RunRow]
_Placed = tuple[bool, SortKey, RunRow]
"""Whether a row of a listing being taken is shown, its sort key, the row."""
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class RunsTable(FocusStyledWithScreen, DataTable[Text]):
    """Every stored run, newest first, sweeps grouped; see the module documentation."""

    HELP_TITLE = "Runs"
    COMPONENT_CLASSES: ClassVar[set[str]] = {*DataTable.COMPONENT_CLASSES, *STATE_COMPONENTS}
    DEFAULT_CSS = state_css("RunsTable")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Open run", id="runs.open"),
        Binding("j", "cursor_down", "Down", show=False, id="runs.down"),
        Binding("k", "cursor_up", "Up", show=False, id="runs.up"),
        Binding("g,home", "first_row", "First run", show=False, id="runs.first"),
        Binding("G,end", "last_row", "Last run", show=False, id="runs.last"),
        Binding("p", "toggle_project", "Projects", id="runs.project_filter"),
        Binding("o", "next_sort", "Sort", id="runs.sort"),
        Binding("O", "reverse_sort", "Reverse sort", show=False, id="runs.reverse_sort"),
    ]

    class ViewChanged(Message):
        """The project filter or the sort order changed (the screen retitles the pane)."""

    class Listed(Message):
        """A listing taken in slices is in the table whole (the screen retitles the pane)."""

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
        page_rows: int | None = None,
        listing_slice: int | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Make an empty table.

        Args:
            clock: The current epoch time (tests pass a frozen one).
            min_refresh: The shortest wait between two redraws of ages and durations.
            page_rows: Rows built at a time (default :data:`PAGE_ROWS`).
            listing_slice: Runs of a listing taken in per turn of the event loop (default
                :data:`LISTING_SLICE`).
            id: The widget's id.
            classes: Its CSS classes.
        """
        super().__init__(cursor_type="row", zebra_stripes=False, id=id, classes=classes)
        self._clock = clock
        self._min_refresh = min_refresh
        self._rows: dict[str, RunRow] = {}
        self._groups: dict[str, RunRow] = {}
        self._members: dict[str, list[RunRow]] = {}
        self._memberships: dict[str, Membership] = {}
        self._shown: set[str] = set()
        self._filter = ""
        self._redraws = RedrawQueue()
        self._oldest: SortKey | None = None
        self._timer: Timer | None = None
        self._pending: list[_Pending] = []
        self._page = page_rows if page_rows is not None else PAGE_ROWS
        self._slice = max(1, listing_slice if listing_slice is not None else LISTING_SLICE)
        self._listing: _Taking | None = None
        """The listing being taken in slices, if one is."""
        self._adding = self._to_last = self._reorder_due = self._refill_due = False
        self._watch: dict[str, WatchCells] = {}
        self._watch_filled: set[str] = set()
        """The rows whose watch cells were last filled with a watched run's."""
        self._project: str | None = None
        self._project_only = True
        self._sort: str | None = None
        self._descending = True
        self._columns: tuple[str, ...] = ()
        """The keys of the columns of :data:`COLUMNS` shown, in order."""
        self._columns_wanted: tuple[str, ...] = ()
        """Those the project filter wants (:meth:`_wanted_columns`); some may give way to a
        watched run's progress (:data:`GIVE_WAY`)."""
        self._given_way: dict[str, int] = {}
        """The width each column that gave way took when it did."""
        self._picks: tuple[int, ...] | None = None
        """Where each of them is in :data:`COLUMNS` (``None``: every column is shown)."""
        self._state_styles: StateStyles | None = None
        self._laid_out = False
        """Whether the first frame with the table in it was drawn (before it, a screenful of
        rows is built rather than a page more)."""
        self._page_after_frame = False
        self._text_cells: TextCells | None = None
        self._drawing_style: Style | None = None
        """The table's own style while its lines are drawn (see :meth:`render_lines`)."""

    def on_mount(self) -> None:
        """Add the columns."""
        self._add_columns()
        self.watch(self, "virtual_size", self._virtual_size_changed, init=False)
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    @property
    def state_styles(self) -> StateStyles:
        """The states' styles, as the theme has them now (see ``x_tui.widgets.run_states``)."""
        if self._state_styles is None:
            self._state_styles = state_styles(self)
        return self._state_styles

    def _theme_changed(self, _theme: Theme) -> None:
        """Restyle the state cells in the new theme's colours."""
        styles = state_styles(self)
        if styles != self._state_styles:
            self._state_styles = styles
            for row in self._all_rows():
                self._rewrite(row)

    # Drawing --------------------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the lines in ``crop``, working out the table's own style once for all of them.

        ``DataTable`` asks for :attr:`rich_style` for every line it draws, and each ask walks the
        table's ancestors: about 1 ms of the 12-13 ms a screenful of runs took to draw afresh.

        Args:
            crop: The region to draw.

        Returns:
            One strip per line.
        """
        self._drawing_style = super().rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._drawing_style = None

    @property
    def rich_style(self) -> Style:
        """The table's style: while its lines are drawn, the one worked out for them."""
        drawing = self._drawing_style
        return drawing if drawing is not None else super().rich_style

    def _render_cell(  # noqa: PLR0917 (DataTable's signature)
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """A cell's lines, as ``DataTable`` draws them; a run's one-line text cell is drawn by
        :class:`~x_tui.widgets.table_cells.TextCells`, at a third of the cost (see there)."""
        if min(row_index - self.fixed_rows, column_index - self.fixed_columns) < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        cache_key = (  # as DataTable keys its cache of drawn cells
            row_key,
            column_key,
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        drawn = self._cell_render_cache.get(cache_key)
        if drawn is not None:
            return drawn
        cell = self._get_row_renderables(row_index).cells[column_index]
        if self.rows[row_key].height == 1 and isinstance(cell, Text):
            component_style, post_style = self._get_styles_to_render_cell(
                False,
                False,
                False,
                hover,
                cursor,
                self.show_cursor,
                self._show_hover_cursor,
                self.cursor_foreground_priority == "css",
                self.cursor_background_priority == "css",
            )
            if self._text_cells is None:
                self._text_cells = TextCells(self.app.console, self.app.console_options)
            pre_style = base_style + Style.from_meta({"row": row_index, "column": column_index})
            lines = self._text_cells.render(
                cell, width, self.cell_padding, pre_style + component_style, post_style
            )
            if lines is not None:
                self._cell_render_cache[cache_key] = lines
                return lines
        return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)

    # Project filter and sort ----------------------------------------------------------------------

    def set_project(self, project: str | None) -> None:
        """Name the project whose runs are shown while the project filter is on.

        Args:
            project: The project's root (as a handle records it); ``None`` outside a project,
                where every run is shown.
        """
        if project == self._project:
            return
        self._project = project
        self._refill()

    @property
    def project_filter(self) -> str | None:
        """The project whose runs only are shown, or ``None`` when every project's are."""
        return self._project if self._project_only else None

    @property
    def sort_column(self) -> str | None:
        """The column sorted by (``None``: newest first)."""
        return self._sort

    def action_toggle_project(self) -> None:
        """Show only this project's runs, or every project's."""
        if self._project is None:
            self.app.notify("Not in a project: every run is shown", markup=False)
            return
        self._project_only = not self._project_only
        self._refill()
        self.post_message(self.ViewChanged())

    def action_next_sort(self) -> None:
        """Sort by the next column shown (after the last, newest first again)."""
        sorts = [key for key in SORTS if key is None or key in self._columns]
        position = sorts.index(self._sort) if self._sort in sorts else 0
        self._sort = sorts[(position + 1) % len(sorts)]
        self._descending = self._sort in (None, "duration")
        self._sorted()

    def action_reverse_sort(self) -> None:
        """Turn the order round."""
        self._descending = not self._descending
        self._sorted()

    def _sorted(self) -> None:
        self._oldest = None
        self._label_columns()
        self._reorder()
        self.post_message(self.ViewChanged())

    def _wanted_columns(self) -> tuple[str, ...]:
        """The columns to show: the Project column only while the runs of every project are
        (as k9s shows a namespace column only across namespaces); within one project the
        pane's title names it, and its width goes to the others."""
        if self.project_filter is not None:
            return tuple(key for key in COLUMN_KEYS if key != "project")
        return COLUMN_KEYS

    def _add_columns(self) -> None:
        """Add the columns wanted now (the table has none), labelled with the sort."""
        self._columns_wanted = self._wanted_columns()
        self._given_way.clear()
        self._shown_columns(self._columns_wanted)
        if self._sort is not None and self._sort not in self._columns:
            self._sort, self._descending = None, True
        for key, heading, width in COLUMNS:
            if key in self._columns:
                self.add_column(Text(heading), key=key, width=width)
        self._label_columns()

    def _shown_columns(self, keys: tuple[str, ...]) -> None:
        self._columns = keys
        picks = tuple(COLUMN_KEYS.index(key) for key in keys)
        self._picks = None if keys == COLUMN_KEYS else picks

    def _cells(self, row: RunRow, now: float) -> tuple[Text, ...]:
        """The row's cells in the columns shown."""
        cells = run_rows.cells(row, now, self.state_styles, self._members.get(row.key, ()))
        return cells if self._picks is None else tuple(cells[place] for place in self._picks)

    def _label_columns(self) -> None:
        sorted_by = self._sort if self._sort is not None else "age"
        for key, heading, _ in COLUMNS:
            label = Text(heading)
            if key == sorted_by:
                label.append("▼" if self._descending else "▲", style="bold")
            column = self.columns.get(ColumnKey(key))
            if column is not None:
                column.label = label
        self._require_update_dimensions = True
        self.refresh()

    # Moving ---------------------------------------------------------------------------------------

    def action_first_row(self) -> None:
        """Move the cursor to the first row."""
        self._to_last = False
        if self.row_count:
            self.move_cursor(row=0, animate=False)

    def action_last_row(self) -> None:
        """Move the cursor to the last row (building the rows not built yet, a chunk a turn)."""
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)
        if self._pending:
            self._to_last = True
            self._schedule_adding()

    def reveal(self, key: str) -> bool:
        """Move the cursor to a row, building the rows down to it if need be.

        Args:
            key: The row's key (a run id, ``file:<path>`` or ``sweep:<sweep_id>``).

        Returns:
            Whether the table shows such a row.
        """
        self._build_through(key)
        if key not in self.rows:
            return False
        self.move_cursor(row=self.get_row_index(key), animate=False)
        return True

    @property
    def built_count(self) -> int:
        """How many of the rows shown are built (the rest are built as they come into view)."""
        return self.row_count

    def watch_cursor_coordinate(
        self, old_coordinate: Coordinate, new_coordinate: Coordinate
    ) -> None:
        """Build the next rows as the cursor nears the last built one."""
        super().watch_cursor_coordinate(old_coordinate, new_coordinate)
        self._schedule_adding()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Build the next rows as the view nears the last built one."""
        super().watch_scroll_y(old_value, new_value)
        self._schedule_adding()

    def show_watch(self, cells: Mapping[str, WatchCells]) -> None:
        """Show the running runs' progress, GPU use and cost so far (none: hide the columns).

        Each watch column shows only where it fits beside the columns before it; to make room
        for the progress, the Backend column, then the Project column, give way while a run is
        watched (:data:`WATCH_GIVE_WAY`).

        Args:
            cells: Each watched run's cells, by run id; other rows show nothing there.
        """
        self._watch = dict(cells)
        self._fit_columns(fill_watch=True)

    def _fit_columns(self, *, fill_watch: bool = False) -> None:
        """Show the columns that fit the table's width: the run's own give way from the right
        (:data:`GIVE_WAY`) rather than be cut off, and a watched run's where they fit."""
        room = self.scrollable_content_region.width  # none before the table is laid out
        widths = self._column_widths()
        base = list(self._columns_wanted)
        used = sum(widths.get(key, 0) for key in base)
        for giving in GIVE_WAY if room else ():
            if used <= room:
                break
            if giving in base:
                base.remove(giving)
                used -= widths.get(giving, 0)
        own = list(base)
        wanted: list[str] = []
        for key, _heading, column_width in WATCH_COLUMNS if self._watch else ():
            need = column_width + 2 * self.cell_padding
            for giving in WATCH_GIVE_WAY if room and not wanted else ():  # room for the progress
                if used + need <= room:
                    break
                if giving in base:
                    base.remove(giving)
                    used -= widths.get(giving, 0)
            if room and used + need > room:
                break
            used += need
            wanted.append(key)
        if not wanted:
            base = own
        if self.row_count > REFIT_ROWS:
            # A column put back needs a cell for every row built (some 3 s for 100,000): with
            # this many built, columns only give way here. They come back with a refill, which
            # builds down to the cursor's row and a page past it: at once while the cursor is
            # that near the top (REFILL_ROWS), else with the next refill (a filter, ``p``, a sort).
            kept = [key for key in base if key in self._columns]
            if kept != base and self.cursor_row < REFIT_ROWS and self.row_count <= REFILL_ROWS:
                self._refill_soon()
            base = kept
        if self._place_columns(tuple(base), wanted, widths) or fill_watch:
            self._fill_watch(wanted)

    def _fill_watch(self, shown: list[str]) -> None:
        """Put the watched runs' cells in the watch columns ``shown``, and blank those of runs
        no longer watched (a watch column comes blank in every row)."""
        keys = set(self._watch) | self._watch_filled
        blank = Text("")
        for run_key in keys:
            if run_key not in self.rows:
                continue
            cells = self._watch.get(run_key)
            for position, (key, _heading, _width) in enumerate(WATCH_COLUMNS):
                if key in shown:
                    self.update_cell(run_key, key, cells[position] if cells else blank)
        self._watch_filled = {key for key in self._watch if key in self.rows}

    def _column_widths(self) -> dict[str, int]:
        """The width each column of :data:`COLUMNS` wanted takes, as drawn now or when it gave
        way."""
        widths = dict(self._given_way)
        for key in self._columns:
            column = self.columns.get(ColumnKey(key))
            if column is not None:
                widths[key] = column.get_render_width(self)
        return widths

    def _place_columns(
        self, base: tuple[str, ...], watch: list[str], widths: dict[str, int]
    ) -> bool:
        """Show the columns ``base`` of :data:`COLUMNS` and then the watch columns ``watch``,
        each in its place; whether any changed (the watch columns' cells are to be filled)."""
        shown_watch = [key for key, _heading, _width in WATCH_COLUMNS if key in self.columns]
        if base == self._columns and watch == shown_watch:
            return False
        kept = 0
        while kept < min(len(base), len(self._columns)) and base[kept] == self._columns[kept]:
            kept += 1
        for key in shown_watch:  # put back after the base columns, in their order
            self.remove_column(key)
        self._watch_filled = set()
        for key in self._columns[kept:]:
            self._given_way[key] = widths.get(key, 0)
            self.remove_column(key)
        now = self._clock()
        added = base[kept:]
        self._shown_columns(base)
        for key, heading, width in COLUMNS:
            if key in added:
                self._given_way.pop(key, None)
                self.add_column(Text(heading), key=key, width=width)
        for row_key in list(self.rows) if added else ():
            row = self._row(str(row_key.value))
            if row is not None:
                cells = dict(zip(self._columns, self._cells(row, now), strict=True))
                for key in added:
                    self.update_cell(row_key, key, cells[key])
        for key, heading, width in WATCH_COLUMNS:
            if key in watch:
                self.add_column(Text(heading), key=key, width=width, default=Text(""))
        self._label_columns()
        return True

    def _base_width(self) -> int:
        """The width the columns of :data:`COLUMNS` wanted take (those that gave way too)."""
        widths = self._column_widths()
        return sum(widths.get(key, 0) for key in self._columns_wanted)

    @property
    def wanted_width(self) -> int:
        """The width every column the table would show takes: those of :data:`COLUMNS` shown
        and, while a run is watched, the watch columns (shown only where they fit)."""
        watch = sum(width + 2 * self.cell_padding for _key, _heading, width in WATCH_COLUMNS)
        return self._base_width() + (watch if self._watch else 0)

    @property
    def watching(self) -> bool:
        """Whether some run's progress, GPU use or cost is shown."""
        return bool(self._watch)

    def on_resize(self) -> None:
        """Fit the columns to the new width."""
        self._fit_columns()

    def _virtual_size_changed(self) -> None:
        """Fit the columns again: a row built may have widened one."""
        self._fit_columns()

    # Feeding the table --------------------------------------------------------------------------

    def show_stored(
        self,
        stored: StoredRuns,
        *,
        states: Callable[[str], RunState | None] = lambda run_id: None,
        ended: Callable[[str], float | None] = lambda run_id: None,
    ) -> None:
        """Make the table hold exactly what the store holds, touching only rows that changed.

        A listing of more runs than a slice (:data:`LISTING_SLICE`) is taken in a slice per turn
        of the event loop, and :class:`Listed` posted once it is in; the table shows what it
        held until then. A newer listing takes the place of one still being taken.

        Args:
            stored: The store's handles and unreadable records.
            states: The last known state of a run, by id (a change that comes while a listing
                is taken in slices is kept, and its run's row takes it).
            ended: When a finished run ended, by id.
        """
        self._end_listing()
        if len(stored.handles) <= self._slice:
            wanted = run_rows.stored_rows(
                stored, self._rows, states=states, ended=ended, memberships=self._memberships
            )
            fresh = {key: row for key, row in wanted.items() if self._rows.get(key) is not row}
            self._take(wanted, fresh, list(fresh.values()))
            return
        self._listing = taking = _Taking(stored)
        late = taking.late

        def state_now(run_id: str) -> RunState | None:
            return late[run_id][0] if run_id in late else states(run_id)

        def ended_now(run_id: str) -> float | None:
            return late[run_id][1] if run_id in late else ended(run_id)

        self._take_in_slices(taking, state_now, ended_now)

    @property
    def taking_listing(self) -> bool:
        """Whether a listing is being taken in slices (:class:`Listed` comes once it is in)."""
        return self._listing is not None

    def _end_listing(self) -> None:
        """Forget the listing being taken in slices, if one is (it stops at its next slice)."""
        self._listing = None

    @work(group="listing", exclusive=True, description="a listing taken in slices")
    async def _take_in_slices(
        self,
        taking: _Taking,
        states: Callable[[str], RunState | None],
        ended: Callable[[str], float | None],
    ) -> None:
        """Take in a listing a slice at a time, working out as each new row is made whether it
        is shown and where, so that the last turn only puts the rows in (about 15 ms for 100,000
        runs, the page past the view built a turn later; a turn for the whole listing took
        0.37-0.49 s)."""
        wanted, placed, rest = taking.rows, taking.placed, taking.rest
        fresh: dict[str, RunRow] = {}
        shown: list[_Pending] = []  # the placed rows shown, with their keys: the last turn's
        shown_keys: list[str] = []  # lists, made a slice at a time
        view = self._view()
        memberships = self._memberships
        stored = taking.stored
        handles = stored.handles
        for start in range(0, len(handles), self._slice):
            for _ in range(LISTING_YIELDS):  # keys, frames and state changes go first
                await asyncio.sleep(0)
            if self._listing is not taking:
                return  # a newer listing came
            before = len(wanted)
            run_rows.add_handle_rows(
                wanted,
                handles[start : start + self._slice],
                self._rows,
                states=states,
                ended=ended,
                memberships=memberships,
            )
            for row in itertools.islice(wanted.values(), before, None):
                if self._rows.get(row.key) is row:
                    continue
                fresh[row.key] = row
                if row.member is None and row.key not in self._shown:
                    matches, sort_key = self._matches(row), self._sort_key(row)
                    placed[row.key] = (matches, sort_key, row)
                    if matches:
                        shown.append((sort_key, row))
                        shown_keys.append(row.key)
                else:
                    rest.append(row)
        await asyncio.sleep(0)
        if self._listing is not taking:
            return
        self._end_listing()
        unreadable: dict[str, RunRow] = {}
        run_rows.add_unreadable_rows(unreadable, stored.unreadable, self._rows)
        for key, row in unreadable.items():
            wanted[key] = row
            if self._rows.get(key) is not row:
                fresh[key] = row
                rest.append(row)
        if memberships is not self._memberships:  # the sweeps changed meanwhile
            for row in fresh.values():
                if row.handle is not None:
                    row.member = self._memberships.get(row.key)
        if view != self._view() or memberships is not self._memberships:
            shown, shown_keys, rest = [], [], list(fresh.values())  # worked out again, now
        elif taking.unplaced:
            shown = [item for item in shown if item[1].key not in taking.unplaced]
            shown_keys = [key for key in shown_keys if key not in taking.unplaced]
        self._take(wanted, fresh, rest, shown=shown, shown_keys=shown_keys, page_later=True)
        self.post_message(self.Listed())

    def _view(self) -> tuple[object, ...]:
        """What decides whether a row is shown and where."""
        return (self.project_filter, self._filter, self._sort, self._descending)

    def _take(
        self,
        wanted: dict[str, RunRow],
        fresh: dict[str, RunRow],
        rest: list[RunRow],
        *,
        shown: list[_Pending] | None = None,
        shown_keys: list[str] | None = None,
        page_later: bool = False,
    ) -> None:
        """Make the table hold the rows of ``wanted`` (the table keeps that dict).

        Args:
            wanted: Every row, by key.
            fresh: Those that are not the table's already.
            rest: Those of them for which whether each is shown, and where, is worked out now.
            shown: The others that are shown, with their sort keys (worked out before).
            shown_keys: Their keys.
            page_later: Build now only the rows the view shows; the page past it a turn later.
        """
        for key in self._rows.keys() - wanted.keys():
            self._drop(key)
        self._rows = wanted
        resort = self._sync_groups()
        if shown_keys:
            self._shown.update(shown_keys)
        added: list[_Pending] = []
        for row in rest:
            if not self._matches(row):
                continue
            if row.key in self._shown:
                self._rewrite(row)
            else:
                added.append((self._sort_key(row), row))
        added += [(self._sort_key(group), group) for group in self._unshown_groups()]
        self._shown.update(row.key for _, row in added)
        self._queue([*(shown or ()), *added], page=not page_later)
        if resort:
            self._reorder()

    def show_sweeps(self, sweeps: StoredSweeps) -> None:
        """Group each sweep's runs under a row of their own.

        Args:
            sweeps: Every recorded sweep (a run in none stays on its own).
        """
        self._memberships = run_rows.memberships(sweeps)
        moved = False
        for row in self._rows.values():
            if row.handle is None:
                continue
            member = self._memberships.get(row.key)
            if member != row.member:
                row.member = member
                moved = True
                if row.key in self._shown:
                    self._rewrite(row)
        resort = self._sync_groups()
        if (moved or resort) and self._filter:
            self._refill()
            return
        self._insert(self._unshown_groups())
        if moved or resort:
            self._reorder()

    def set_state(self, run_id: str, state: RunState, ended: float | None = None) -> None:
        """Show a run's new state: under a filter that sees it, or a sort by state or duration,
        its row comes, goes or moves as the next listing would place it.

        Args:
            run_id: The run.
            state: Its state.
            ended: When it ended, if it is final.
        """
        taking = self._listing
        if taking is not None:
            # A row the listing makes from now on takes the state; one it made already (a new
            # run's, or a changed handle's in place of the shown row) is told, and placed again
            # as it ends (the filter and the sort may see the state).
            taking.late[run_id] = (state, ended)
            made = taking.rows.get(run_id)
            if made is not None and made is not self._rows.get(run_id):
                made.state, made.ended, made.problem = state, ended, None
                taking.place_again(made)
        row = self._rows.get(run_id)
        if row is None:
            return
        row.state, row.ended, row.problem = state, ended, None
        if run_id in self._shown:
            self._rewrite(row)
        self._rewrite_group_of(row)
        self._place_again(row)

    def _place_again(self, row: RunRow) -> None:
        """After a run's state changed: show or hide its row, and its sweep's group row, as the
        filter now sees them (``/failed`` shows a run the moment it fails), and put them where
        a sort by state or duration now puts them."""
        if not self._filter and self._sort not in _STATE_SORTS:
            return
        placed = [row]
        if row.member is not None:
            group = self._groups.get(group_key(row.member.sweep.sweep_id))
            if group is not None:
                placed.append(group)
        moving = self._sort in _STATE_SORTS
        for each in placed:
            wanted, shown = self._matches(each), each.key in self._shown
            if shown and not wanted:
                self._drop(each.key)
            elif wanted and (not shown or (moving and len(placed) == 1)):
                self._move(each)
        if moving and len(placed) > 1 and not self._reorder_due:
            # A sweep's runs sort under their group row, which sorts by all of them: the table is
            # put in order again, once for the turn however many of its runs end in it.
            self._reorder_due = True
            self.call_later(self._reorder_now)

    def _move(self, row: RunRow) -> None:
        """Show a row where the order in force now puts it, whether it was shown (built or in
        the backlog, where its old place goes) or not; the cursor kept on its run."""
        cursor = self.highlighted_key()
        if row.key not in self.rows:
            self._pending = [item for item in self._pending if item[1] is not row]
        self._drop(row.key)
        self._insert([row])
        if cursor == row.key:
            self._build_through(cursor)
        if cursor is not None and cursor in self.rows:
            self.move_cursor(row=self.get_row_index(cursor), animate=False)

    def _reorder_now(self) -> None:
        self._reorder_due = False
        if self._sort in _STATE_SORTS:
            self._reorder()

    def set_problem(self, run_id: str, reason: str | None) -> None:
        """Show that a run's backend could not say where it is, or that it answers again.

        Args:
            run_id: The run.
            reason: The backend's message (untrusted); ``None`` once it answers again.
        """
        taking = self._listing
        made = taking.rows.get(run_id) if taking is not None else None
        if taking is not None and made is not None and made is not self._rows.get(run_id):
            made.problem = reason  # (a listing's row made already: see set_state)
            taking.place_again(made)
        row = self._rows.get(run_id)
        if row is None or row.problem == reason:
            return
        row.problem = reason
        if run_id in self._shown:
            self._rewrite(row)

    def set_filter(self, text: str) -> None:
        """Show only the runs whose id, job, backend, state or sweep contains ``text`` (any case).

        Args:
            text: The filter; empty shows every run.
        """
        text = text.strip().lower()
        if text == self._filter:
            return
        self._filter = text
        self._refill()

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
        """How many runs and unreadable records the table shows (or is about to); a sweep's
        group row is not counted."""
        return sum(1 for key in self._shown if key not in self._groups)

    # Reading the table --------------------------------------------------------------------------

    def highlighted_key(self) -> str | None:
        """The highlighted row's key: a run id, ``file:<path>`` or ``sweep:<sweep_id>``."""
        if self.row_count == 0:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # the cursor may point past the rows for one frame after a removal
            return None
        return key.value

    def highlighted_handle(self) -> RunHandle | None:
        """The highlighted run's handle (``None`` on an unreadable record, a sweep, no row)."""
        key = self.highlighted_key()
        row = self._rows.get(key) if key is not None else None
        return row.handle if row is not None else None

    def highlighted_sweep(self) -> tuple[Sweep, tuple[RunHandle, ...]] | None:
        """The highlighted sweep and the handles of its runs in the store, on a group row."""
        key = self.highlighted_key()
        group = self._groups.get(key) if key is not None else None
        if group is None or group.group is None:
            return None
        members = self._members.get(group.key, [])
        return group.group, tuple(row.handle for row in members if row.handle is not None)

    def describe(self, key: str | None) -> Text:
        """One line about a row, for the line under the table: the reason, the problem or where.

        Args:
            key: The row's key.

        Returns:
            The text (empty for no row).
        """
        row = self._row(key) if key is not None else None
        if row is None:
            return Text()
        return run_rows.describe(row, self._members.get(row.key, []))

    def action_choose(self) -> None:
        """Post ``RunChosen`` for the highlighted run; on a sweep, move to its first run."""
        key = self.highlighted_key()
        if key is not None and key in self._groups:
            first = next(
                (row for row in self._members.get(key, []) if row.key in self._shown), None
            )
            if first is not None:
                self.reveal(first.key)
            return
        handle = self.highlighted_handle()
        if handle is not None:
            self.post_message(self.RunChosen(handle))

    # Internals ------------------------------------------------------------------------------------

    def _all_rows(self) -> list[RunRow]:
        return [*self._rows.values(), *self._groups.values()]

    def _row(self, key: str) -> RunRow | None:
        return self._rows.get(key) or self._groups.get(key)

    def _matches(self, row: RunRow) -> bool:
        members = self._members.get(row.key, ())
        return run_rows.in_project(row, self.project_filter, members) and run_rows.matches(
            row, self._filter, members
        )

    def _sort_key(self, row: RunRow) -> SortKey:
        return run_rows.sort_key(
            row,
            self._groups,
            column=self._sort,
            descending=self._descending,
            members=self._members,
        )

    def _sync_groups(self) -> bool:
        """Make one group row per sweep with runs here; whether any group came, moved or went."""
        self._members, removed, moved = run_rows.sync_groups(self._groups, self._rows.values())
        for key in removed:
            self._drop(key)
        for key in self._groups:
            if key in self._shown:
                self._rewrite(self._groups[key])
        return moved

    def _unshown_groups(self) -> list[RunRow]:
        return [
            group
            for key, group in self._groups.items()
            if key not in self._shown and self._matches(group)
        ]

    def _rewrite_group_of(self, row: RunRow) -> None:
        if row.member is None:
            return
        group = self._groups.get(group_key(row.member.sweep.sweep_id))
        if group is not None and group.key in self._shown:
            self._rewrite(group)

    def _drop(self, key: str) -> None:
        if key in self._shown:
            self._shown.discard(key)
            if key in self.rows:
                self.remove_row(key)

    def _refill(self, *, keep_top: bool = False) -> None:
        """Fill the table again from every row that matches, a page of them built (down to the
        cursor's row if further); the cursor stays on its row, or on the first row with
        ``keep_top`` if it was there (as a re-sort keeps it)."""
        cursor = None if keep_top and self.cursor_row == 0 else self.highlighted_key()
        new_columns = self._wanted_columns() != self._columns_wanted
        self.clear(columns=new_columns)
        if new_columns:
            self._add_columns()
        else:  # no row built now: a column that gave way comes back if it fits
            self._fit_columns()
        self._shown.clear()
        self._pending.clear()
        self._oldest = None
        self._to_last = False
        self._insert([row for row in self._all_rows() if self._matches(row)])
        if cursor is not None:
            self._build_through(cursor)
            if cursor in self.rows:
                self.move_cursor(row=self.get_row_index(cursor))
        if self._watch:
            self.show_watch(self._watch)

    def _refill_soon(self) -> None:
        """Refill the table once the turn under way is done (once, however often asked)."""
        if not self._refill_due:
            self._refill_due = True
            self.call_later(self._refill_now)

    def _refill_now(self) -> None:
        self._refill_due = False
        self._refill()

    def _insert(self, rows: list[RunRow]) -> None:
        self._insert_keyed([(self._sort_key(row), row) for row in rows])

    def _insert_keyed(self, keyed: list[_Pending]) -> None:
        """Show the rows of ``keyed`` (each with its sort key): into the backlog, in order, and
        built as far as the view wants."""
        self._shown.update(row.key for _, row in keyed)
        self._queue(keyed)

    def _queue(self, keyed: list[_Pending], *, page: bool = True) -> None:
        """Put the rows of ``keyed``, shown already, into the backlog in order, and build it as
        far as the view wants (with ``page`` false, the page past the view's bottom is built a
        turn later)."""
        if not keyed:
            return
        keyed.sort(key=itemgetter(0), reverse=True)
        if not self._pending:
            self._pending = keyed
        elif len(keyed) < 8:
            for item in keyed:  # one new run: in at its place
                place = _place(self._pending, item[0])
                self._pending.insert(place, item)
        else:  # two runs in order, which the sort merges
            self._pending = sorted([*self._pending, *keyed], key=itemgetter(0), reverse=True)
        self._add_pending(page=page)

    def _wanted(self, *, page: bool = True) -> int:
        """How many rows should be built: a page past the cursor and the view's bottom (without
        ``page``, down to the view's bottom).

        Before the table is laid out, a screenful (the terminal's height): the first frame
        shows no more, and the page past it is built once that frame is drawn.
        """
        height = self.scrollable_content_region.height
        if height == 0 and self.is_attached and not self._laid_out:
            if not self._page_after_frame:
                self._page_after_frame = True
                self.call_after_refresh(self._first_frame_drawn)
            return max(self.cursor_row + 1, self.app.size.height)
        bottom = int(self.scroll_y) + height
        return max(self.cursor_row + 1, bottom) + (self._page if page else 0)

    def _first_frame_drawn(self) -> None:
        self._laid_out = True
        self._schedule_adding()

    def _schedule_adding(self) -> None:
        if (
            self._pending
            and not self._adding
            and (self._to_last or self.row_count < self._wanted())
        ):
            self._adding = True
            self.call_later(self._add_pending)

    def _build(self, count: int) -> None:
        """Build up to ``count`` more rows from the backlog, now."""
        while count > 0 and self._pending:
            before = self.row_count
            self._add_pending(limit=min(count, _DRAIN_CHUNK), more=False)
            count -= max(1, self.row_count - before)

    def _build_through(self, key: str) -> None:
        """Build rows from the backlog, now, until ``key``'s is built (or none is left)."""
        if key not in self._shown or key in self.rows:
            return
        place = next((n for n, (_, row) in enumerate(self._pending) if row.key == key), None)
        if place is not None:
            self._build(place + 1)

    def _add_pending(
        self, *, limit: int | None = None, more: bool = True, page: bool = True
    ) -> None:
        """Build the backlog's first rows: those that belong above the last built row, and then
        as many as the view wants (at most ``limit``, a page by default); without ``page``, only
        down to the view's bottom now, and the page past it at a later turn."""
        self._adding = False
        if limit is None:
            limit = _DRAIN_CHUNK if self._to_last else self._page
        cursor = self.highlighted_key()
        at_top = self.cursor_row == 0
        was_last = self.row_count > 0 and self.cursor_row == self.row_count - 1
        wanted = self._wanted(page=page) if more else 0
        needs_sort = False
        now = self._clock()
        taken = 0
        added = 0
        for order, queued in self._pending:
            if added >= limit:
                break
            above = self._oldest is not None and order > self._oldest
            if more and not above and not self._to_last and self.row_count >= wanted:
                break
            taken += 1
            row = self._row(queued.key)
            if row is None or row.key not in self._shown or row.key in self.rows:
                continue
            if above:
                needs_sort = True
            self._oldest = order if self._oldest is None else min(self._oldest, order)
            self.add_row(*self._cells(row, now), key=row.key)
            added += 1
            self._schedule(row, rearm=False)
        del self._pending[:taken]
        if needs_sort:
            self._resort(cursor=cursor, at_top=at_top)
        if self._to_last:
            if was_last or self.row_count == added:
                self.move_cursor(row=self.row_count - 1, animate=False)
            self._to_last = bool(self._pending)
        self._rearm()
        if more:
            self._schedule_adding()

    def _reorder(self) -> None:
        """Put every row in the order in force: the built ones in place when they are all
        built, else the table is filled again in the new order (the cursor kept on its row)."""
        if self._pending:
            self._refill(keep_top=True)
        else:
            self._resort()

    def _resort(self, *, cursor: str | None = None, at_top: bool | None = None) -> None:
        if at_top is None:
            cursor, at_top = self.highlighted_key(), self.cursor_row == 0
        # Each row's run cell, by identity: texts may repeat (a sweep's shortened id).
        shown = [row for row in self._all_rows() if row.key in self.rows]
        shown.sort(key=self._sort_key, reverse=True)
        # The last built row's place: a row that sorts above it is built at once.
        self._oldest = self._sort_key(shown[-1]) if shown else None
        places = {id(self.get_cell(row.key, "run")): place for place, row in enumerate(shown)}
        self.sort("run", key=lambda cell: places.get(id(cell), len(places)))
        # A cursor on the newest run stays on the newest (a run just submitted); one lower down
        # stays on its run.
        if at_top:
            self.move_cursor(row=0, animate=False)
        elif cursor is not None and cursor in self.rows:
            self.move_cursor(row=self.get_row_index(cursor), animate=False)

    def _rewrite(self, row: RunRow) -> None:
        if row.key not in self.rows:
            return
        for key, cell in zip(self._columns, self._cells(row, self._clock()), strict=True):
            self.update_cell(row.key, key, cell)
        self._schedule(row)

    def _schedule(self, row: RunRow, *, rearm: bool = True) -> None:
        self._redraws.schedule(row.key, row.order[0], self._clock(), fine=run_rows.running(row))
        if rearm:
            self._rearm()

    def _rearm(self) -> None:
        due = self._redraws.first_due()
        if due is None or not self.is_mounted:
            return
        delay = max(self._min_refresh, due - self._clock())
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        now = self._clock()
        retimed: dict[str, dict[str, Text]] = {}
        for key in self._redraws.pop_due(now):
            row = self._row(key)
            if key not in self._shown or row is None or key not in self.rows:
                continue
            cells = retimed[key] = {"age": Text(format_age(now - row.order[0]))}
            if row.handle is not None:
                cells["duration"] = run_rows.duration_cell(row, now)
            self._redraws.schedule(key, row.order[0], now, fine=run_rows.running(row))
        if retimed:
            self._retime(retimed)
        self._rearm()

    def _retime(self, cells: Mapping[str, Mapping[str, Text]]) -> None:
        """Put new ages and durations in their cells, re-rendering only their rows.

        ``update_cell`` counts an update that every cached render of the table is keyed by, so
        one changed cell renders every visible cell again; with twenty running runs that is
        most of what an idle app does each second. Here the new values go in place (the column
        widths are kept, as ``update_cell`` keeps them) and only the changed rows' cached
        renders are dropped (the rows' and the changed cells').
        """
        rows = {RowKey(key) for key in cells}
        for key, values in cells.items():
            row_data = self._data[RowKey(key)]
            for column, value in values.items():
                row_data[ColumnKey(column)] = value
        indices = {self._row_locations.get(row) for row in rows}
        changed = {
            (RowKey(key), ColumnKey(column)) for key, values in cells.items() for column in values
        }
        _discard_where(self._cell_render_cache, lambda key: (key[0], key[1]) in changed)
        _discard_where(self._row_render_cache, lambda key: key[0] in rows)
        _discard_where(self._row_renderable_cache, lambda key: key[1] in indices)
        self._line_cache.clear()
        self.refresh()


class _Taking:
    """A listing being taken in slices, and what is made of it so far."""

    __slots__ = ("late", "placed", "rest", "rows", "stored", "unplaced")

    def __init__(self, stored: StoredRuns) -> None:
        self.stored = stored
        self.rows: dict[str, RunRow] = {}
        """The rows made of it so far, by key (a state change finds its run's row there)."""
        self.placed: dict[str, _Placed] = {}
        """Whether each new row is shown, and its sort key, as worked out so far."""
        self.rest: list[RunRow] = []
        """The new rows for which that is worked out as it ends (a sweep's, a changed one's)."""
        self.unplaced: set[str] = set()
        """The rows taken out of the placed ones since (a state change)."""
        self.late: dict[str, tuple[RunState, float | None]] = {}
        """The state changes that came for runs it has no row for yet (their rows take them)."""

    def place_again(self, row: RunRow) -> None:
        """Work out again as the listing ends whether ``row``, made already, is shown and
        where: its state or problem changed since."""
        if self.placed.pop(row.key, None) is not None:
            self.rest.append(row)
            self.unplaced.add(row.key)


def _place(pending: list[_Pending], order: SortKey) -> int:
    """Where a row of sort key ``order`` goes in ``pending`` (sorted by sort key, largest first):
    after every row of a larger or equal key."""
    low, high = 0, len(pending)
    while low < high:
        middle = (low + high) // 2
        if pending[middle][0] >= order:
            low = middle + 1
        else:
            high = middle
    return low


def _discard_where(cache: LRUCache[_Key, _Value], stale: Callable[[_Key], bool]) -> None:
    """Drop the entries of ``cache`` whose key is ``stale``."""
    for key in [key for key in cache.keys() if stale(key)]:  # noqa: SIM118 (not a dict)
        cache.discard(key)
