"""How the headless verbs write: results on stdout, refusals on stderr as one line each.

Log lines are untrusted: on a terminal each one goes through
``x_tui.compute.sanitize.terminal_log_line`` so a task cannot move the cursor, retitle the window,
hide text, reorder it or overwrite its ``[<task>] `` prefix; piped, they are written as they are.
A log is written piece by piece (``x_tui.compute.log_pieces``), so a line of any length streams
in bounded memory. Names and messages (ours, a provider's, a record's, a configuration value) go
through ``x_tui.compute.sanitize.escaped``: on one line, every control and invisible character
shown as an escape. Nothing here imports Rich or Textual, and the sanitiser is imported when
something is written (``import x_tui.cli`` stays light).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from x_tui.compute.log_pieces import LogPiece

PROG = "x-tui"
"""The program's name, prefixed to every message on stderr."""


def say(text: str) -> None:
    """Write one line on stdout and flush it, so a pipe sees it at once."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def say_lines(lines: list[str]) -> None:
    """Write lines on stdout in one piece (a listing of 100,000 runs is one write, not 100,000)."""
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def complain(message: str) -> None:
    """Write ``x-tui: <message>`` on stderr, on one line, every control character escaped."""
    from x_tui.compute.sanitize import escaped

    sys.stderr.write(f"{PROG}: {escaped(message)}\n")
    sys.stderr.flush()


def error_message(error: BaseException) -> str:
    """What a refused command says: the error's message (a ``KeyError``'s without quotes)."""
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error) or type(error).__name__


def print_json(document: Any) -> None:
    """Write one JSON document on stdout (control characters escaped by JSON itself)."""
    say(json.dumps(document, indent=2))


def log_writer(lead: str = "") -> Callable[[str], None]:
    """A function that writes one log line on stdout, made safe first when stdout is a terminal.

    Args:
        lead: Written before every line, such as a sweep run's ``[LR=0.1] `` (x-tui's own text,
            already escaped).

    Returns:
        The writer; it flushes after every line.
    """
    if not sys.stdout.isatty():
        return (lambda line: say(lead + line)) if lead else say
    from x_tui.compute.sanitize import LineCap, terminal_log_line

    def write(line: str) -> None:
        cap = LineCap()
        cap.feed(line)
        capped, cut = cap.finish()
        say(lead + terminal_log_line(capped, cut=cut))

    return write


def print_log(pieces: Iterable[LogPiece]) -> None:
    """Write a log on stdout as it comes, a line of any length in bounded memory.

    Piped, every piece is written as it is, each line ended by a newline. On a terminal, each
    line is cut to :data:`~x_tui.compute.sanitize.MAX_LINE_CHARS` of its start and of its last
    ``\\r`` state while it streams, then written through ``terminal_log_line``.

    Args:
        pieces: The log, as ``x_tui.compute.backend.pieces_of`` gives it.
    """
    out = sys.stdout
    if not out.isatty():
        for text, ends_line in pieces:
            out.write(text + "\n" if ends_line else text)
            out.flush()
        return
    from x_tui.compute.sanitize import LineCap, terminal_log_line

    cap = LineCap()
    for text, ends_line in pieces:
        cap.feed(text)
        if ends_line:
            capped, cut = cap.finish()
            say(terminal_log_line(capped, cut=cut))
