"""The log view's status line: follow state and "+N new lines", search and filter counts, notes.

Built as ``rich.text.Text``; the user's query is shown through ``safe_text`` like any other text.
"""

from __future__ import annotations

from rich.text import Text

from x_tui.compute.logindex import LogIndex
from x_tui.widgets._log_finder import Finder
from x_tui.widgets._log_lines import LogLines
from x_tui.widgets.safe_text import safe_text


def status_text(index: LogIndex | None, lines: LogLines, finder: Finder) -> Text:
    """What the status line says now.

    Args:
        index: The index of the file shown, if any.
        lines: The view's lines (follow state, new lines, wrap, removed sequences).
        finder: The view's search, filter and error state.

    Returns:
        One line of text (cut with an ellipsis when the view is narrow).
    """
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    if index is None:
        return text.append("no log", style="dim")
    if lines.following:
        text.append("● following", style="bold green")
    else:
        text.append("‖ paused", style="bold yellow")
        if lines.new_lines:
            text.append(f" +{lines.new_lines:,} new lines", style="bold")
        text.append(" (end: follow)", style="dim")
    if finder.flash is not None:  # the answer to the last key: first, so a narrow view shows it
        text.append(" │ ", style="dim")
        text.append_text(finder.flash)
    search = finder.search
    if search.query is not None:
        text.append(" │ / ", style="dim")
        text.append_text(safe_text(search.query.text))
        total = len(search.lines)
        rank = search.position(lines.current) if lines.current is not None else 0
        counter = f" {rank}/{total:,}" if rank else f" {total:,} matches"
        text.append(counter + ("…" if search.running else ""), style="bold")
    found = finder.filter
    if found.query is not None:
        text.append(" │ & ", style="dim")
        text.append_text(safe_text(found.query.text))
        running = "…" if found.running else ""
        text.append(f" {len(found.lines):,} lines ±{finder.rows.context}{running}", style="bold")
    if finder.looking_for_errors:
        text.append(" │ looking for errors…", style="dim")
    if not index.complete:
        text.append(f" │ indexing {index.progress:.0%}", style="dim")
    if lines.wrap:
        text.append(" │ wrap", style="dim")
    if lines.removed:
        text.append(f" │ ⚠ {lines.removed:,} control sequences removed", style="yellow")
    return text
