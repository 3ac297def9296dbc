"""``x-tui teardown RUN_ID``: remove what a run holds on its provider.

Only a backend that declares ``Capability.TEARDOWN`` holds anything once a run ends (SkyPilot: the
run's cluster, and with the copy transport the outputs on it); for any other backend the verb is
refused in one line. A run still going is cancelled first. A SkyPilot run whose outputs exist only
on its cluster (the copy transport, never fetched) is refused in one line unless ``--force``.
"""

from __future__ import annotations

import argparse

from x_tui.cli.output import complain, say
from x_tui.compute.backend import Capability, ability
from x_tui.compute.operations import backend_for
from x_tui.compute.sanitize import escaped
from x_tui.compute.store import RunStore

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2


def teardown(args: argparse.Namespace) -> int:
    """``x-tui teardown RUN_ID``: remove what the run holds on its provider.

    This removes a run that already ended too (unlike ``cancel``), and with it anything kept only
    on the provider: where the outputs live only there and were never fetched, the backend refuses
    unless ``--force``.

    Args:
        args: The parsed command line.

    Returns:
        0; 1 when a step of the teardown failed (each failure named on stderr); 2 when the run's
        backend holds nothing to tear down (one line on stderr).

    Raises:
        UserError: If the run has no readable handle, or its backend cannot be rebuilt or answer,
            or its outputs exist only on the provider and ``--force`` was not given.
    """
    handle = RunStore().load(args.run_id)
    backend = backend_for(handle)
    tearer = ability(backend, Capability.TEARDOWN)
    if tearer is None:
        complain(
            f"nothing to tear down for the {handle.backend} backend ({handle.run_id}); to stop"
            f" a run still going: x-tui cancel {handle.run_id}"
        )
        return EXIT_REFUSED
    try:
        tearer.teardown(handle, force=args.force)
    except ExceptionGroup as group:
        for failure in group.exceptions:
            complain(f"teardown {handle.run_id}: {failure}")
        return EXIT_FAILED
    say(f"Tore down {handle.run_id} on {escaped(handle.backend)}.")
    return EXIT_OK
