"""``x-tui``: the terminal UI with no command, headless verbs for scripts and CI.

``x-tui`` opens the TUI on the project around the current directory and ``x-tui demo`` on a
bundled demo project; ``jobs``, ``check``, ``plan``, ``run``, ``status``, ``logs``, ``metrics``,
``fetch``, ``cancel``, ``delete``, ``teardown``, ``backends`` and ``watch`` run headless and never
import Textual or Rich (a test checks ``sys.modules``). Exit status: 0 on success; 1 for a run that
did not succeed, a ``status`` that met an unreadable record, a ``check`` that found jobs substrax
could not run, a step of a ``cancel`` or ``teardown`` that failed, or a ``delete`` the user
declined; 2 for a refused command, with one line on stderr and no traceback; 130 when the user stops
following a run, which goes on running.

Only the parser is imported at start; each verb imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Sequence

from x_tui.cli.output import complain, error_message
from x_tui.cli.parser import build_parser

__all__ = ["main"]

EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130

REFUSALS = (ValueError, LookupError, FileNotFoundError)
"""Errors that refuse a command (exit 2, one line); ``UserError`` subclasses are among them."""


def _verb(name: str) -> Callable[[argparse.Namespace], int]:
    if name in ("jobs", "plan", "run"):
        from x_tui.cli import job_verbs

        return getattr(job_verbs, name)  # type: ignore[no-any-return]
    if name == "backends":
        from x_tui.cli.backend_verbs import backends

        return backends
    if name == "check":
        from x_tui.cli.check_verb import check

        return check
    if name == "metrics":
        from x_tui.cli.metrics_verb import metrics

        return metrics
    if name == "serve":
        from x_tui.cli.serve_verb import serve

        return serve
    if name == "watch":
        from x_tui.cli.watch_verb import watch

        return watch
    if name == "teardown":
        from x_tui.cli.teardown_verb import teardown

        return teardown
    if name == "delete":
        from x_tui.cli.delete_verb import delete

        return delete
    from x_tui.cli import run_verbs

    return getattr(run_verbs, name)  # type: ignore[no-any-return]


def _open_tui(args: argparse.Namespace) -> int:
    from x_tui.app import run_app

    if args.verb == "demo":
        # run_app copies the bundled demo project to a writable place (once) and opens it.
        return run_app(None, demo=True, low_bandwidth=args.low_bandwidth)
    from x_tui.cli.project_arg import project_root

    return run_app(project_root(args), low_bandwidth=args.low_bandwidth)


def _tolerant_streams() -> None:
    # A log line the terminal's encoding cannot show is escaped, never a crash mid-run.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``x-tui`` with a command line.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status.
    """
    _tolerant_streams()
    args = build_parser().parse_args(argv)
    from x_tui.compute.worker.errors import UserError

    try:
        if args.verb in (None, "demo"):
            return _open_tui(args)
        return _verb(args.verb)(args)
    except (UserError, *REFUSALS) as error:
        complain(error_message(error))
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``x-tui logs ID | head``); say nothing more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
