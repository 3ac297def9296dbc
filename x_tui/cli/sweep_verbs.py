"""``x-tui run JOB --sweep ...``: submit every run of a sweep, then follow them all at once.

Without ``--detach`` each run's log lines are printed as they come, each prefixed with its values
(``[LR=1e-4] [train] step 10``); once every run has ended each one is fetched and its state
printed. Ctrl-C stops following; the runs go on, and each can be followed, fetched or cancelled
alone, or cancelled together with ``x-tui cancel SWEEP_ID``.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from x_tui.cli.output import complain, error_message, log_writer, say
from x_tui.compute.backend import ComputeBackend
from x_tui.compute.operations import backend_for, fetch_root
from x_tui.compute.sanitize import escaped
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.sweep_runs import SweepPlan, submit_sweep
from x_tui.compute.sweeps import Sweep, parameters_text
from x_tui.compute.worker.errors import UserError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
_WAKE_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class _Line:
    prefix: str
    text: str


@dataclass(frozen=True, slots=True)
class _Ended:
    run_id: str
    problem: str | None


def run_sweep(plan: SweepPlan, *, detach: bool, into: str | None) -> int:
    """Submit a sweep and, unless detached, follow, wait for and fetch every run.

    Args:
        plan: The sweep's plan.
        detach: Return once every run is submitted.
        into: Where to fetch the outputs (``DIR/RUN_ID``); the state directory when ``None``.

    Returns:
        0 when every run succeeded (or the sweep was detached), 1 when one did not, 130 when the
        user stopped following.

    Raises:
        UserError: If a run is refused (a run already submitted stays in the sweep's record).
    """
    sweep = submit_sweep(plan)
    count = len(sweep.runs)
    say(
        f"Submitted sweep {sweep.sweep_id}: {count} run{'' if count == 1 else 's'} of"
        f" {escaped(sweep.job)} to {escaped(sweep.backend)}."
    )
    for run in sweep.runs:
        say(f"  {run.run_id}  {escaped(parameters_text(run.parameters))}")
    if detach:
        return EXIT_OK
    store = RunStore()
    runs = [(run.parameters, store.load(run.run_id)) for run in sweep.runs]
    followed = [(parameters_text(values), handle, backend_for(handle)) for values, handle in runs]
    try:
        failed = _follow_all(followed)
    except KeyboardInterrupt:
        sys.stderr.write(
            f"\nStopped following sweep {sweep.sweep_id}; its runs go on. See them with:\n"
            f"  x-tui status --sweep {sweep.sweep_id}\n"
        )
        sys.stderr.flush()
        return EXIT_INTERRUPTED
    return _finish(sweep, followed, into=into, failed=failed)


def _follow_all(followed: list[tuple[str, RunHandle, ComputeBackend]]) -> bool:
    """Print every run's lines as they come; whether following one of them failed."""
    lines: queue.Queue[_Line | _Ended] = queue.Queue()

    def follow(prefix: str, handle: RunHandle, backend: ComputeBackend) -> None:
        problem = None
        try:
            for text in _logs(backend, handle):
                lines.put(_Line(prefix, text))
        except (UserError, OSError, ValueError, LookupError) as error:
            problem = error_message(error)
        lines.put(_Ended(handle.run_id, problem))

    for prefix, handle, backend in followed:
        threading.Thread(
            target=follow, args=(prefix, handle, backend), name=f"x-tui-follow-{handle.run_id}",
            daemon=True,
        ).start()  # fmt: skip
    writers = {prefix: log_writer(f"[{escaped(prefix)}] ") for prefix, _, _ in followed}
    running = len(followed)
    failed = False
    while running:
        try:
            item = lines.get(timeout=_WAKE_SECONDS)
        except queue.Empty:
            continue
        if isinstance(item, _Line):
            writers[item.prefix](item.text)
            continue
        running -= 1
        if item.problem is not None:
            complain(f"{item.run_id}: its log could not be followed: {item.problem}")
            failed = True
    return failed


def _logs(backend: ComputeBackend, handle: RunHandle) -> Iterator[str]:
    return backend.logs(handle, follow=True)


def _finish(
    sweep: Sweep,
    followed: list[tuple[str, RunHandle, ComputeBackend]],
    *,
    into: str | None,
    failed: bool,
) -> int:
    destination = Path(into) if into else fetch_root()
    succeeded = 0
    for prefix, handle, backend in followed:
        try:
            state = backend.status(handle)
            target = backend.fetch(handle, destination)
        except (UserError, OSError, ValueError, LookupError) as error:
            complain(f"{handle.run_id}: {error_message(error)}")
            failed = True
            continue
        say(
            f"{handle.run_id} {state.value} ({escaped(prefix)}); outputs in {escaped(str(target))}."
        )
        succeeded += state.value == "succeeded"
    total = len(followed)
    say(f"Sweep {sweep.sweep_id}: {succeeded} of {total} runs succeeded.")
    return EXIT_OK if succeeded == total and not failed else EXIT_FAILED
