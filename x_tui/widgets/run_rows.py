"""The rows of the runs table: a run, an unreadable record, or a sweep's group row above its runs.

A sweep (one job over several inputs, ``x-tui run JOB --sweep ...``) is shown as a group row
keyed ``sweep:<sweep_id>`` (its id, job, backend, how its runs stand, its age), with each of its
runs right under it, indented, its values beside the job's name. This module holds what a row is,
what it shows, what the filter matches in it and where it sorts; the table keeps them in order.
Every cell is ``Text`` built through ``safe_text``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from rich.text import Text

from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns, run_id_time
from x_tui.compute.sweeps import StoredSweeps, Sweep, parameters_text
from x_tui.widgets.run_cells import (
    EMPTY,
    count_states,
    format_age,
    format_span,
    group_state_cell,
    state_cell,
)
from x_tui.widgets.run_states import StateStyles, state_label
from x_tui.widgets.safe_text import safe_text

GROUP_PREFIX = "sweep:"
"""The key of a sweep's group row is this prefix and the sweep id."""

MEMBER_INDENT = "  "
"""What a sweep's run is indented by in the run column."""

REASON_WIDTH = 12
"""How much of an unreadable record's reason its row shows (the line under the table has all)."""

WORD_WIDTH = 24
"""The most a Job, Project or Backend cell shows (the rest as …): a record's words are as long as
it likes, and one long name would widen the whole table. The line under the table has them."""

SortKey = tuple[object, ...]
"""Where a row sorts, in the table's order once reversed: (value, time, id, rank, place in its
sweep); the value is the sorted column's (none for the default, newest first)."""

LAST: SortKey = ((), 0.0, "", 0, 0)

STATE_RANKS: Mapping[RunState | None, int] = {
    None: 0,
    RunState.PENDING: 1,
    RunState.RUNNING: 2,
    RunState.FAILED: 3,
    RunState.PREEMPTED: 3,
    RunState.CANCELLED: 4,
    RunState.SUCCEEDED: 5,
}
"""Where each state sorts in the State column."""


@functools.total_ordering
class Ascending:
    """A sort value that sorts the other way round (the table sorts newest first, reversed)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        """Wrap ``value``."""
        self.value = value

    def __eq__(self, other: object) -> bool:
        """Equal when the values are."""
        return isinstance(other, Ascending) and self.value == other.value

    def __hash__(self) -> int:
        """The value's hash."""
        return hash(self.value)

    def __lt__(self, other: object) -> bool:
        """Less when the value is greater."""
        if not isinstance(other, Ascending):
            return NotImplemented
        return bool(other.value < self.value)  # type: ignore[operator]


@dataclass(frozen=True, slots=True)
class Membership:
    """A run's place in a sweep.

    Attributes:
        sweep: The sweep.
        index: The run's place in the sweep's grid, from 0.
        parameters: The run's values.
    """

    sweep: Sweep
    index: int
    parameters: Mapping[str, str]


@dataclass(slots=True)
class RunRow:
    """One row: a run (``handle``), an unreadable record (``path``), or a sweep (``group``).

    Attributes:
        key: The row key: a run id, ``file:<path>`` or ``sweep:<sweep_id>``.
        order: (submission or creation time, id), for the age and the sort.
        handle: The run's handle.
        path: An unreadable record's file.
        reason: Why it cannot be read.
        state: The run's last known state.
        ended: When a finished run ended.
        problem: Why its backend could not say where it is.
        member: The run's place in a sweep, when it is in one.
        group: The sweep, on a sweep's group row.
        latest: On a group row, the ``order`` of its newest run (the group sorts there).
    """

    key: str
    order: tuple[float, str]
    handle: RunHandle | None = None
    path: Path | None = None
    reason: str | None = None
    state: RunState | None = None
    ended: float | None = None
    problem: str | None = None
    member: Membership | None = None
    group: Sweep | None = None
    latest: tuple[float, str] = field(default=(0.0, ""))


def group_key(sweep_id: str) -> str:
    """The key of a sweep's group row."""
    return f"{GROUP_PREFIX}{sweep_id}"


def memberships(stored: StoredSweeps) -> dict[str, Membership]:
    """Each run's place in a sweep, by run id (the newest sweep wins a run listed twice)."""
    found: dict[str, Membership] = {}
    for sweep in reversed(stored.sweeps):
        for index, run in enumerate(sweep.runs):
            found[run.run_id] = Membership(sweep=sweep, index=index, parameters=run.parameters)
    return found


def new_group(sweep: Sweep) -> RunRow:
    """The group row of ``sweep`` (its ``latest`` is set by the table from its runs)."""
    created = sweep.created_at.timestamp()
    key = group_key(sweep.sweep_id)
    return RunRow(key=key, order=(created, key), group=sweep, latest=(created, key))


def stored_rows(
    stored: StoredRuns,
    existing: Mapping[str, RunRow],
    *,
    states: Callable[[str], RunState | None],
    ended: Callable[[str], float | None],
    memberships: Mapping[str, Membership],
) -> dict[str, RunRow]:
    """The rows the store's records make, keeping each existing row whose record is unchanged.

    Args:
        stored: The store's handles and unreadable records.
        existing: The rows shown now, by key.
        states: The last known state of a run, by id.
        ended: When a finished run ended, by id.
        memberships: Each run's place in a sweep, by id.

    Returns:
        The rows by key: the unchanged ones are the very objects of ``existing``.
    """
    wanted: dict[str, RunRow] = {}
    add_handle_rows(
        wanted, stored.handles, existing, states=states, ended=ended, memberships=memberships
    )
    add_unreadable_rows(wanted, stored.unreadable, existing)
    return wanted


def add_handle_rows(
    wanted: dict[str, RunRow],
    handles: Iterable[RunHandle],
    existing: Mapping[str, RunRow],
    *,
    states: Callable[[str], RunState | None],
    ended: Callable[[str], float | None],
    memberships: Mapping[str, Membership],
) -> None:
    """Add to ``wanted`` the rows of ``handles`` (see :func:`stored_rows`; a listing taken in
    slices adds a slice at a time)."""
    for handle in handles:
        row = existing.get(handle.run_id)
        if row is None or (row.handle is not handle and row.handle != handle):
            row = RunRow(
                key=handle.run_id,
                order=(handle.submitted_at.timestamp(), handle.run_id),
                handle=handle,
                state=states(handle.run_id),
                ended=ended(handle.run_id),
                member=memberships.get(handle.run_id),
            )
        wanted[row.key] = row


def add_unreadable_rows(
    wanted: dict[str, RunRow], unreadable: Mapping[Path, str], existing: Mapping[str, RunRow]
) -> None:
    """Add to ``wanted`` a row for each unreadable record (see :func:`stored_rows`)."""
    for path, reason in unreadable.items():
        key = f"file:{path}"
        row = existing.get(key)
        if row is None or row.reason != reason:
            row = RunRow(key=key, order=(file_time(path), path.name), path=path, reason=reason)
        wanted[key] = row


def sync_groups(
    groups: dict[str, RunRow], rows: Iterable[RunRow]
) -> tuple[dict[str, list[RunRow]], list[str], bool]:
    """Bring ``groups`` in line with the sweeps the ``rows`` belong to: one group per sweep.

    Args:
        groups: The group rows by key; updated in place.
        rows: Every run's row.

    Returns:
        Each group's runs in grid order (by group key), the keys of the groups removed, and
        whether any group was added, removed, or moved (a newer run joined it).
    """
    members: dict[str, list[RunRow]] = {}
    for row in rows:
        if row.member is not None:
            members.setdefault(group_key(row.member.sweep.sweep_id), []).append(row)
    removed = [key for key in groups if key not in members]
    for key in removed:
        del groups[key]
    moved = bool(removed)
    for key, runs in members.items():
        runs.sort(key=lambda row: row.member.index if row.member is not None else 0)
        sweep = runs[0].member.sweep if runs[0].member is not None else None
        assert sweep is not None
        group = groups.get(key)
        if group is None or group.group != sweep:
            group = groups[key] = new_group(sweep)
            moved = True
        latest = max(row.order for row in runs)
        if latest != group.latest:
            group.latest = latest
            moved = True
    return members, removed, moved


def file_time(path: Path) -> float:
    """An unreadable record's time: its run id's, else its file's modification time."""
    moment = run_id_time(path.stem)
    if moment is not None:
        return moment.timestamp()
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def short_sweep_id(sweep_id: str) -> str:
    """A sweep id shortened to its random part, ``sweep-…-0f1e2d3c`` (the job and the time have
    columns of their own; the whole id is on the line under the table and in ``y``'s copy)."""
    return f"sweep-…-{sweep_id.rsplit('-', 1)[-1]}"


def run_text(row: RunRow) -> str:
    """What the run column shows."""
    if row.group is not None:
        return f"▾ {short_sweep_id(row.group.sweep_id)}"
    if row.handle is not None:
        indent = MEMBER_INDENT if row.member is not None else ""
        return f"{indent}{row.handle.run_id}"
    return row.path.stem if row.path is not None else row.key


def project_name(project: str) -> str:
    """The project column: the last part of the project's path (the line under says it all)."""
    return PurePath(project).name or project


def in_project(row: RunRow, project: str | None, members: Sequence[RunRow] = ()) -> bool:
    """Whether the row belongs to the project at ``project`` (``None``: every row does).

    An unreadable record belongs to every project (its problem is shown wherever one looks); a
    sweep's row belongs where one of its runs does.
    """
    if project is None:
        return True
    if row.group is not None:
        return any(in_project(member, project) for member in members)
    if row.handle is None:
        return True
    return os.path.normpath(row.handle.project) == os.path.normpath(project)


def column_value(row: RunRow, column: str, members: Sequence[RunRow] = ()) -> object:
    """What the table sorts by in ``column``: text in lower case, a state's rank, a time."""
    if column == "age":
        return row.latest[0] if row.group is not None else row.order[0]
    if column == "duration":
        if row.handle is None or row.state is None or not row.state.is_final or row.ended is None:
            return -1.0
        return row.ended - row.order[0]
    if column == "state":
        if row.group is not None:
            return max((STATE_RANKS[member.state] for member in members), default=0)
        return STATE_RANKS[row.state] if row.handle is not None else -1
    if column == "run":
        return run_text(row).strip().lower()
    if row.group is not None:
        sweep = row.group
        words = {"job": sweep.job, "backend": sweep.backend, "project": project_name(sweep.project)}
        return words.get(column, "").lower()
    if row.handle is None:
        return ""
    handle = row.handle
    words = {"job": handle.job, "backend": handle.backend, "project": project_name(handle.project)}
    return words.get(column, "").lower()


def sort_key(
    row: RunRow,
    groups: Mapping[str, RunRow],
    *,
    column: str | None = None,
    descending: bool = True,
    members: Mapping[str, Sequence[RunRow]] | None = None,
) -> SortKey:
    """Where ``row`` sorts once reversed: a sweep's runs right under its group row.

    Args:
        row: The row.
        groups: The group rows, by key.
        column: The column sorted by; ``None`` sorts newest first.
        descending: Whether the column's values go from high to low.
        members: Each group's runs, by group key (for a group's sorted value).

    Returns:
        The key.
    """
    if column is None and row.group is None and row.member is None:
        return ((), row.order[0], row.order[1], 2, 0)  # the most common case, made cheap

    def value(of: RunRow) -> object:
        if column is None:
            return ()
        found = column_value(of, column, (members or {}).get(of.key, ()))
        return found if descending else Ascending(found)

    if row.group is not None:
        return (value(row), row.latest[0], row.key, 2, 0)
    if row.member is not None:
        group = groups.get(group_key(row.member.sweep.sweep_id))
        if group is not None:
            return (value(group), group.latest[0], group.key, 1, -row.member.index)
    return (value(row), row.order[0], row.order[1], 2, 0)


def running(row: RunRow) -> bool:
    """Whether the row's duration grows (a run that has started and not ended)."""
    return (
        row.handle is not None
        and row.state is not None
        and not row.state.is_final
        and row.state is not RunState.PENDING
    )


def duration_cell(row: RunRow, now: float) -> Text:
    """How long the run took, or has been running."""
    if row.state is None or row.state is RunState.PENDING or row.handle is None:
        return Text(EMPTY, style="dim")
    if row.state.is_final:
        if row.ended is None:
            return Text(EMPTY, style="dim")
        return Text(format_span(row.ended - row.order[0]))
    return Text(format_span(now - row.order[0]), style="cyan")


def cells(
    row: RunRow, now: float, styles: StateStyles, members: Sequence[RunRow] = ()
) -> tuple[Text, ...]:
    """The row's cells: run, state, age, took, job, project, backend (``COLUMNS``' order).

    Args:
        row: The row.
        now: The current epoch time.
        styles: The states' styles, from the table's theme.
        members: On a group row, its runs' rows.

    Returns:
        One ``Text`` per column.
    """
    age = Text(format_age(now - row.order[0]))
    if row.group is not None:
        return (
            safe_text(run_text(row), "bold"),
            group_state_cell((member.state for member in members), styles),
            age,
            Text(EMPTY, style="dim"),
            word_cell(row.group.job, "bold"),
            word_cell(project_name(row.group.project)),
            word_cell(row.group.backend),
        )
    if row.handle is None:
        return (
            safe_text(run_text(row), "red"),
            Text("✗ unreadable", style="bold red"),
            age,
            Text(EMPTY, style="dim"),
            word_cell(row.reason or "", "red", width=REASON_WIDTH),
            Text(EMPTY, style="dim"),
            Text(EMPTY, style="dim"),
        )
    if row.member is not None:  # under its group row, which names the job: its values
        job = word_cell(parameters_text(row.member.parameters), "bold")
    else:
        job = word_cell(row.handle.job)
    return (
        safe_text(run_text(row)),
        state_cell(row.state, styles, problem=row.problem is not None),
        age,
        duration_cell(row, now),
        job,
        word_cell(project_name(row.handle.project)),
        word_cell(row.handle.backend),
    )


def word_cell(text: str, style: str = "", *, width: int = WORD_WIDTH) -> Text:
    """A cell of a record's words (untrusted): on one line, at most ``width`` columns."""
    cell = safe_text(" ".join(text.split()), style)
    cell.truncate(width, overflow="ellipsis")
    return cell


def matches(row: RunRow, text: str, members: Sequence[RunRow] = ()) -> bool:
    """Whether the filter ``text`` (lower case) matches the row.

    A run matches on its id, job, backend and state, and, in a sweep, on the sweep id and its
    values; a group row matches on its sweep id, job and backend, or when one of its runs does.
    """
    if not text:
        return True
    if row.group is not None:
        words = [row.group.sweep_id, row.group.job, row.group.backend]
        if any(text in word.lower() for word in words):
            return True
        return any(matches(member, text) for member in members)
    words = [row.key, state_label(row.state)]
    if row.handle is not None:
        words += [row.handle.job, row.handle.backend, project_name(row.handle.project)]
    else:
        words += ["unreadable", row.reason or ""]
    if row.member is not None:
        words += [row.member.sweep.sweep_id, parameters_text(row.member.parameters)]
    return any(text in word.lower() for word in words)


def describe(row: RunRow, members: Sequence[RunRow] = ()) -> Text:
    """One line about a row, for the line under the table: the reason, the problem or where.

    Args:
        row: The row.
        members: On a group row, its runs' rows.

    Returns:
        The text.
    """
    if row.path is not None:
        return Text.assemble(
            safe_text(str(row.path), "bold"), ": ", safe_text(row.reason or "", "red")
        )
    if row.group is not None:
        sweep = row.group
        axes = " ".join(f"{axis.name}={','.join(axis.values)}" for axis in sweep.axes)
        counts = count_states(member.state for member in members)
        return Text.assemble(
            "sweep ",
            safe_text(sweep.sweep_id, "bold"),
            safe_text(f" of {sweep.job}: {len(members)} runs ({counts}) over {axes}"),
            ("  c cancels every run", "dim"),
        )
    assert row.handle is not None
    if row.problem is not None:
        return Text.assemble(
            safe_text(row.handle.run_id, "bold"), ": ", safe_text(row.problem, "red")
        )
    line = Text.assemble(
        safe_text(row.handle.run_id, "bold"),
        " from ",
        safe_text(row.handle.project),
        f"  submitted {row.handle.submitted_at:%Y-%m-%d %H:%M:%S} UTC",
    )
    if row.member is not None:
        line.append("  sweep ")
        line.append_text(safe_text(row.member.sweep.sweep_id))
        line.append(" ")
        line.append_text(safe_text(parameters_text(row.member.parameters), "bold"))
    return line
