"""Which wrapped rows fill the screen in the log view's wrap mode; pure, no Textual.

A row of the view (a line, or a filtered row) wraps to one or more screen rows. Laid out from the
top row, the screen shows that row's parts and those after it; at the end it is laid out from the
bottom, so the last line is always on screen whole, and the screen starts wherever that leaves it.
"""

from __future__ import annotations

from collections.abc import Callable


def wrap_layout(
    *, top: int, at_end: bool, height: int, row_count: int, parts: Callable[[int], int]
) -> list[tuple[int, int]]:
    """The (row, wrapped part) shown on each screen row.

    Args:
        top: The row at the top of the view (used when not ``at_end``).
        at_end: Whether the view is scrolled to the end (lay out from the last row up).
        height: Screen rows to fill.
        row_count: Rows the view has.
        parts: How many screen rows a row wraps to (at least one).

    Returns:
        At most ``height`` pairs, top to bottom.
    """
    layout: list[tuple[int, int]] = []
    if at_end:
        row = row_count - 1
        while row >= 0 and len(layout) < height:
            layout[:0] = [(row, part) for part in range(parts(row))]
            row -= 1
        return layout[-height:]
    row = top
    while row < row_count and len(layout) < height:
        layout.extend((row, part) for part in range(parts(row)))
        row += 1
    return layout[:height]
