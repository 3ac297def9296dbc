"""A line index over a log file that may keep growing, for a viewer that opens gigabytes at once.

The index never loads the file. :meth:`LogIndex.open` reads the file's tail backwards from the end,
so the last screenful is there at once, numbered from the first line of that tail; a background
thread then counts the newlines before the tail, one 1 MiB block at a time with ``bytes.count``
(no Python object per line: a count and an end offset per block, in ``array('Q')``). When the count
is done, :meth:`LogIndex.refresh` installs it and reports how many lines now come before the old
first line, so a view can keep its place. Newline positions inside a block are found again only
when a line there is read, and a few blocks' worth are cached.

:meth:`LogIndex.refresh` also follows the file: it re-checks from the saved offset, indexes what was
appended (at most ``max_bytes`` per call, so a caller on a UI thread never stalls), and starts over
when the file was truncated, rewritten or replaced (rotation).

Line text is read with ``os.pread`` and capped for display; :meth:`LogIndex.search` scans the file
in chunks and yields the start offsets of matching lines as it goes, matching what a viewer shows
(the sanitised plain text), never holding the file in memory.

Threads: one thread calls :meth:`refresh` (the UI's), the index's own thread counts the prefix, and
any thread may read lines or search. All shared state is behind one lock. Line numbers change only
inside :meth:`open` and :meth:`refresh`, so the thread that calls them always knows which numbering
it holds. This module imports no Textual and no Rich.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate, count
from operator import add
from pathlib import Path

from x_tui.compute.errors import UserError
from x_tui.compute.sanitize import MAX_LINE_CHARS, cap_line, decode, plain

BLOCK_SIZE = 1 << 20
"""Bytes per counted block."""

TAIL_BYTES = 256 << 10
"""Bytes read backwards from the end when a file is opened (a few thousand lines)."""

REFRESH_BYTES = 4 << 20
"""Default limit of appended bytes one :meth:`LogIndex.refresh` indexes line by line."""

COUNT_BYTES = 32 << 20
"""Appended bytes one refresh may count by blocks, once the whole file is indexed."""

FOLD_LINES = 1 << 16
"""Newline offsets kept one by one at the end before they are folded into counted blocks."""

BLOCK_CACHE = 8
"""Blocks whose newline offsets are kept after a read."""

_SIGNATURE_BYTES = 64
_SEARCH_CHUNK = 1 << 20
_SUSPECT_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
"""Bytes that make a line's display text differ from its decoded bytes (escapes, controls, CR)."""


class InvalidSearchError(UserError, ValueError):
    """A search pattern that is not a valid regular expression."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchQuery:
    """What to look for in a log: plain text or a regular expression."""

    text: str
    """The text or pattern, as the user typed it."""
    regex: bool = False
    """Whether ``text`` is a Python regular expression (else it is matched literally)."""
    ignore_case: bool = True
    """Whether letter case is ignored."""

    def compile(self) -> re.Pattern[str]:
        """The query as a pattern, with ``^`` and ``$`` matching at line boundaries.

        Returns:
            The compiled pattern.

        Raises:
            InvalidSearchError: If ``regex`` is set and ``text`` is not a valid pattern.
        """
        flags = re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)
        source = self.text if self.regex else re.escape(self.text)
        try:
            return re.compile(source, flags)
        except re.error as error:
            raise InvalidSearchError(
                f"search pattern {self.text!r} is not a valid regular expression: {error}"
            ) from None


ERROR_QUERY = SearchQuery(
    text=r"Traceback \(most recent call last\)|\bERROR\b|Error:|\bFAILED\b|(?i:exception)",
    regex=True,
    ignore_case=False,
)
"""Lines "next error" jumps to: tracebacks, ``ERROR``, ``Error:``, ``FAILED``, exceptions."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LogLine:
    """One line of the file, as read for display."""

    number: int
    """Its line number in the index's numbering when it was read (0 is the first known line)."""
    start: int
    """Byte offset of its first byte."""
    end: int
    """Byte offset just past its last byte (its newline excluded)."""
    text: str
    """Its bytes decoded (UTF-8, invalid bytes replaced), capped; not sanitised."""
    cut: bool
    """Whether the line was longer than the display cap and part of it is not in ``text``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexChange:
    """What one :meth:`LogIndex.refresh` (or :meth:`LogIndex.open`) changed."""

    reset: bool = False
    """The file was replaced, truncated or rewritten: every line number is new."""
    prepended: int = 0
    """Lines now known before what was line 0 (the background count finished)."""
    appended: int = 0
    """Lines added at the end (a new unfinished last line counts)."""
    last_changed: bool = False
    """The last line, unfinished before, received more bytes."""
    more: bool = False
    """More appended bytes are waiting than one refresh indexes; refresh again soon."""

    @property
    def changed(self) -> bool:
        """Whether anything a viewer shows may have changed."""
        return self.reset or bool(self.prepended or self.appended) or self.last_changed


class LogIndex:
    """A line index over one log file (see the module docstring for the design).

    Use it as a context manager, or call :meth:`open` and, when done, :meth:`close`.
    """

    def __init__(
        self,
        path: Path,
        *,
        block_size: int = BLOCK_SIZE,
        tail_bytes: int = TAIL_BYTES,
        max_line_bytes: int = MAX_LINE_CHARS,
    ) -> None:
        """Prepare an index over ``path``; nothing is read until :meth:`open`.

        Args:
            path: The log file. It need not exist yet; it is looked for on every refresh.
            block_size: Bytes per counted block.
            tail_bytes: Bytes read backwards from the end on open.
            max_line_bytes: Bytes of a line's start (and of its last ``\\r`` part) read for display.
        """
        self._path = path
        self._block_size = block_size
        self._tail_bytes = tail_bytes
        self._max_line_bytes = max_line_bytes
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._generation = 0
        self._numbering = 0
        self._scanner: threading.Thread | None = None
        self._clear()

    def _clear(self) -> None:
        self._block_ends = array("Q")
        self._block_cum = array("Q")
        self._prefix_known = True
        self._tail_start = 0
        self._tail_nl = array("Q")
        self._end = 0
        self._signature = b""
        self._pending: tuple[int, array[int], array[int]] | None = None
        self._scan_target = 0
        self._scanned = 0
        self._block_cache: OrderedDict[int, array[int]] = OrderedDict()

    # -- lifetime -----------------------------------------------------------------------------

    def __enter__(self) -> LogIndex:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        """The file this index reads."""
        return self._path

    def open(self) -> IndexChange:
        """Read the file's tail (if the file exists) and start counting the lines before it.

        Returns:
            The change from an empty index: ``appended`` is the number of lines known now.
        """
        with self._lock:
            self._closed.clear()
            self._numbering += 1
            self._open_file()
            return self._catch_up(REFRESH_BYTES, reset=False)

    def close(self) -> None:
        """Stop the background count and close the file. The index reads nothing afterwards."""
        self._closed.set()
        with self._lock:
            self._generation += 1
            self._numbering += 1
            self._close_fd()
            self._clear()
        scanner = self._scanner
        if scanner is not None and scanner is not threading.current_thread():
            scanner.join()

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Wait for the background count to finish (it is installed by the next refresh).

        Args:
            timeout: Seconds to wait at most; ``None`` waits as long as it takes.

        Returns:
            Whether the count finished (or there was none to do).
        """
        scanner = self._scanner
        if scanner is not None:
            scanner.join(timeout)
            return not scanner.is_alive()
        return True

    # -- state --------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        """Lines known: the whole file once indexed, else the tail read on open (and appends)."""
        with self._lock:
            return self._prefix_lines() + self._tail_lines()

    @property
    def complete(self) -> bool:
        """Whether every line from the start of the file is counted (line 0 is the file's first)."""
        with self._lock:
            return self._prefix_known

    @property
    def progress(self) -> float:
        """How much of the background count is done, from 0.0 to 1.0."""
        with self._lock:
            if self._prefix_known or not self._scan_target:
                return 1.0
            return min(1.0, self._scanned / self._scan_target)

    @property
    def numbering(self) -> int:
        """Changes whenever line numbers change meaning (a reset, or lines known before line 0).

        A thread that holds line numbers compares this before and after using them.
        """
        with self._lock:
            return self._numbering

    @property
    def start_offset(self) -> int:
        """Byte offset of line 0: 0 once the whole file is indexed, else the tail's start."""
        with self._lock:
            return 0 if self._prefix_known else self._tail_start

    def resume_offset(self) -> int:
        """Where a search that covered :attr:`size` must look again when the file grows.

        Returns:
            The start of the last line if it is unfinished (it may still change), else :attr:`size`.
        """
        with self._lock:
            if self._has_partial():
                return self._tail_nl[-1] + 1 if self._tail_nl else self._tail_start
            return self._end

    @property
    def size(self) -> int:
        """Bytes of the file indexed so far."""
        with self._lock:
            return self._end

    # -- following ----------------------------------------------------------------------------

    def refresh(self, max_bytes: int = REFRESH_BYTES) -> IndexChange:
        """Look at the file again: install a finished count, index appended bytes, detect resets.

        Args:
            max_bytes: Appended bytes to index line by line in this call at most (more are
                counted in blocks once the whole file is indexed); ``more`` says if some wait.

        Returns:
            What changed since the last call.
        """
        with self._lock:
            if self._closed.is_set():
                return IndexChange()
            if self._fd is None:
                if not self._open_file():
                    return IndexChange()
                self._numbering += 1
                return self._catch_up(max_bytes, reset=True)
            if self._replaced():
                self._close_fd()
                self._generation += 1
                self._numbering += 1
                self._clear()
                self._open_file()
                return self._catch_up(max_bytes, reset=True)
            prepended = self._install_prefix()
            change = self._catch_up(max_bytes, reset=False)
            if prepended:
                return IndexChange(
                    prepended=prepended,
                    appended=change.appended,
                    last_changed=change.last_changed,
                    more=change.more,
                )
            return change

    def _open_file(self) -> bool:
        try:
            fd = os.open(self._path, os.O_RDONLY)
        except OSError:
            return False
        stat = os.fstat(fd)
        self._fd = fd
        self._ident = (stat.st_dev, stat.st_ino)
        self._generation += 1
        size = stat.st_size
        if size > self._tail_bytes * 2:
            self._start_at_tail(fd, size)
        return True

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._ident = None

    def _replaced(self) -> bool:
        """Whether the path now names another file, or the file shrank or was rewritten."""
        assert self._fd is not None
        try:
            stat = os.stat(self._path)
        except OSError:
            return False  # deleted: keep reading what the open descriptor still holds
        if (stat.st_dev, stat.st_ino) != self._ident:
            return True
        if stat.st_size < self._end:
            return True
        if self._signature:
            at = self._end - len(self._signature)
            return os.pread(self._fd, len(self._signature), at) != self._signature
        return False

    def _start_at_tail(self, fd: int, size: int) -> None:
        """Find the first line start in the last ``tail_bytes`` and count the rest in a thread."""
        back = self._tail_bytes
        while True:
            at = max(0, size - back - 1)
            data = os.pread(fd, size - at, at)
            first = data.find(b"\n")
            if first != -1 and at + first + 1 < size:
                start = at + first + 1
                break
            if at == 0 or back > 64 * self._tail_bytes:
                return  # one enormous line: index it from the start, step by step
            back *= 4
        self._tail_start = start
        self._end = start
        self._prefix_known = False
        self._scan_target = start
        self._scanned = 0
        generation = self._generation
        dup = os.dup(fd)
        self._scanner = threading.Thread(
            target=self._count_prefix,
            args=(dup, generation, start),
            name=f"logindex-{self._path.name}",
            daemon=True,
        )
        self._scanner.start()

    def _count_prefix(self, fd: int, generation: int, stop: int) -> None:
        """Count newlines in ``[0, stop)`` per block (runs in the index's own thread)."""
        ends = array("Q")
        cum = array("Q")
        total = 0
        pos = 0
        try:
            while pos < stop:
                if self._closed.is_set() or generation != self._generation:
                    return
                data = os.pread(fd, min(self._block_size, stop - pos), pos)
                if not data:
                    return  # truncated under us: the next refresh resets
                total += data.count(b"\n")
                pos += len(data)
                ends.append(pos)
                cum.append(total)
                self._scanned = pos
        except OSError:
            return
        finally:
            os.close(fd)
        with self._lock:
            if generation == self._generation:
                self._pending = (generation, ends, cum)

    def _install_prefix(self) -> int:
        pending = self._pending
        if pending is None or pending[0] != self._generation:
            return 0
        self._pending = None
        _, ends, cum = pending
        self._block_ends = ends + self._block_ends
        self._block_cum = cum
        self._prefix_known = True
        self._block_cache.clear()
        self._numbering += 1
        return cum[-1] if cum else 0

    def _catch_up(self, max_bytes: int, *, reset: bool) -> IndexChange:
        """Index bytes appended since ``_end`` (at most ``max_bytes`` line by line)."""
        fd = self._fd
        if fd is None:
            return IndexChange(reset=reset)
        before = self._prefix_lines() + self._tail_lines()
        was_partial = self._has_partial()
        old_end = self._end
        size = os.fstat(fd).st_size
        if self._prefix_known and size - self._end > max_bytes:
            self._count_appended(fd, min(size, self._end + max(COUNT_BYTES, max_bytes)))
        else:
            data = os.pread(fd, min(size - self._end, max_bytes), self._end)
            self._tail_nl.extend(_newline_offsets(data, self._end))
            self._end += len(data)
        if self._prefix_known and len(self._tail_nl) > FOLD_LINES:
            self._fold_tail()
        if self._end:
            width = min(_SIGNATURE_BYTES, self._end)
            self._signature = os.pread(fd, width, self._end - width)
        after = self._prefix_lines() + self._tail_lines()
        return IndexChange(
            reset=reset,
            appended=after - before,
            last_changed=was_partial and self._end > old_end,
            more=size > self._end,
        )

    def _count_appended(self, fd: int, stop: int) -> None:
        """Count a large append in blocks (after folding the newline offsets kept one by one)."""
        self._fold_tail()
        pos = self._end
        last_newline = -1
        while pos < stop:
            data = os.pread(fd, min(self._block_size, stop - pos), pos)
            if not data:
                break
            found = data.count(b"\n")
            if found:
                last_newline = pos + data.rfind(b"\n")
                total = (self._block_cum[-1] if self._block_cum else 0) + found
                self._block_ends.append(last_newline + 1)
                self._block_cum.append(total)
            pos += len(data)
        if last_newline != -1:
            self._tail_start = last_newline + 1
        self._end = pos

    def _fold_tail(self) -> None:
        """Turn the newline offsets kept one by one into counted blocks (same line numbers)."""
        nl = self._tail_nl
        if not nl:
            return
        total = self._block_cum[-1] if self._block_cum else 0
        start = self._tail_start
        i = 0
        while i < len(nl):
            j = max(i, bisect.bisect_right(nl, start + self._block_size - 1, lo=i) - 1)
            total += j - i + 1
            start = nl[j] + 1
            self._block_ends.append(start)
            self._block_cum.append(total)
            i = j + 1
        self._tail_start = start
        self._tail_nl = array("Q")

    # -- numbering ----------------------------------------------------------------------------

    def _prefix_lines(self) -> int:
        return self._block_cum[-1] if self._block_cum else 0

    def _has_partial(self) -> bool:
        last_start = self._tail_nl[-1] + 1 if self._tail_nl else self._tail_start
        return self._end > last_start

    def _tail_lines(self) -> int:
        return len(self._tail_nl) + self._has_partial()

    def _newline(self, m: int) -> int:
        """Offset of the ``m``-th newline (1-based) of the known region."""
        prefix = self._prefix_lines()
        if m > prefix:
            return self._tail_nl[m - prefix - 1]
        block = bisect.bisect_left(self._block_cum, m)
        before = self._block_cum[block - 1] if block else 0
        return self._block_newlines(block)[m - before - 1]

    def _block_newlines(self, block: int) -> array[int]:
        cached = self._block_cache.get(block)
        if cached is not None:
            self._block_cache.move_to_end(block)
            return cached
        assert self._fd is not None
        start = self._block_ends[block - 1] if block else 0
        data = os.pread(self._fd, self._block_ends[block] - start, start)
        offsets = _newline_offsets(data, start)
        self._block_cache[block] = offsets
        if len(self._block_cache) > BLOCK_CACHE:
            self._block_cache.popitem(last=False)
        return offsets

    def span(self, number: int) -> tuple[int, int]:
        """The byte span of a line, its newline excluded.

        Args:
            number: A line number, ``0 <= number < line_count``.

        Returns:
            ``(start, end)`` byte offsets.

        Raises:
            IndexError: If there is no such line.
        """
        with self._lock:
            return self._span(number)

    def _span(self, number: int) -> tuple[int, int]:
        total = self._prefix_lines() + self._tail_lines()
        if not 0 <= number < total:
            raise IndexError(f"line {number} is not in the index ({total} lines)")
        prefix = self._prefix_lines()
        if number < prefix:
            start = self._newline(number) + 1 if number else 0
            return start, self._newline(number + 1)
        k = number - prefix
        start = self._tail_nl[k - 1] + 1 if k else self._tail_start
        end = self._tail_nl[k] if k < len(self._tail_nl) else self._end
        return start, end

    def line_number_at(self, offset: int) -> int | None:
        """The number of the line holding a byte.

        Args:
            offset: A byte offset in the file.

        Returns:
            The line number, or ``None`` if the byte is before the known lines (the background
            count has not finished) or past the indexed end.
        """
        with self._lock:
            if offset >= self._end:
                return None
            if offset >= self._tail_start:
                return self._prefix_lines() + bisect.bisect_left(self._tail_nl, offset)
            if not self._prefix_known:
                return None
            block = bisect.bisect_right(self._block_ends, offset)
            before = self._block_cum[block - 1] if block else 0
            return before + bisect.bisect_left(self._block_newlines(block), offset)

    # -- reading ------------------------------------------------------------------------------

    def line(self, number: int) -> LogLine:
        """Read one line for display.

        Args:
            number: A line number, ``0 <= number < line_count``.

        Returns:
            The line, its text capped (see :class:`LogLine`).

        Raises:
            IndexError: If there is no such line.
        """
        with self._lock:
            start, end = self._span(number)
            fd = self._fd
            assert fd is not None
            text, cut = self._read_line(fd, start, end)
        return LogLine(number=number, start=start, end=end, text=text, cut=cut)

    def lines(self, start: int, stop: int) -> list[LogLine]:
        """Read the lines ``start <= n < stop`` (clipped to the known lines).

        Args:
            start: First line number.
            stop: Line number after the last.

        Returns:
            The lines, in order.
        """
        with self._lock:
            stop = min(stop, self._prefix_lines() + self._tail_lines())
            return [self.line(n) for n in range(max(0, start), stop)]

    def read(self, start: int, end: int) -> tuple[str, bool]:
        """Read a line's text by its span (from :meth:`span`), capped as :meth:`line` does.

        Args:
            start: Byte offset of the line's start.
            end: Byte offset of the line's end, its newline excluded.

        Returns:
            The decoded text and whether it was cut.
        """
        with self._lock:
            fd = self._fd
            if fd is None:
                return "", False
            return self._read_line(fd, start, end)

    def _read_line(self, fd: int, start: int, end: int) -> tuple[str, bool]:
        cap = self._max_line_bytes
        if end - start <= cap:
            return decode(os.pread(fd, end - start, start)), False
        head = os.pread(fd, cap, start)
        tail = os.pread(fd, cap, end - cap)
        cr = tail.rfind(b"\r", 0, len(tail) - 1 if tail.endswith(b"\r") else len(tail))
        if cr != -1:
            # A progress bar redrawn for hours: show its latest state over its first.
            return decode(head) + "\r" + decode(tail[cr + 1 :]), True
        return decode(head), True

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        query: SearchQuery | re.Pattern[str],
        *,
        start: int = 0,
        stop: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[int]:
        """Find lines whose displayed text matches, reading the file in chunks.

        Matching is on what a viewer shows: escape sequences removed, ``\\r`` resolved, long lines
        capped. ``start`` should be a line start (0, or just after a newline).

        Args:
            query: A query, or a compiled pattern (compile with ``re.MULTILINE``).
            start: Byte offset to start at.
            stop: Byte offset to stop at; the indexed size when ``None``.
            cancel: Set it to stop the search early.

        Yields:
            The start offset of each matching line, in file order.

        Raises:
            InvalidSearchError: If the query's pattern is not a valid regular expression.
        """
        pattern = query.compile() if isinstance(query, SearchQuery) else query
        with self._lock:
            if self._fd is None:
                return
            fd = os.dup(self._fd)
            limit = self._end if stop is None else stop
        try:
            yield from _search_fd(
                fd, pattern, start, limit, cap=self._max_line_bytes, cancel=cancel
            )
        finally:
            os.close(fd)

    def matching_lines(
        self,
        query: SearchQuery | re.Pattern[str],
        *,
        start: int = 0,
        stop: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[int]:
        """Like :meth:`search`, yielding line numbers (valid while :attr:`numbering` is unchanged).

        Args:
            query: A query, or a compiled pattern (compile with ``re.MULTILINE``).
            start: Byte offset to start at (a line start, at or after :attr:`start_offset`).
            stop: Byte offset to stop at; the indexed size when ``None``.
            cancel: Set it to stop the search early.

        Yields:
            The number of each matching line, in order.

        Raises:
            InvalidSearchError: If the query's pattern is not a valid regular expression.
        """
        for offset in self.search(query, start=start, stop=stop, cancel=cancel):
            number = self.line_number_at(offset)
            if number is not None:
                yield number


def _newline_offsets(data: bytes, base: int) -> array[int]:
    """Offsets of every newline in ``data``, which starts at ``base``; no Python loop per line."""
    parts = data.split(b"\n")
    parts.pop()
    return array("Q", map(add, accumulate(map(len, parts)), count(base)))


def _search_fd(
    fd: int,
    pattern: re.Pattern[str],
    pos: int,
    stop: int,
    *,
    cap: int,
    cancel: threading.Event | None,
) -> Iterator[int]:
    while pos < stop:
        if cancel is not None and cancel.is_set():
            return
        data = os.pread(fd, min(_SEARCH_CHUNK, stop - pos), pos)
        if not data:
            return
        last = data.rfind(b"\n")
        if last == -1 and pos + len(data) < stop:
            # One line longer than a chunk: match its capped start, then skip to its end.
            if _line_matches(pattern, data[:cap], cap):
                yield pos
            pos = _skip_line(fd, pos + len(data), stop)
            continue
        chunk = data if last == -1 else data[: last + 1]
        yield from _search_chunk(pattern, chunk, pos, cap)
        pos += len(chunk)


def _skip_line(fd: int, pos: int, stop: int) -> int:
    while pos < stop:
        data = os.pread(fd, min(_SEARCH_CHUNK, stop - pos), pos)
        if not data:
            return stop
        found = data.find(b"\n")
        if found != -1:
            return pos + found + 1
        pos += len(data)
    return stop


def _line_matches(pattern: re.Pattern[str], raw: bytes, cap: int) -> bool:
    text, _ = cap_line(decode(raw).rstrip("\n"), cap)
    return pattern.search(plain(text)) is not None


def _search_chunk(pattern: re.Pattern[str], chunk: bytes, base: int, cap: int) -> Iterator[int]:
    """Matching line starts in a chunk of whole lines (the last may lack its newline)."""
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    if _SUSPECT_BYTES.search(chunk) is not None or max(map(len, lines), default=0) > cap:
        # Escapes, controls or very long lines: match each line's displayed text.
        offset = base
        for raw in lines:
            if _line_matches(pattern, raw, cap):
                yield offset
            offset += len(raw) + 1
        return
    # Clean text: one pass of the pattern over the whole chunk, each hit checked on its line.
    ascii_only = chunk.isascii()
    text = chunk.decode("ascii") if ascii_only else chunk.decode("utf-8", "surrogateescape")
    at = 0
    byte_at = base
    char_at = 0
    while True:
        match = pattern.search(text, at)
        if match is None:
            return
        line_start = text.rfind("\n", 0, match.start()) + 1
        if line_start >= len(text):
            return  # an empty match after the last newline: no line there
        line_end = text.find("\n", line_start)
        if line_end == -1:
            line_end = len(text)
        if ascii_only:
            offset = base + line_start
        else:
            byte_at += len(text[char_at:line_start].encode("utf-8", "surrogateescape"))
            char_at = line_start
            offset = byte_at
        if pattern.search(text[line_start:line_end]) is not None:
            yield offset
        at = line_end + 1
        if at > len(text):
            return
