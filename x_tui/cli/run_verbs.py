"""The verbs that work on a stored run handle: ``status``, ``logs``, ``fetch`` and ``cancel``.

Each one rebuilds the run's backend from the settings frozen into its handle, so it works from any
shell and any directory, whatever the project's configuration says now.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import gc
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from x_tui.cli.describe import age_text
from x_tui.cli.guard_notes import GuardNotes, guard_json, with_guard
from x_tui.cli.metrics_verb import flags_text, watch_json
from x_tui.cli.output import complain, error_message, print_json, print_log, say, say_lines
from x_tui.compute.backend import Capability, ComputeBackend, RunState, ability, pieces_of
from x_tui.compute.launches import SUBMITTING, LaunchBook, LaunchRecord, StoredLaunches
from x_tui.compute.operations import backend_for, fetch_root, read_launches
from x_tui.compute.outputs import check_destination
from x_tui.compute.sanitize import escaped
from x_tui.compute.store import ListedRun, RunHandle, RunListing, RunStore, SettingsOrigin
from x_tui.compute.sweep_runs import list_sweeps, load_sweep, sweep_of
from x_tui.compute.sweeps import Sweep, is_sweep_id, parameters_text
from x_tui.compute.worker.errors import RunNotFoundError, UserError
from x_tui.compute.worker.records import JsonValue, format_datetime

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130


def follow_logs(backend: ComputeBackend, handle: RunHandle, *, follow: bool) -> int | None:
    """Print a run's log lines as they come (a line of any length in bounded memory).

    Args:
        backend: The run's backend.
        handle: The run.
        follow: Keep printing until the run ends.

    Returns:
        ``None`` once the lines ended, or 130 when the user pressed Ctrl-C; the run goes on, and
        stderr says how to follow it again.
    """
    try:
        print_log(pieces_of(backend, handle, follow=follow))
    except KeyboardInterrupt:
        sys.stderr.write(
            f"\nStopped following {handle.run_id}; the run goes on. Follow it again with:\n"
            f"  x-tui logs {handle.run_id} --follow\n"
        )
        sys.stderr.flush()
        return EXIT_INTERRUPTED
    return None


def _run_json(
    run: RunHandle | ListedRun,
    state: RunState | None,
    sweep: Sweep | None = None,
    origin: SettingsOrigin | None = None,
) -> dict[str, JsonValue]:
    return {
        "run_id": run.run_id,
        "backend": run.backend,
        "job": run.job,
        "state": state.value if state is not None else None,
        "project": run.project,
        "submitted_at": format_datetime(run.submitted_at),
        "sweep_id": sweep.sweep_id if sweep is not None else None,
        "parameters": (dict(sweep.parameters_of(run.run_id) or {}) if sweep is not None else None),
        "handle_version": run.schema_version,
        "settings_from": origin.value if origin is not None else None,
    }


def _sweep_json(sweep: Sweep) -> dict[str, JsonValue]:
    return {
        "sweep_id": sweep.sweep_id,
        "job": sweep.job,
        "backend": sweep.backend,
        "project": sweep.project,
        "created_at": format_datetime(sweep.created_at),
        "axes": {axis.name: list(axis.values) for axis in sweep.axes},
        "runs": list(sweep.run_ids),
    }


def _line(
    run: RunHandle | ListedRun,
    state: str,
    *,
    now: dt.datetime | None,
    origin: SettingsOrigin | None = None,
    escape: Callable[[str], str] = escaped,
) -> str:
    """A run's status line: id, backend, job, state, age, where its settings come from."""
    line = f"{run.run_id}  {escape(run.backend)}  {escape(run.job)}  {state}"
    line = line if now is None else f"{line}  {age_text(run.submitted_at, now)}"
    if origin is SettingsOrigin.PROJECT:
        line = f"{line}  ({_FROM_PROJECT})"
    return line


_FROM_PROJECT = SettingsOrigin.PROJECT.describe()


def _backend_key(handle: RunHandle) -> str:
    """Runs whose backend is built once and asked together: one backend, the same settings."""
    return f"{handle.backend}\0{sorted(handle.settings.items())!r}"


def _backend_of(handle: RunHandle, built: dict[str, ComputeBackend]) -> ComputeBackend:
    """The run's backend, built once per backend and settings (kept in ``built``)."""
    key = _backend_key(handle)
    if key not in built:
        built[key] = backend_for(handle)
    return built[key]


class _Handles:
    """The handles of a listing's runs, each made once, when it is first needed."""

    def __init__(self, listing: RunListing) -> None:
        self.listing = listing
        self.made: dict[str, RunHandle] = {}

    def of(self, run: ListedRun) -> RunHandle:
        handle = self.made.get(run.run_id)
        if handle is None:
            handle = self.made[run.run_id] = self.listing.handle(run)
        return handle


def _states(
    runs: Sequence[ListedRun],
    handles: _Handles,
    built: dict[str, ComputeBackend],
    store: RunStore,
) -> tuple[dict[str, RunState | None], bool]:
    """Every run's state, and whether one could not be had.

    A run whose final state x-tui keeps (``<state>/x-tui/final-states.json``, which the TUI and
    this verb write) is not asked about again, and its handle is not even made; a final state
    learnt here is kept there. The others are asked by backend: runs of one backend with the
    same settings together, one ``statuses`` call for all of them where the backend declares
    ``Capability.STATUSES`` (as the run monitor asks once per poll round), else one ``status``
    call each. Each backend is built once, and kept in ``built`` (by :func:`_backend_key`) for
    what the caller asks next.
    """
    from x_tui.app.final_states import final_states_path, keep_final_states, read_final_states

    kept_path = final_states_path(store.root)
    kept = read_final_states(kept_path) or {}
    states: dict[str, RunState | None] = {}
    groups: dict[str, list[RunHandle]] = {}
    for run in runs:
        known = kept.get(run.run_id)
        if known is not None:
            states[run.run_id] = known[0]
        else:
            states[run.run_id] = None
            handle = handles.of(run)
            groups.setdefault(_backend_key(handle), []).append(handle)
    failed = False

    def unknown(handle: RunHandle, why: object) -> None:
        nonlocal failed
        complain(f"{handle.run_id}: state unknown: {why}")
        failed = True

    for group in groups.values():
        try:
            backend = _backend_of(group[0], built)
        except (UserError, ValueError, LookupError, OSError) as error:
            for handle in group:
                unknown(handle, error_message(error))
            continue
        batch = ability(backend, Capability.STATUSES)
        if batch is None:
            for handle in group:
                try:
                    states[handle.run_id] = backend.status(handle)
                except (UserError, ValueError, LookupError, OSError) as error:
                    unknown(handle, error_message(error))
            continue
        try:
            answers = batch.statuses(group)
        except (UserError, ValueError, LookupError, OSError) as error:
            for handle in group:
                unknown(handle, error_message(error))
            continue
        for handle in group:
            answer = answers.get(handle.run_id)
            if isinstance(answer, RunState):
                states[handle.run_id] = answer
            else:
                unknown(
                    handle, "its backend did not say" if answer is None else error_message(answer)
                )
    learnt = {
        handle.run_id: state
        for group in groups.values()
        for handle in group
        if (state := states[handle.run_id]) is not None and state.is_final
    }
    if learnt:
        keep_final_states(kept_path, {run_id: (state, None) for run_id, state in learnt.items()})
    return states, failed


def _counts(states: list[RunState | None]) -> str:
    names = [state.value if state is not None else "unknown" for state in states]
    return ", ".join(f"{names.count(name)} {name}" for name in dict.fromkeys(names))


def status(args: argparse.Namespace) -> int:
    """``x-tui status [RUN_ID|SWEEP_ID] [--sweep SWEEP_ID] [--json]``: the runs' states.

    One line per run, newest first, ``<run_id>  <backend>  <job>  <state>``; on a terminal a
    fifth column says how long ago each run was submitted. The runs of a sweep are listed
    together under a ``sweep <sweep_id>  <job>  <n> runs: <counts>`` line, indented, each
    followed by its values. ``--sweep`` (or a sweep id in place of the run id) lists one sweep's
    runs only. The JSON document has ``runs`` (each with its ``sweep_id`` and ``parameters``, or
    nulls), ``sweeps`` and ``unreadable``.

    The store is listed through its index, and a run whose final state is kept is not asked
    about again: the text listing makes a run's handle, and reads its side files, only while it
    has not finished, so 100,000 finished runs list at once, written in one piece.

    Args:
        args: The parsed command line.

    Returns:
        0; 1 when a stored record cannot be read or a run's state cannot be had (every readable
        run is still listed, and each problem named on stderr).

    Raises:
        UserError: If the one run (or sweep) asked for has no readable record, or the run's
            backend cannot be rebuilt or answer.
    """
    store = RunStore()
    now = dt.datetime.now(dt.UTC) if sys.stdout.isatty() and not args.json else None
    wanted = args.sweep
    launches = read_launches(store)
    if args.run_id is not None and is_sweep_id(args.run_id):
        wanted = args.run_id
    elif args.run_id is not None:
        return _status_one(store, launches.records, args.run_id, as_json=args.json, now=now)
    with _collector_paused():
        return _status_all(args, store, launches, wanted, now)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while (on again after, if it was on).

    Listing 100,000 runs makes a few million objects and no reference cycle; the collector's
    passes over all of them as they are made would cost a quarter of the listing's time.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _status_all(
    args: argparse.Namespace,
    store: RunStore,
    launches: StoredLaunches,
    wanted: str | None,
    now: dt.datetime | None,
) -> int:
    """``x-tui status`` of every run (or a sweep's): see :func:`status`."""
    listing = store.listing()
    recorded = list_sweeps()
    runs: Sequence[ListedRun] = listing.runs
    sweeps = list(recorded.sweeps)
    if wanted is not None:
        chosen = load_sweep(wanted)
        members = set(chosen.run_ids)
        runs = [run for run in runs if run.run_id in members]
        sweeps = [chosen]
    built: dict[str, ComputeBackend] = {}
    handles = _Handles(listing)
    states, failed = _states(runs, handles, built, store)
    code = EXIT_FAILED if failed else EXIT_OK
    by_run = {run_id: sweep for sweep in sweeps for run_id in sweep.run_ids}
    # The side files of a finished run are read for --json only (its last progress is in
    # ``status RUN_ID`` too); budgets and endings come from two directory listings.
    notes = GuardNotes(store.root.parent.parent)

    def watch(run: ListedRun) -> dict[str, JsonValue] | None:
        """What a text line adds about a run: none for a finished run without guard notes."""
        state = states[run.run_id]
        found = None if state in _FINAL else _watch_of(handles.of(run), state, built)
        if notes.holds(run.run_id):
            return {**(found or _NO_WATCH), **notes.json(run.run_id)}
        return found

    submitting = [] if wanted is not None else list(launches.records)
    if args.json:
        documents = [_launch_json(record) for record in submitting]
        documents += [
            {
                **_run_json(run, states[run.run_id], by_run.get(run.run_id), run.origin),
                **_watch_of(handles.of(run), states[run.run_id], built),
                **notes.json(run.run_id),
            }
            for run in runs
        ]
    for record in submitting:
        if not args.json:
            say(_line(record.handle(), _launch_state(record).value, now=now))
            if record.reason:
                complain(f"{record.run_id}: {record.reason}")
    lines = (
        [] if args.json else _listing_lines(runs, states, by_run, watch, now=now, noted=notes.any())
    )
    say_lines(lines)
    unreadable = {
        **listing.unreadable,
        **(recorded.unreadable if wanted is None else {}),
        **(launches.unreadable if wanted is None else {}),
    }
    for path, reason in unreadable.items():
        complain(f"{path}: {reason}")
        code = EXIT_FAILED
    if args.json:
        print_json(
            {
                "runs": documents,
                "sweeps": [_sweep_json(sweep) for sweep in sweeps],
                "unreadable": [
                    {"path": str(path), "reason": why} for path, why in unreadable.items()
                ],
            }
        )
    return code


def _listing_lines(
    runs: Sequence[ListedRun],
    states: Mapping[str, RunState | None],
    by_run: Mapping[str, Sweep],
    watch: Callable[[ListedRun], dict[str, JsonValue] | None],
    *,
    now: dt.datetime | None,
    noted: bool,
) -> list[str]:
    """The text listing: a line a run, a sweep's runs together under its own line.

    ``watch`` says what a line adds about its run; it is not asked about a finished run when
    no run has guard notes (``noted`` false).
    """
    members: dict[str, list[ListedRun]] = {}
    for run in runs:
        sweep = by_run.get(run.run_id)
        if sweep is not None:
            members.setdefault(sweep.sweep_id, []).append(run)
    escape = functools.cache(escaped)  # each backend's and job's name escaped once

    def line(run: ListedRun) -> str:
        state = states[run.run_id]
        name = _STATE_NAMES.get(state, "unknown")
        text = _line(run, name, now=now, origin=run.origin, escape=escape)
        if state in _FINAL and not noted:
            return text
        found = watch(run)
        return text if found is None else _with_watch(text, found)

    lines: list[str] = []
    for run in runs:
        sweep = by_run.get(run.run_id)
        if sweep is None:
            lines.append(line(run))
            continue
        shown = members.pop(sweep.sweep_id, None)
        if shown is None:
            continue  # listed with the sweep's first run
        place = {run_id: position for position, run_id in enumerate(sweep.run_ids)}
        shown.sort(key=lambda member: place[member.run_id])
        counts = _counts([states[member.run_id] for member in shown])
        lines.append(
            f"sweep {escaped(sweep.sweep_id)}  {escaped(sweep.job)}  {len(shown)} runs: {counts}"
        )
        for member in shown:
            values = parameters_text(sweep.parameters_of(member.run_id) or {})
            lines.append(f"  {line(member)}  {escaped(values)}")
    return lines


def _status_one(
    store: RunStore,
    launches: tuple[LaunchRecord, ...],
    run_id: str,
    *,
    as_json: bool,
    now: dt.datetime | None,
) -> int:
    """``x-tui status RUN_ID``: one run, from its handle or, while it has none, its launch."""
    try:
        handle = store.load(run_id)
    except RunNotFoundError:
        record = _launch_of(launches, run_id)
        if record is None:
            raise
        if as_json:
            print_json(_launch_json(record))
        else:
            say(_line(record.handle(), _launch_state(record).value, now=now))
            if record.reason:
                complain(f"{record.run_id}: {record.reason}")
        return EXIT_OK
    backend = backend_for(handle)
    state = backend.status(handle)
    watch = {
        **watch_json(handle, backend, state, now=time.time()),
        **guard_json(store.root.parent.parent, handle.run_id),
    }
    if as_json:
        origin = store.settings_origin(handle)
        print_json({**_run_json(handle, state, sweep_of(handle.run_id), origin), **watch})
    else:
        line = _line(handle, state.value, now=now, origin=store.settings_origin(handle))
        say(_with_watch(line, watch))
    return EXIT_OK


def _launch_of(records: tuple[LaunchRecord, ...], run_id: str) -> LaunchRecord | None:
    return next((record for record in records if record.run_id == run_id), None)


def _launch_state(record: LaunchRecord) -> RunState:
    return RunState.SUBMITTING if record.state == SUBMITTING else RunState.FAILED


def _launch_json(record: LaunchRecord) -> dict[str, JsonValue]:
    """A run known only from its launch record: its submit has not finished, or never did."""
    return {
        **_run_json(record.handle(), _launch_state(record)),
        "reason": record.reason or None,
    }


_STATE_NAMES: dict[RunState | None, str] = {state: state.value for state in RunState}
"""Each state's name, as the listing writes it (``unknown`` for none)."""

_FINAL = frozenset(state for state in RunState if state.is_final)
"""The states a run ends in."""

_NO_WATCH: dict[str, JsonValue] = {"progress": None, "cost_so_far": None, "flags": []}


def _watch_of(
    handle: RunHandle, state: RunState | None, built: dict[str, ComputeBackend]
) -> dict[str, JsonValue]:
    """``progress``, ``cost_so_far`` and ``flags`` of a run (nulls when they cannot be had)."""
    if state is None:
        return dict(_NO_WATCH)
    try:
        return watch_json(handle, _backend_of(handle, built), state, now=time.time())
    except (UserError, ValueError, LookupError, OSError):
        return {"progress": None, "cost_so_far": None, "flags": []}


def _with_watch(line: str, watch: dict[str, JsonValue]) -> str:
    """A status line with the run's progress, cost so far and flags, where it has them."""
    progress = watch.get("progress")
    if isinstance(progress, dict) and isinstance(progress.get("percent"), (int, float)):
        line = f"{line}  {progress['percent']:.0f}%"
    cost = watch.get("cost_so_far")
    if isinstance(cost, (int, float)):
        line = f"{line}  ${cost:,.2f} so far"
    flags = watch.get("flags")
    if isinstance(flags, list) and flags:
        line = f"{line}  FLAGGED: {flags_text(flags)}"
    return with_guard(line, watch)


def logs(args: argparse.Namespace) -> int:
    """``x-tui logs RUN_ID [--follow | --attempts]``: the run's log lines.

    The log holds every attempt of a retried task, each new one after an
    ``x-tui: attempt N of M`` line. ``--attempts`` prints each attempt of every retried task
    under a header of its own (how it ended), then its stdout and stderr, from the run's
    ``attempts.json`` and kept logs.

    Args:
        args: The parsed command line.

    Returns:
        0, or 130 when the user stopped following (the run goes on).

    Raises:
        UserError: If the run has no readable handle or its backend cannot be rebuilt, or (with
            ``--attempts``) its outputs cannot be read from here.
    """
    handle = RunStore().load(args.run_id)
    backend = backend_for(handle)
    if getattr(args, "attempts", False):
        from x_tui.cli.attempt_logs import print_attempts

        if not print_attempts(backend, handle):
            complain(
                f"{handle.run_id}: no task was retried (it has no attempts.json); its log is"
                f" x-tui logs {handle.run_id}"
            )
        return EXIT_OK
    stopped = follow_logs(backend, handle, follow=args.follow)
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
    destination = Path(args.into) if args.into else fetch_root()
    check_destination(destination, handle.run_id)
    target = backend_for(handle).fetch(handle, destination)
    say(f"Fetched {handle.run_id} to {escaped(str(target))}.")
    return EXIT_OK


def cancel(args: argparse.Namespace) -> int:
    """``x-tui cancel RUN_ID|SWEEP_ID``: stop the run, or every run of the sweep.

    A run that already ended is left as it is.

    Args:
        args: The parsed command line.

    Returns:
        0; 1 when a step of a cancellation failed (each failure named on stderr).

    Raises:
        UserError: If the run (or sweep) has no readable record or the run's backend cannot be
            rebuilt.
    """
    store = RunStore()
    if not is_sweep_id(args.run_id):
        try:
            handle = store.load(args.run_id)
        except RunNotFoundError:
            return _cancel_launch(store, args.run_id)
        return _cancel_one(handle)
    sweep = load_sweep(args.run_id)
    code = EXIT_OK
    for run_id in sweep.run_ids:
        try:
            code = max(code, _cancel_one(store.load(run_id)))
        except (UserError, ValueError, LookupError, OSError) as error:
            complain(f"cancel {run_id}: {error_message(error)}")
            code = EXIT_FAILED
    count = len(sweep.run_ids)
    done = "Cancelled" if code == EXIT_OK else "Tried to cancel"
    say(f"{done} sweep {escaped(sweep.sweep_id)} ({count} run{'' if count == 1 else 's'}).")
    return code


def _cancel_launch(store: RunStore, run_id: str) -> int:
    """Cancel a run known only from its launch record (resolved first: it may have a handle now).

    Raises:
        RunNotFoundError: If there is no such run either.
    """
    record = _launch_of(read_launches(store).records, run_id)
    if record is None:
        return _cancel_one(store.load(run_id))
    if record.state != SUBMITTING:
        say(f"{run_id} already ended (failed); nothing to cancel.")
        return EXIT_OK
    LaunchBook(store).ask_cancel(run_id)
    say(f"{run_id} is being submitted; it is stopped as soon as its submit finishes.")
    return EXIT_OK


def _cancel_one(handle: RunHandle) -> int:
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
