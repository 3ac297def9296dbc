"""A data table's text cells rendered as Textual's ``DataTable`` renders them, with less of Rich.

``DataTable`` renders each cell it has not drawn before through Rich's general pipeline: the cell
padded (``rich.padding.Padding``), styled before and after (``Styled``), rendered to lines
and cropped twice (``Console.render_lines``). For a ``Text`` cell on a row one line high that
costs about twice what the text's own rendering does, and a screenful of runs is some 250 cells:
a good part of the runs table's first frame. :class:`TextCells` renders such a cell directly, to
the same segments (``tests/widgets/test_table_cells.py`` compares the two over cells of every
kind the runs table shows, widths from one column up, cursor and hover styles); any other cell is
left to ``DataTable``.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

_NULL = Style.null()


class TextCells:
    """Renders one-line ``Text`` cells for one console (its options kept per width)."""

    def __init__(self, console: Console, options: ConsoleOptions) -> None:
        """Render for ``console``, with the app's ``options`` (``App.console_options``).

        Args:
            console: The app's console.
            options: The options a table cell is rendered with, before its width is set.
        """
        self._console = console
        self._options = options
        self._by_width: dict[int, ConsoleOptions] = {}

    def render(
        self, cell: Text, width: int, padding: int, pre_style: Style, post_style: Style
    ) -> list[list[Segment]] | None:
        """The one line of ``cell`` in a column ``width`` wide, or ``None`` where this cannot.

        Args:
            cell: The cell's text.
            width: The column's width, padding included.
            padding: Blank columns on each side of the text.
            pre_style: The style under the text's own (the table's, the cell's component's).
            post_style: The style over it (the cursor's, where CSS has priority).

        Returns:
            The lines ``DataTable`` would render (one), or ``None`` for a cell it should render
            itself: no room for text, or a text that asks to be wrapped.
        """
        inner = width - 2 * padding
        if inner < 1 or cell.no_wrap is False:
            return None
        line = self._fitting(cell, inner)
        if line is None:
            options = self._by_width.get(inner)
            if options is None:
                options = self._options.update_dimensions(inner, 1).update(no_wrap=True)
                self._by_width[inner] = options
            segments = cell.__rich_console__(self._console, options)
            lines = Segment.split_and_crop_lines(
                segments, inner, style=_NULL, pad=True, include_new_lines=False
            )
            line = next(iter(lines), None) or [Segment(" " * inner, _NULL)]
        if padding:
            blank = Segment(" " * padding, _NULL)
            line = [blank, *line, blank]
        return [list(Segment.apply_style(line, style=pre_style, post_style=post_style))]

    def _fitting(self, cell: Text, inner: int) -> list[Segment] | None:
        """The segments of a cell whose one line fits ``inner`` columns and is justified as
        Rich justifies by default (left, padded after with no style), or ``None`` for any other.

        Rich wraps such a text to the one line it already is, joins it with the text's own style
        as a span over it, and renders that: the same segments as the text's own, except that a
        text with a style and no spans is one segment in that style (Rich's ``Text.render``
        leaves it unstyled, ``__rich_console__`` does not). About a quarter of the cost.
        """
        plain = cell.plain
        spare = inner - cell.cell_len
        if not plain or spare < 0 or "\n" in plain or "\t" in plain:
            return None
        if (cell.justify or self._options.justify or "default") != "default":
            return None
        if cell.spans:
            line = list(cell.render(self._console))
        elif cell.style:
            line = [Segment(plain, self._console.get_style(cell.style, default=_NULL))]
        else:
            line = [Segment(plain)]
        if spare:
            line.append(Segment(" " * spare, _NULL))
        return line
