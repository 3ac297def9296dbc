"""Searches over a log index for the log view: matching lines found by a thread, kept up to date.

A :class:`LineSearch` holds one query's matching line numbers in the index's current numbering.
A thread worker reads the file; batches of line numbers come back to the UI thread through
``App.call_from_thread``, tagged with the index's numbering, and a batch from an older numbering
(the file was reset, or the lines before the tail became known) is dropped and the search starts
again. When the file grows, :meth:`LineSearch.tick` searches the new bytes.

:class:`FilterRows` turns matching lines into the rows a filtered view shows: each match with
``context`` lines before and after it.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from array import array
from collections.abc import Callable, Iterable
from functools import partial

from textual.widget import Widget

from x_tui.compute.logindex import LogIndex
from x_tui.compute.logindex_search import SearchQuery

BATCH_SECONDS = 0.05
"""How long a search thread collects matches before handing them to the UI."""

BATCH_LINES = 2000
"""Matches a search thread hands over at once at most."""


class LineSearch:
    """The lines of a log that match one query, found in the background and kept up to date."""

    def __init__(self, owner: Widget, name: str, on_update: Callable[[LineSearch], None]) -> None:
        """Create an idle search.

        Args:
            owner: The widget whose workers run the search (they stop when it is removed).
            name: A short name, for the worker group.
            on_update: Called on the UI thread after matches arrive or the search finishes.
        """
        self._owner = owner
        self._name = name
        self._on_update = on_update
        self.query: SearchQuery | None = None
        """The query, or ``None`` when idle."""
        self.pattern: re.Pattern[str] | None = None
        """The compiled query."""
        self.lines: array[int] = array("Q")
        """Matching line numbers, ascending."""
        self.running = False
        """Whether a thread is searching now."""
        self._searched_to = 0
        self._index: LogIndex | None = None
        self._generation = 0
        self._cancel: threading.Event | None = None

    @property
    def active(self) -> bool:
        """Whether there is a query."""
        return self.query is not None

    def start(self, index: LogIndex, query: SearchQuery) -> None:
        """Search ``index`` for ``query`` from line 0, forgetting earlier matches.

        Args:
            index: The open index.
            query: What to look for.

        Raises:
            InvalidSearchError: If the query is not a valid pattern.
        """
        pattern = query.compile()
        self.query = query
        self.pattern = pattern
        self.restart(index)

    def restart(self, index: LogIndex) -> None:
        """Search again from line 0 (after a reset, or once the lines before the tail are known).

        Args:
            index: The open index.
        """
        self._stop_thread()
        self._index = index
        self.lines = array("Q")
        self._searched_to = index.start_offset
        if self.query is not None:
            self._launch()

    def clear(self) -> None:
        """Stop searching and forget the query and its matches."""
        self._stop_thread()
        self.query = None
        self.pattern = None
        self.lines = array("Q")

    def tick(self) -> None:
        """Search bytes appended since the last search finished (call after each refresh)."""
        index = self._index
        if self.query is None or self.running or index is None:
            return
        if index.size > self._searched_to:
            self._launch()

    def after(self, line: int) -> int | None:
        """The first matching line after ``line``, or ``None``."""
        at = bisect.bisect_right(self.lines, line)
        return self.lines[at] if at < len(self.lines) else None

    def at_or_after(self, line: int) -> int | None:
        """The first matching line at or after ``line``, or ``None``."""
        at = bisect.bisect_left(self.lines, line)
        return self.lines[at] if at < len(self.lines) else None

    def before(self, line: int) -> int | None:
        """The last matching line before ``line``, or ``None``."""
        at = bisect.bisect_left(self.lines, line)
        return self.lines[at - 1] if at else None

    def position(self, line: int) -> int:
        """The 1-based rank of ``line`` among the matches, or 0 if it is not one."""
        at = bisect.bisect_left(self.lines, line)
        return at + 1 if at < len(self.lines) and self.lines[at] == line else 0

    def _stop_thread(self) -> None:
        self._generation += 1
        if self._cancel is not None:
            self._cancel.set()
        self._cancel = None
        self.running = False

    def _launch(self) -> None:
        index = self._index
        pattern = self.pattern
        assert index is not None
        assert pattern is not None
        self._generation += 1
        cancel = threading.Event()
        self._cancel = cancel
        self.running = True
        start = self._searched_to
        stop = index.size
        resume = index.resume_offset()
        job = partial(
            self._search,
            index,
            pattern,
            start=start,
            stop=stop,
            resume=resume,
            numbering=index.numbering,
            generation=self._generation,
            cancel=cancel,
        )
        self._owner.run_worker(job, thread=True, group=f"log-search-{self._name}")

    def _search(
        self,
        index: LogIndex,
        pattern: re.Pattern[str],
        *,
        start: int,
        stop: int,
        resume: int,
        numbering: int,
        generation: int,
        cancel: threading.Event,
    ) -> None:
        """Runs in a thread worker: collect matches and hand them over in batches."""
        batch: list[int] = []
        flushed = time.monotonic()
        try:
            for line in index.matching_lines(pattern, start=start, stop=stop, cancel=cancel):
                batch.append(line)
                if len(batch) >= BATCH_LINES or time.monotonic() - flushed > BATCH_SECONDS:
                    if not self._hand_over(generation, numbering, batch, None, cancel):
                        return
                    batch = []
                    flushed = time.monotonic()
        except OSError:
            pass  # the file went away under the search; the next refresh resets the view
        self._hand_over(generation, numbering, batch, resume, cancel)

    def _hand_over(
        self,
        generation: int,
        numbering: int,
        lines: list[int],
        searched_to: int | None,
        cancel: threading.Event,
    ) -> bool:
        if cancel.is_set():
            return False
        try:
            self._owner.app.call_from_thread(
                self._receive, generation, numbering, lines, searched_to
            )
        except RuntimeError:
            return False  # the app is closing
        return not cancel.is_set()

    def _receive(
        self, generation: int, numbering: int, lines: list[int], searched_to: int | None
    ) -> None:
        """On the UI thread: keep a batch if it is from the current search and numbering."""
        index = self._index
        if generation != self._generation or index is None:
            return
        if numbering != index.numbering:
            self.restart(index)
            return
        last = self.lines[-1] if self.lines else -1
        self.lines.extend(line for line in lines if line > last)
        if searched_to is not None:
            self.running = False
            self._cancel = None
            self._searched_to = searched_to
        self._on_update(self)


class FilterRows:
    """The line numbers a filtered view shows: matches, each with ``context`` lines around it."""

    def __init__(self, context: int) -> None:
        """Start with no rows.

        Args:
            context: Lines shown before and after each match.
        """
        self.context = context
        """Lines shown before and after each match."""
        self.rows: array[int] = array("Q")
        """Line numbers shown, ascending."""
        self._wanted_to = -1

    def rebuild(self, matches: Iterable[int], line_count: int) -> None:
        """Compute the rows again (for a new context or a new numbering).

        Args:
            matches: Matching line numbers, ascending.
            line_count: Lines in the index now.
        """
        self.rows = array("Q")
        self._wanted_to = -1
        self.add(matches, line_count)

    def add(self, matches: Iterable[int], line_count: int) -> None:
        """Add rows for new matches (each after every match added before).

        Args:
            matches: New matching line numbers, ascending.
            line_count: Lines in the index now.
        """
        for match in matches:
            first = max(match - self.context, self._next_row())
            self._wanted_to = max(self._wanted_to, match + self.context)
            self.rows.extend(range(first, min(self._wanted_to, line_count - 1) + 1))

    def grow(self, line_count: int) -> None:
        """Add the context lines after the last match that have been written since.

        Args:
            line_count: Lines in the index now.
        """
        stop = min(self._wanted_to, line_count - 1) + 1
        self.rows.extend(range(self._next_row(), stop))

    def _next_row(self) -> int:
        return self.rows[-1] + 1 if self.rows else 0
