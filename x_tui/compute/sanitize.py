"""The one place where untrusted bytes (log lines, names, provider messages) become display text.

A terminal obeys escape sequences wherever they come from, so a log line could write the user's
clipboard (OSC 52), set the window title (OSC 0), plant a hyperlink (OSC 8), clear the screen
(CSI 2J) or spoof a status line. :func:`clean` keeps what a log needs to be read as it was
written, SGR colours and bold, and removes everything else: every other CSI sequence, OSC, DCS,
SOS, PM and APC strings with their payload, other escape sequences, a lone ESC, C0 controls but
tab and newline, C1 controls (U+0080 to U+009F, such as the 8-bit CSI U+009B) and DEL. A carriage
return is resolved the way a terminal shows it: the text after it overwrites the start of the line,
so a ``\\r`` progress bar reads as its last state.

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
            # C0 controls but tab, newline and carriage return; DEL; C1 controls.
            r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]",
        )
    )
)

_SUSPECT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Any character that makes a line need more than a copy: controls, ESC, CR, C1."""

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
    head = line[:limit]
    last_cr = line.rfind("\r")
    if last_cr > limit:
        tail = line[last_cr + 1 : last_cr + 1 + limit]
        cut = len(line) - last_cr - 1 > limit
        return f"{head}\r{tail}", cut
    return head, True


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
