"""A ``DataTable`` that draws its rows again once their cells are measured.

``DataTable`` sizes a column to its widest cell only when the table is next idle; until then a
new row is drawn with the widths the columns had (a header's alone, for the first rows). The rows
it draws meanwhile are cached under a key that measuring does not change, so a frame drawn
between ``add_row`` and that idle (the screen was refreshed by something else, which a loaded
machine makes likely) left each cell cut to its column's old width until the row changed again:
a run's manifest showed ``  ↳ a`` for ``  ↳ attempt 2``. :class:`MeasuredTable` draws the rows
again when measuring changed a column's width (``tests/widgets/test_measured_table.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey


class MeasuredTable(DataTable[Text]):
    """A table of ``Text`` cells whose columns fit their widest cell from the first frame on."""

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        before = self._render_widths()
        super()._update_dimensions(new_rows)
        if self._render_widths() != before:
            self._update_count += 1  # the key of every drawn row, cell and line
            self.refresh()

    def _render_widths(self) -> tuple[int, ...]:
        return (
            self._row_label_column_width,
            *(column.get_render_width(self) for column in self.ordered_columns),
        )
