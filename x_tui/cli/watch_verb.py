"""``x-tui watch``: the background watcher of this user's state directory.

``x-tui watch`` follows every unfinished run in the foreground until Ctrl-C; ``--detach`` starts
it in the background (it outlives the terminal and the SSH link), ``--status`` says whether one
runs (exit 0) or not (exit 1), ``--stop`` stops it. A second watcher for the same state directory
is refused (exit 2) naming the first one's pid. What the watcher sees goes to
``<state>/x-tui/events.jsonl``; what it announces and how is the settings file's ``[notify]``.
"""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path

from x_tui.cli.output import complain, say
from x_tui.compute.worker.errors import UserError

EXIT_NOT_RUNNING = 1


def watch(args: argparse.Namespace) -> int:
    """``x-tui watch [--detach | --status | --stop]``.

    Args:
        args: The parsed command line.

    Returns:
        0; 1 for ``--status`` or ``--stop`` when no watcher runs.

    Raises:
        WatcherRunning: If a watcher already runs (a refusal: exit 2, naming its pid).
    """
    from x_tui.compute.store import default_state_dir

    state_dir = default_state_dir()
    try:
        return _watch(args, state_dir)
    except OSError as error:
        raise StateDirError(f"the watcher cannot use {state_dir}: {error}") from None


class StateDirError(UserError):
    """The state directory cannot hold the watcher's lock, log or events."""


def _watch(args: argparse.Namespace, state_dir: Path) -> int:
    from x_tui.app.watch_daemon import log_path, start_detached, stop_watcher
    from x_tui.app.watch_lock import running_pid

    if args.status:
        pid = running_pid(state_dir)
        if pid is None:
            say(f"no watcher runs for {state_dir}")
            return EXIT_NOT_RUNNING
        say(f"a watcher runs for {state_dir} (pid {pid})")
        return 0
    if args.stop:
        stopped = stop_watcher(state_dir)
        if stopped is None:
            say(f"no watcher runs for {state_dir}")
            return EXIT_NOT_RUNNING
        say(f"stopped the watcher (pid {stopped})")
        return 0
    if args.detach:
        pid = start_detached(state_dir, lambda stop: _follow(state_dir, stop, logged=True))
        say(f"watching in the background (pid {pid}); log: {log_path(state_dir)}")
        return 0
    from x_tui.app.watch_daemon import serve_until_stopped
    from x_tui.app.watch_lock import acquire

    lock = acquire(state_dir)
    say(f"watching {state_dir} (Ctrl-C stops)")
    serve_until_stopped(lock, lambda stop: _follow(state_dir, stop))
    return 0


def _follow(state_dir: Path, stop: threading.Event, *, logged: bool = False) -> None:
    from x_tui.app.service import Service
    from x_tui.app.settings import load_settings
    from x_tui.app.watch_budgets import BudgetCheck
    from x_tui.app.watch_resubmits import Resubmitter
    from x_tui.app.watcher import Watcher

    settings = load_settings()
    for problem in settings.problems:
        complain(problem)
    service = Service(state_dir=state_dir)
    budgets = BudgetCheck(service)
    watcher = Watcher(
        service,
        settings.notify,
        checks=[budgets],
        cost_of=budgets.cost_of,
        resubmit=Resubmitter(service),
    )
    if logged:
        say(f"watching {state_dir} (pid {os.getpid()})")
    watcher.start()
    try:
        while not stop.wait(1.0):
            pass
    finally:
        watcher.stop()
        if logged:
            say("stopped")
