"""The ``x-tui`` command line: its verbs and options (argparse, standard library only)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from x_tui import __version__
from x_tui.cli.output import PROG

DESCRIPTION = (
    "Launch and watch the compute runs a project declares in pyproject.toml "
    "([tool.substrax.compute]). With no command, open the terminal UI."
)


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Refuse the command line in one line naming what is wrong.

        Args:
            message: argparse's description of the problem.

        Raises:
            SystemExit: Always, with status 2.
        """
        from x_tui.compute.sanitize import escaped

        sys.stderr.write(f"{PROG}: {escaped(message)} (see '{self.prog} --help')\n")
        raise SystemExit(2)


def _project_option(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument(
        "--project",
        metavar="DIR",
        default=default,
        help="the project directory (default: the nearest directory upward with a pyproject.toml)",
    )


def _json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def _run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the job's name in [tool.substrax.compute.jobs]")
    parser.add_argument(
        "--backend", metavar="NAME", help="the backend (default: the configured one)"
    )
    parser.add_argument(
        "--accelerator",
        metavar="KIND[:COUNT]",
        help="replace the configured accelerator for this run, such as L4 or H100:8",
    )
    parser.add_argument(
        "--sweep",
        metavar="NAME=V1,V2",
        action="append",
        default=[],
        help="one run per value, each with NAME=value in its tasks' environment; repeat for a "
        "grid of every combination (the runs share one sweep id)",
    )


def _watch_options(parser: argparse.ArgumentParser) -> None:
    """The ``watch`` verb's options (one of them at most)."""
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--detach", action="store_true", help="run in the background, past the terminal's end"
    )
    what.add_argument(
        "--status", action="store_true", help="exit 0 while a watcher runs, 1 otherwise"
    )
    what.add_argument("--stop", action="store_true", help="stop the running watcher")


def _metrics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument(
        "--follow", action="store_true", help="print again as samples come, until the run ends"
    )
    _json_option(parser)


def _serve_options(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` verb's options."""
    parser.add_argument("--port", type=int, default=8765, help="the port (default: 8765)")
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="let the browser cancel, fetch, re-run and submit (default: read-only)",
    )


def build_parser() -> Parser:
    """The ``x-tui`` argument parser.

    Returns:
        The parser; ``verb`` is ``None`` when no command is given.
    """
    parser = Parser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _project_option(parser, default=None)
    parser.add_argument(
        "--low-bandwidth",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the TUI's low-bandwidth profile (fewer frames, batched log updates, no animation) "
        "for slow SSH links (default: the settings file's choice)",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND")

    def verb(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = verbs.add_parser(name, help=help_text, description=help_text)
        # Also accepted after the verb (as substrax-compute takes it); not given there, the
        # global value stands.
        _project_option(sub, default=argparse.SUPPRESS)
        return sub

    jobs = verb("jobs", "List the project's jobs, their tasks and resources.")
    _json_option(jobs)

    check = verb(
        "check",
        "List the jobs substrax itself could not run (x-tui's extensions in its table), each "
        "with the overlay table that fixes it; exit 1 when there is any.",
    )
    _json_option(check)

    plan = verb("plan", "Show the resolved job and what the backend would be asked for.")
    _run_options(plan)
    _json_option(plan)

    run = verb("run", "Submit a job, print its logs as they come, then fetch its outputs.")
    _run_options(run)
    run.add_argument("--detach", action="store_true", help="return once the run is submitted")
    run.add_argument(
        "--max-cost",
        metavar="USD",
        help="the run's budget: the watcher notifies at 80%% and cancels the run once its cost"
        " so far reaches it (replaces the job's max_cost)",
    )
    run.add_argument(
        "--max-duration",
        metavar="DURATION",
        help="cancel the run once it has run this long, such as 2h or 90m (the watcher"
        " notifies at 80%%; replaces the job's max_duration)",
    )
    run.add_argument("--into", metavar="DIR", help="fetch the outputs here (default: state dir)")

    status = verb("status", "Print the state of one run, or of every stored run.")
    status.add_argument(
        "run_id", metavar="RUN_ID", nargs="?", help="the run, or a sweep id (default: all)"
    )
    status.add_argument("--sweep", metavar="SWEEP_ID", help="only the runs of this sweep")
    _json_option(status)

    _metrics_options(verb("metrics", "Print a run's device samples, metrics and progress."))

    logs = verb("logs", "Print a run's log lines.")
    logs.add_argument("run_id", metavar="RUN_ID")
    how = logs.add_mutually_exclusive_group()
    how.add_argument("--follow", action="store_true", help="keep printing until the run ends")
    how.add_argument(
        "--attempts",
        action="store_true",
        help="each attempt of every retried task, under a header: how it ended, then its "
        "stdout and stderr",
    )

    fetch = verb("fetch", "Copy a run's outputs to DIR/RUN_ID.")
    fetch.add_argument("run_id", metavar="RUN_ID")
    fetch.add_argument("--into", metavar="DIR", help="where to copy (default: state dir)")

    cancel = verb(
        "cancel", "Stop a run, or every run of a sweep; a run that already ended is left as it is."
    )
    cancel.add_argument("run_id", metavar="RUN_ID|SWEEP_ID")

    delete = verb(
        "delete",
        "Delete a finished run: its record and its files on this machine (asks first; "
        "a run still going is refused).",
    )
    delete.add_argument("run_id", metavar="RUN_ID")
    delete.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal)")

    teardown = verb(
        "teardown",
        "Remove what a run holds on its provider (SkyPilot: its cluster), also after the run "
        "ended; a run still going is cancelled. Refused while the outputs live only there "
        "(fetch them first).",
    )
    teardown.add_argument("run_id", metavar="RUN_ID")
    teardown.add_argument(
        "--force",
        action="store_true",
        help="tear down even where the outputs exist only on the provider (they are lost)",
    )

    backends = verb(
        "backends", "List the registered backends; with --accelerators, what each one offers."
    )
    backends.add_argument(
        "--accelerators",
        action="store_true",
        help="the accelerator kinds, counts per node and hourly prices each backend offers",
    )
    backends.add_argument("--backend", metavar="NAME", help="only this backend")
    _json_option(backends)

    _watch_options(
        verb(
            "watch",
            "Follow every unfinished run in the background, record what happens in the state "
            "directory's events file and announce it as the settings' [notify] table asks; one "
            "watcher per state directory.",
        )
    )
    _serve_options(
        verb(
            "serve",
            "Show the terminal UI in a browser on this machine (127.0.0.1 only, behind a random "
            "token in the printed URL; read-only unless --allow-actions). From elsewhere, reach it "
            "through an SSH tunnel: ssh -L PORT:127.0.0.1:PORT HOST.",
        )
    )

    verb("demo", "Open the terminal UI on a bundled demo project.")
    return parser
