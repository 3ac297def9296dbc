"""What the log view's ``s``, ``v`` and ``V`` keys write and run: a sanitised copy of the lines
shown, and the pager or editor command that opens one; no Textual.

A saved copy holds the lines as the view shows them (every escape sequence and control character
removed, ``\\r`` progress bars as their last state, colours dropped), the filtered rows only when
a filter is on. It is written to a temporary file beside the destination and renamed over it, so
a failure leaves nothing half-written.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from x_tui.compute.logindex import LogIndex
from x_tui.compute.sanitize import plain

DEFAULT_PAGER = "less"
"""The pager when ``$PAGER`` is not set."""

DEFAULT_EDITOR = "vi"
"""The editor when neither ``$VISUAL`` nor ``$EDITOR`` is set."""


def default_save_path(log: Path | None, directory: Path, *, filtered: bool) -> Path:
    """Where ``s`` offers to save: ``<dir>/<run dir>-<log name>[-filtered].txt``, not yet taken.

    Args:
        log: The log file shown.
        directory: The directory to save in (the working directory).
        filtered: Whether a filter is on (said in the name).

    Returns:
        A path that does not exist yet (``-2``, ``-3``... added when needed).
    """
    stem = "log" if log is None else f"{log.parent.name}-{log.stem}".strip("-")
    stem += "-filtered" if filtered else ""
    candidate = directory / f"{stem}.txt"
    number = 2
    while candidate.exists():
        candidate = directory / f"{stem}-{number}.txt"
        number += 1
    return candidate


def export_lines(
    index: LogIndex,
    rows: Iterable[int] | None,
    destination: Path,
    *,
    cancelled: Callable[[], bool] = lambda: False,
) -> int:
    """Write the lines (every line, or the line numbers ``rows``) as plain sanitised text.

    Args:
        index: The log's index.
        rows: Line numbers to write in order; ``None`` writes every line known now.
        destination: The file to write (replaced whole, never half-written).
        cancelled: Polled between lines; writing stops (and nothing is written) when true.

    Returns:
        How many lines were written.

    Raises:
        OSError: If the destination cannot be written (nothing is left behind then).
    """
    numbers = rows if rows is not None else range(index.line_count)
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(
        prefix=f".{destination.name}.", suffix=".part", dir=destination.parent
    )
    written = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for number in numbers:
                if cancelled():
                    raise InterruptedError("export cancelled")
                try:
                    text = index.line(number).text
                except IndexError:  # the file shrank meanwhile
                    break
                out.write(plain(text))
                out.write("\n")
                written += 1
        os.replace(temporary, destination)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return written


def pager_command(environ: Mapping[str, str], path: Path, line: int) -> list[str]:
    """The command that shows ``path`` in the user's pager, at ``line`` when it is ``less``.

    Args:
        environ: The environment (``PAGER``).
        path: The file.
        line: The line to start at, from 1.

    Returns:
        The argument vector.
    """
    words = shlex.split(environ.get("PAGER", "").strip() or DEFAULT_PAGER)
    if Path(words[0]).name == "less":
        words.append(f"+{line}g")
    return [*words, str(path)]


def editor_command(environ: Mapping[str, str], path: Path, line: int) -> list[str]:
    """The command that opens ``path`` in the user's editor at ``line`` (``+N``).

    Args:
        environ: The environment (``VISUAL``, else ``EDITOR``).
        path: The file.
        line: The line to open at, from 1.

    Returns:
        The argument vector.
    """
    chosen = environ.get("VISUAL", "").strip() or environ.get("EDITOR", "").strip()
    words = shlex.split(chosen or DEFAULT_EDITOR)
    return [*words, f"+{line}", str(path)]
