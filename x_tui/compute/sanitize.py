"""The one place where untrusted bytes (log lines, names, provider messages) become display text.

A terminal obeys escape sequences wherever they come from, so a log line could write the user's
clipboard (OSC 52), set the window title (OSC 0), plant a hyperlink (OSC 8), clear the screen
(CSI 2J) or spoof a status line. :func:`clean` keeps what a log needs to be read as it was
written, SGR colours and bold, and removes everything else: every other CSI sequence, OSC, DCS,
SOS, PM and APC strings with their payload, other escape sequences, a lone ESC, C0 controls but
tab and newline, C1 controls (U+0080 to U+009F, such as the 8-bit CSI U+009B) and DEL. A carriage
return is resolved the way a terminal shows it: the text after it overwrites the start of the line,
so a ``\\r`` progress bar reads as its last state. Bidi controls (embeddings, overrides,
isolates and marks, the "Trojan Source" characters) are removed too, so text cannot be shown in an
order other than the one it was written in.

Names and messages (a run's job, a task, a provider's reason) are shown by :func:`escaped`: on one
line, every control character and every invisible formatting character (bidi controls, zero-width
characters, line and paragraph separators, the byte-order mark, tag characters) written visibly
as an escape such as ``\\u202e``, so two names that look alike are told apart.

A log line shown by the CLI on a terminal goes through :func:`terminal_log_line`: its
``[<task>] `` prefix is kept in front of whatever its ``\\r`` states and controls do to the rest,
and its invisible characters are shown as escapes, as in names. A line of any length is
cut in one pass with :class:`LineCap`, fed piece by piece, in memory bounded by
:data:`MAX_LINE_CHARS`.

Every pattern here stops at the next ESC, C1 introducer or newline, so the work is linear in the
input; lines longer than :data:`MAX_LINE_CHARS` are cut before any pattern runs.

This module must never import Rich or Textual: it is the domain's, and ``x_tui.widgets.safe_text``
turns its output into ``rich.text.Text``.
"""

from __future__ import annotations

import re

MAX_LINE_CHARS = 10_000
"""Characters of one line kept for display; the rest is cut and marked with :data:`CUT_MARK`."""

CUT_MARK = "…"
"""Appended to a line that was cut at :data:`MAX_LINE_CHARS`."""

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""Bidi controls (as a regex class body): marks, embeddings, overrides and isolates."""

_HIDDEN = re.compile(
    # Unicode's format characters (category Cf): soft hyphen, bidi controls, zero-width
    # characters, word joiners, the byte-order mark, interlinear annotations, tag characters...
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
    # Line and paragraph separators; fillers that show as blank space.
    "\u2028\u2029\u115f\u1160\u3164\uffa0]"
)
"""An invisible character that is not a control: shown as an escape in names and CLI logs."""

_INVISIBLE = re.compile(f"[\x00-\x1f\x7f-\x9f]|{_HIDDEN.pattern}")
"""A character :func:`escaped` writes as an escape: controls and invisible formatting."""

_TASK_PREFIX = re.compile(r"\[[A-Za-z0-9][A-Za-z0-9._-]*\] ")
"""The ``[<task>] `` the worker puts in front of each line (a task name is of this form)."""

_SGR = r"\x1b\[[0-9;:]*m"
"""Select Graphic Rendition: colours, bold, underline. The only sequence kept."""

_SEQUENCE = re.compile(
    "|".join(
        (
            f"(?P<sgr>{_SGR})",
            # Any other CSI, 7-bit or 8-bit, with parameters and intermediates; a CSI cut off
            # before its final byte loses what it had.
            r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?",
            # OSC (title, clipboard, hyperlink, colours...): payload up to BEL or ST. An OSC that
            # is never terminated ends at the next ESC or newline, as far as this line goes.
            r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?",
            # DCS, SOS, PM and APC strings, terminated by ST.
            r"(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c\n]*(?:\x1b\\|\x9c)?",
            # Any other escape sequence (charset, keypad, save cursor, reset...) or a lone ESC.
            r"\x1b[ -/]*[0-~]?",
            # C0 controls but tab, newline and carriage return; DEL; C1 controls; bidi controls.
            rf"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}]",
        )
    )
)

_SUSPECT = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
"""Any character that makes a line need more than a copy: controls, ESC, CR, C1, bidi."""

_SGR_SPLIT = re.compile(f"({_SGR})")


def decode(raw: bytes) -> str:
    """Decode bytes from a log or a provider as UTF-8, replacing what is not UTF-8.

    Args:
        raw: The bytes as they were received.

    Returns:
        The text; each invalid byte becomes U+FFFD (so a bare 8-bit C1 byte never survives).
    """
    return raw.decode("utf-8", "replace")


def clean(text: str) -> str:
    """Keep SGR colours and printable text; drop every other control sequence; resolve ``\\r``.

    Args:
        text: Untrusted text, one line or many (lines are separated by ``\\n``).

    Returns:
        Text safe to hand to ``rich.text.Text.from_ansi``: no control character but tab and
        newline, no escape sequence but SGR.
    """
    return _sanitize(text, keep_sgr=True)[0]


def clean_counted(text: str) -> tuple[str, int]:
    """Like :func:`clean`, and count the control sequences and characters it removed.

    Args:
        text: Untrusted text.

    Returns:
        The cleaned text and how many sequences or control characters were removed (SGR kept and
        carriage returns resolved are not counted).
    """
    return _sanitize(text, keep_sgr=True)


def plain(text: str) -> str:
    """Like :func:`clean`, and drop SGR colour sequences too.

    Args:
        text: Untrusted text.

    Returns:
        Printable text with no control character but tab and newline, and no escape sequence.
    """
    return _sanitize(text, keep_sgr=False)[0]


def plain_counted(text: str) -> tuple[str, int]:
    """Like :func:`plain`, and count what was removed (SGR sequences are not counted).

    Args:
        text: Untrusted text.

    Returns:
        The plain text and how many sequences or control characters were removed.
    """
    return _sanitize(text, keep_sgr=False)


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode()


def revealed(text: str) -> str:
    r"""``text`` with every invisible formatting character written as an escape such as ``\u202e``.

    Bidi controls, zero-width characters, line and paragraph separators, the byte-order mark and
    tag characters are revealed; controls and escape sequences are left for :func:`clean` or
    :func:`plain` to remove. For names and messages shown in a widget.

    Args:
        text: Untrusted text.

    Returns:
        The text, with nothing invisible but controls left in it.
    """
    if _HIDDEN.search(text) is None:
        return text
    return _HIDDEN.sub(_escape, text)


def escaped(text: str) -> str:
    r"""A name or message on one line, every control and invisible character shown as an escape.

    Control characters (C0, DEL, C1, ESC) and invisible formatting characters (bidi controls such
    as U+202E, zero-width characters, U+2028/U+2029, U+FEFF, tag characters) are written as
    Python writes them in a string: ``\x1b``, ``\n``, ``\u202e``, ``\U000e0041``. Everything
    else is kept as it is.

    Args:
        text: Untrusted text, such as a job name from a record or a provider's message.

    Returns:
        The text with nothing a terminal would obey or hide.
    """
    if _INVISIBLE.search(text) is None:
        return text
    return _INVISIBLE.sub(_escape, text)


class LineCap:
    """Cuts one line fed in pieces as :func:`cap_line` cuts it whole, in bounded memory.

    It keeps the first ``limit`` characters and up to ``limit`` characters after the last ``\\r``
    seen, whatever the length of the line, so a line of gigabytes costs one pass and
    ``2 * limit`` characters of memory.
    """

    __slots__ = ("_head", "_last_cr", "_limit", "_tail", "_tail_length", "_total")

    def __init__(self, limit: int = MAX_LINE_CHARS) -> None:
        """Start an empty line.

        Args:
            limit: Characters to keep of the head and of the last ``\\r`` part.
        """
        self._limit = limit
        self._reset()

    def _reset(self) -> None:
        self._head = ""
        self._tail = ""
        self._tail_length = 0
        self._last_cr = -1
        self._total = 0

    def feed(self, piece: str) -> None:
        """Add the next piece of the line (no newline in it).

        Args:
            piece: Untrusted text, following what was fed before.
        """
        limit = self._limit
        if len(self._head) < limit:
            self._head += piece[: limit - len(self._head)]
        cr = piece.rfind("\r")
        if cr >= 0:
            self._last_cr = self._total + cr
            self._tail = piece[cr + 1 : cr + 1 + limit]
            self._tail_length = len(piece) - cr - 1
        else:
            if len(self._tail) < limit:
                self._tail += piece[: limit - len(self._tail)]
            self._tail_length += len(piece)
        self._total += len(piece)

    def finish(self) -> tuple[str, bool]:
        """The line as :func:`cap_line` returns it, and start a new one.

        Returns:
            The line, cut or not, and whether it was cut.
        """
        limit = self._limit
        if self._total <= limit:
            result = self._head, False
        elif self._last_cr > limit:
            result = f"{self._head}\r{self._tail}", self._tail_length > limit
        else:
            result = self._head, True
        self._reset()
        return result


def one_line(text: str, limit: int = 600, *, keep_end: bool = False) -> str:
    """A provider's or a tool's message on one line, shortened, for an error message.

    Whitespace runs (newlines included) fold into one space; the text is not otherwise cleaned
    (an error message is rendered as plain text, never as markup).

    Args:
        text: The message.
        limit: Characters kept at most.
        keep_end: Keep the last ``limit`` characters (a tool's standard error ends with what went
            wrong) instead of the first.

    Returns:
        The folded text, cut with :data:`CUT_MARK` where it was longer than ``limit``.
    """
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    return CUT_MARK + folded[-limit:] if keep_end else folded[:limit] + CUT_MARK


def cap_line(line: str, limit: int = MAX_LINE_CHARS) -> tuple[str, bool]:
    """Cut one line (no newline in it) to at most ``limit`` characters of each of its parts.

    A very long line is usually a progress bar redrawn with ``\\r`` for hours, so the part after
    the last ``\\r`` (its latest state) is kept as well as the start.

    Args:
        line: One line of untrusted text.
        limit: Characters to keep of the head and of the last ``\\r`` part.

    Returns:
        The line, cut or not, and whether it was cut.
    """
    if len(line) <= limit:
        return line, False
    cap = LineCap(limit)
    cap.feed(line)
    return cap.finish()


def terminal_log_line(line: str, *, cut: bool = False) -> str:
    """One log line as a terminal shows it: its ``[<task>] `` prefix first, whatever follows.

    The rest of the line is made :func:`plain` (no control sequence, no colour), with every
    invisible character (bidi controls, zero-width characters) shown as an escape such as
    ``\\u202e``, so it cannot reorder or hide the prefix or itself; its ``\\r`` states are
    resolved to what a terminal would show last, after the prefix: a state that starts with the
    same prefix again (as the worker writes each state of a progress bar) is shown once, and a
    state that starts with another task's prefix is shown after this one's, never in its place.

    Args:
        line: One line of untrusted text (no newline in it), cut to size already, as
            :func:`cap_line` or :class:`LineCap` cut it.
        cut: Whether it was cut: :data:`CUT_MARK` is appended.

    Returns:
        The line to write on the terminal.
    """
    match = _TASK_PREFIX.match(line)
    prefix = match.group() if match is not None else ""
    body = line[len(prefix) :]
    if prefix and "\r" in body:
        body = "\r".join(part.removeprefix(prefix) for part in body.split("\r"))
    body = revealed(body)
    if _SUSPECT.search(body) is not None:
        body = _strip_line(body, keep_sgr=False)[0]
        if "\r" in body:
            body = _overwrite(body)
    return prefix + body + (CUT_MARK if cut else "")


def _sanitize(text: str, *, keep_sgr: bool) -> tuple[str, int]:
    lines = text.split("\n")
    removed = 0
    for i, line in enumerate(lines):
        capped, cut = cap_line(line)
        if _SUSPECT.search(capped) is not None:
            capped, count = _strip_line(capped, keep_sgr=keep_sgr)
            removed += count
            if "\r" in capped:
                capped = _overwrite(capped)
        if cut:
            capped += CUT_MARK
        lines[i] = capped
    return "\n".join(lines), removed


def _strip_line(line: str, *, keep_sgr: bool) -> tuple[str, int]:
    removed = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal removed
        if match.lastgroup == "sgr":
            return match.group() if keep_sgr else ""
        removed += 1
        return ""

    return _SEQUENCE.sub(replace, line), removed


def _overwrite(line: str) -> str:
    """Resolve carriage returns in a line that has no other control character left.

    Each part after a ``\\r`` overwrites the start of what is shown, character by character; the
    rest of a longer earlier part stays visible, as on a terminal.
    """
    parts = line.split("\r")
    # Walk back from the last part: an earlier part shows only where it is longer than every
    # part after it. One pass, so a line redrawn ten thousand times costs no more than its length.
    if not any("\x1b" in part for part in parts):
        text = parts[-1]
        for part in reversed(parts[:-1]):
            if len(part) > len(text):
                text += part[len(text) :]
        return text
    # With colours: overlay visible characters, each carrying the SGR sequences before it.
    shown = _cells(parts[-1])
    for part in reversed(parts[:-1]):
        cells = _cells(part)
        if len(cells) > len(shown):
            # The rest of the earlier, longer part keeps the style it had where it resumes.
            at = len(shown)
            resume = "\x1b[0m" + "".join(_sgr_up_to(cells, at))
            shown.append(resume + cells[at])
            shown.extend(cells[at + 1 :])
    return "".join(shown)


def _cells(part: str) -> list[str]:
    """Split a line into visible characters, each with the SGR sequences just before it.

    SGR sequences after the last character are attached to it (they usually reset the style).
    """
    cells: list[str] = []
    pending = ""
    for piece in _SGR_SPLIT.split(part):
        if not piece:
            continue
        if piece.startswith("\x1b"):
            pending += piece
            continue
        if pending:
            cells.append(pending + piece[0])
            cells.extend(piece[1:])
            pending = ""
        else:
            cells.extend(piece)
    if pending and cells:
        cells[-1] += pending
    return cells


def _sgr_up_to(cells: list[str], stop: int) -> list[str]:
    """The SGR sequences carried by the cells before ``stop`` (the style in force there)."""
    return [seq for cell in cells[:stop] if len(cell) > 1 for seq in _SGR_SPLIT.findall(cell)]
