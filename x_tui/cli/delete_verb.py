"""``x-tui delete RUN_ID [--yes]``: delete a finished run's record and its files on this machine.

A run still going is refused (exit 2; ``x-tui cancel`` stops it). Without ``--yes`` the verb asks
on the terminal, and refuses in one line when there is none to ask on (exit 2), so a script never
deletes by accident. Outputs already fetched and anything on a provider are left alone
(``x-tui teardown`` removes those). See ``x_tui.compute.run_removal`` for what goes and in which
order.
"""

from __future__ import annotations

import argparse
import sys

from x_tui.cli.output import complain, say
from x_tui.compute.operations import backend_for
from x_tui.compute.run_removal import check_ended, delete_run, plan_removal
from x_tui.compute.sanitize import escaped
from x_tui.compute.store import RunStore, default_state_dir

EXIT_OK = 0
EXIT_DECLINED = 1
EXIT_REFUSED = 2


def delete(args: argparse.Namespace) -> int:
    """``x-tui delete RUN_ID [--yes]``: delete a finished run's record and local files.

    Args:
        args: The parsed command line.

    Returns:
        0 once deleted; 1 when the user answered no; 2 when the run is still going, or there
        is no terminal to ask on and ``--yes`` was not given (one line on stderr).

    Raises:
        UserError: If the run has no readable record, has not ended, its backend cannot be
            rebuilt, or the record names an unexpected directory.
    """
    store = RunStore()
    handle = store.load(args.run_id)
    backend = backend_for(handle)
    state = backend.status(handle)
    check_ended(handle, state)
    spooled = default_state_dir() / "x-tui" / "logs" / f"{handle.run_id}.log"
    removal = plan_removal(handle, backend, store, side_files=(spooled,))
    if not args.yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            complain(f"delete {handle.run_id}: no terminal to ask on; add --yes to delete it")
            return EXIT_REFUSED
        where = f" and {removal.run_dir}" if removal.run_dir is not None else ""
        sys.stdout.write(
            f"Delete run {handle.run_id} ({state.value}): its record{escaped(where)}? [y/N] "
        )
        sys.stdout.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            say(f"Left {handle.run_id} as it is.")
            return EXIT_DECLINED
    delete_run(handle, backend, store, side_files=(spooled,), state=state)
    say(f"Deleted {handle.run_id}.")
    return EXIT_OK
