"""The verbs that work on a stored run handle: ``status``, ``logs``, ``fetch`` and ``cancel``.

Each one rebuilds the run's backend from the settings frozen into its handle, so it works from any
shell and any directory, whatever the project's configuration says now.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from x_tui.cli.describe import age_text
from x_tui.cli.output import complain, error_message, escaped, log_writer, print_json, say
from x_tui.compute.backend import ComputeBackend, RunState
from x_tui.compute.errors import UserError
from x_tui.compute.operations import backend_for, fetch_root
from x_tui.compute.records import JsonValue, format_datetime
from x_tui.compute.store import RunHandle, RunStore

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130


def follow_logs(backend: ComputeBackend, handle: RunHandle, *, follow: bool) -> int | None:
    """Print a run's log lines as they come.

    Args:
        backend: The run's backend.
        handle: The run.
        follow: Keep printing until the run ends.

    Returns:
        ``None`` once the lines ended, or 130 when the user pressed Ctrl-C; the run goes on, and
        stderr says how to follow it again.
    """
    write = log_writer()
    try:
        for line in backend.logs(handle, follow=follow):
            write(line)
    except KeyboardInterrupt:
        sys.stderr.write(
            f"\nStopped following {handle.run_id}; the run goes on. Follow it again with:\n"
            f"  x-tui logs {handle.run_id} --follow\n"
        )
        sys.stderr.flush()
        return EXIT_INTERRUPTED
    return None


def _run_json(handle: RunHandle, state: RunState | None) -> dict[str, JsonValue]:
    return {
        "run_id": handle.run_id,
        "backend": handle.backend,
        "job": handle.job,
        "state": state.value if state is not None else None,
        "project": handle.project,
        "submitted_at": format_datetime(handle.submitted_at),
    }


def _line(handle: RunHandle, state: str, *, now: dt.datetime | None) -> str:
    line = f"{handle.run_id}  {escaped(handle.backend)}  {handle.job}  {state}"
    return line if now is None else f"{line}  {age_text(handle.submitted_at, now)}"


def status(args: argparse.Namespace) -> int:
    """``x-tui status [RUN_ID] [--json]``: ``<run_id>  <backend>  <job>  <state>`` per run.

    On a terminal a fifth column says how long ago each run was submitted.

    Args:
        args: The parsed command line.

    Returns:
        0; 1 when a stored record cannot be read or a run's state cannot be had (every readable
        run is still listed, and each problem named on stderr).

    Raises:
        UserError: If the one run asked for has no readable handle, or its backend cannot be
            rebuilt or answer.
    """
    store = RunStore()
    now = dt.datetime.now(dt.UTC) if sys.stdout.isatty() and not args.json else None
    if args.run_id is not None:
        handle = store.load(args.run_id)
        state = backend_for(handle).status(handle)
        if args.json:
            print_json(_run_json(handle, state))
        else:
            say(_line(handle, state.value, now=now))
        return EXIT_OK
    stored = store.read_all()
    code = EXIT_OK
    runs: list[dict[str, JsonValue]] = []
    backends: dict[str, ComputeBackend] = {}
    for handle in stored.handles:
        answer: RunState | None = None
        try:
            key = f"{handle.backend}\0{sorted(handle.settings.items())!r}"
            if key not in backends:
                backends[key] = backend_for(handle)
            answer = backends[key].status(handle)
        except (UserError, ValueError, LookupError, OSError) as error:
            complain(f"{handle.run_id}: state unknown: {error_message(error)}")
            code = EXIT_FAILED
        if args.json:
            runs.append(_run_json(handle, answer))
        else:
            say(_line(handle, answer.value if answer else "unknown", now=now))
    for path, reason in stored.unreadable.items():
        complain(f"{path}: {reason}")
        code = EXIT_FAILED
    if args.json:
        unreadable = [{"path": str(path), "reason": why} for path, why in stored.unreadable.items()]
        print_json({"runs": runs, "unreadable": unreadable})
    return code


def logs(args: argparse.Namespace) -> int:
    """``x-tui logs RUN_ID [--follow]``: the run's log lines.

    Args:
        args: The parsed command line.

    Returns:
        0, or 130 when the user stopped following (the run goes on).

    Raises:
        UserError: If the run has no readable handle or its backend cannot be rebuilt.
    """
    handle = RunStore().load(args.run_id)
    stopped = follow_logs(backend_for(handle), handle, follow=args.follow)
    return EXIT_OK if stopped is None else stopped


def fetch(args: argparse.Namespace) -> int:
    """``x-tui fetch RUN_ID [--into DIR]``: copy the outputs to ``DIR/RUN_ID``.

    Args:
        args: The parsed command line.

    Returns:
        0.

    Raises:
        UserError: If the run has no readable handle or its backend cannot be rebuilt.
    """
    handle = RunStore().load(args.run_id)
    target = backend_for(handle).fetch(handle, Path(args.into) if args.into else fetch_root())
    say(f"Fetched {handle.run_id} to {escaped(str(target))}.")
    return EXIT_OK


def cancel(args: argparse.Namespace) -> int:
    """``x-tui cancel RUN_ID``: stop the run; one that already ended is left as it is.

    Args:
        args: The parsed command line.

    Returns:
        0; 1 when a step of the cancellation failed (each failure named on stderr).

    Raises:
        UserError: If the run has no readable handle or its backend cannot be rebuilt.
    """
    handle = RunStore().load(args.run_id)
    backend = backend_for(handle)
    before = backend.status(handle)
    if before.is_final:
        say(f"{handle.run_id} already ended ({before.value}); nothing to cancel.")
        return EXIT_OK
    try:
        backend.cancel(handle)
    except ExceptionGroup as group:
        for failure in group.exceptions:
            complain(f"cancel {handle.run_id}: {failure}")
        return EXIT_FAILED
    say(f"Cancelled {handle.run_id}.")
    return EXIT_OK
