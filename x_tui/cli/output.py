"""How the headless verbs write: results on stdout, refusals on stderr as one line each.

Log lines are untrusted: on a terminal they go through ``x_tui.compute.sanitize.plain`` so a task
cannot move the cursor, retitle the window or hide text; piped, they are written as they are.
Messages (ours, a provider's, a configuration value) are written on one line with every control
character escaped. Nothing here imports Rich or Textual.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

PROG = "x-tui"
"""The program's name, prefixed to every message on stderr."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escaped(text: str) -> str:
    r"""``text`` on one line, each control character written as an escape such as ``\x1b``."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def say(text: str) -> None:
    """Write one line on stdout and flush it, so a pipe sees it at once."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def complain(message: str) -> None:
    """Write ``x-tui: <message>`` on stderr, on one line."""
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


def log_writer() -> Callable[[str], None]:
    """A function that writes one log line on stdout, made safe first when stdout is a terminal.

    Returns:
        The writer; it flushes after every line.
    """
    if not sys.stdout.isatty():
        return say
    from x_tui.compute.sanitize import plain

    def write(line: str) -> None:
        say(plain(line))

    return write
