"""Sweeps: one job submitted over several inputs, each input a run of its own, under one sweep id.

``x-tui run JOB --sweep LR=1e-4,3e-4 --sweep BS=32,64`` makes the grid of every combination (four
runs here, in the order the values are written, the last ``--sweep`` changing fastest). Each run
is an ordinary run of the job whose spec's ``env`` also holds its values (``LR=1e-4``,
``BS=32``), so its tasks read them from their environment, and substrax reads its spec as any
other. What groups them is x-tui's own record, ``<state>/x-tui/sweeps/<sweep_id>.json``: the
sweep id, the job, the backend, the axes, and each run's id with its values. Nothing is added to
a run's handle, spec or manifest.

This module reads and writes sweep records and builds the grid; it never submits or cancels.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from x_tui.compute.store import default_state_dir
from x_tui.compute.worker.errors import BadRecordError, UserError
from x_tui.compute.worker.record_files import (
    RECORD_BYTES,
    misfiled_reason,
    read_record_dir,
    read_record_file,
)
from x_tui.compute.worker.records import dumps_pretty, read_record, write_atomic

if TYPE_CHECKING:  # the job spec's module loads when a sweep is made, not at start-up
    from x_tui.compute.worker.spec import JobSpec

SWEEP_VERSION = 1
"""The layout of a sweep record this release writes and reads."""

SWEEP_ID_PATTERN = re.compile(r"sweep-[A-Za-z0-9][A-Za-z0-9._-]*-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")
"""A sweep id: ``sweep-<job>-<UTC %Y%m%dT%H%M%SZ>-<8 hex>``; never of the run id form."""

MAX_RUNS = 256
"""The most runs one sweep may make: a larger grid is taken for a mistake."""

SWEEP_FORM = "NAME=V1,V2,... such as LR=1e-4,3e-4"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class SweepError(UserError, ValueError):
    """A ``--sweep`` that cannot be used; the message names it and the accepted form."""


class SweepNotFoundError(UserError, LookupError):
    """No sweep record has that id."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepAxis:
    """One swept variable and its values, in order.

    Attributes:
        name: The environment variable each run's tasks read, such as ``"LR"``.
        values: Its values, at least one, each once.
    """

    name: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        """Check the name and the values.

        Raises:
            ValueError: If the name is not a variable name or is one the worker sets or drops,
                or a value is empty, repeated or holds a control character.
        """
        # (with the secrets' rules: loaded with the first sweep read, after the first frame)
        from x_tui.compute.secrets import ENV_NAME, RESERVED_NAMES, RESERVED_PREFIXES

        if not ENV_NAME.fullmatch(self.name):
            raise ValueError(f"{self.name!r} is not an environment variable name such as 'LR'")
        if self.name in RESERVED_NAMES or self.name.startswith(RESERVED_PREFIXES):
            raise ValueError(
                f"{self.name!r} cannot be swept: the worker sets {', '.join(RESERVED_NAMES)}"
                f" and drops {', '.join(p + '*' for p in RESERVED_PREFIXES)}"
            )
        if not self.values:
            raise ValueError(f"{self.name} has no values")
        for value in self.values:
            if not value or _CONTROL.search(value):
                raise ValueError(f"{self.name}: {value!r} is not a value (empty or a control char)")
        if len(set(self.values)) != len(self.values):
            repeated = next(v for v in self.values if self.values.count(v) > 1)
            raise ValueError(f"{self.name}: the value {repeated!r} is listed twice")


def parse_sweep(text: str) -> SweepAxis:
    """Read one ``--sweep`` option.

    Args:
        text: ``NAME=V1,V2,...``.

    Returns:
        The axis.

    Raises:
        SweepError: If it is not of that form, or the name or a value is refused.
    """
    name, equals, values = text.partition("=")
    if not equals:
        raise SweepError(f"--sweep {text!r} is not {SWEEP_FORM}")
    try:
        return SweepAxis(name=name.strip(), values=tuple(v.strip() for v in values.split(",")))
    except ValueError as error:
        raise SweepError(f"--sweep {text!r}: {error} (expected {SWEEP_FORM})") from None


def grid(axes: Sequence[SweepAxis]) -> tuple[dict[str, str], ...]:
    """Every combination of the axes' values, the last axis changing fastest.

    Args:
        axes: The axes, at least one, each variable once.

    Returns:
        One mapping of variable to value per run.

    Raises:
        SweepError: If there is no axis, a variable is swept twice, or the grid has more than
            :data:`MAX_RUNS` runs.
    """
    if not axes:
        raise SweepError(f"a sweep needs at least one --sweep {SWEEP_FORM}")
    names = [axis.name for axis in axes]
    for name in names:
        if names.count(name) > 1:
            raise SweepError(f"--sweep {name}=... is given twice; list every value in one")
    size = 1
    for axis in axes:
        size *= len(axis.values)
    if size > MAX_RUNS:
        shape = " x ".join(str(len(axis.values)) for axis in axes)
        raise SweepError(f"a sweep of {shape} = {size} runs; at most {MAX_RUNS} are allowed")
    return tuple(
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(axis.values for axis in axes))
    )


def with_parameters(spec: JobSpec, parameters: Mapping[str, str]) -> JobSpec:
    """The spec of one run of a sweep: the job's ``env`` with the run's values over it.

    Args:
        spec: The job.
        parameters: The run's values.

    Returns:
        The spec; a swept variable the job's ``env`` also sets takes the swept value.
    """
    return replace(spec, env={**spec.env, **parameters})


def parameters_text(parameters: Mapping[str, str]) -> str:
    """A run's values on one line, such as ``LR=1e-4 BS=32``."""
    return " ".join(f"{name}={value}" for name, value in parameters.items())


def new_sweep_id(job: str, *, now: dt.datetime | None = None) -> str:
    """Name a new sweep of ``job``.

    Returns:
        An id such as ``sweep-train-20261129T150000Z-1a2b3c4d``.
    """
    import secrets as token  # (with the job spec's rules: loaded with the first sweep named)

    from x_tui.compute.worker.spec import check_name

    check_name("job", job)
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return f"sweep-{job}-{moment:%Y%m%dT%H%M%SZ}-{token.token_hex(4)}"


def is_sweep_id(text: str) -> bool:
    """Whether ``text`` is of the sweep id form (and so never a run id)."""
    return bool(SWEEP_ID_PATTERN.fullmatch(text))


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepRun:
    """One run of a sweep.

    Attributes:
        run_id: The run.
        parameters: Its values, by variable.
    """

    run_id: str
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Sweep:
    """A job submitted over several inputs.

    Attributes:
        schema_version: The layout of this record.
        sweep_id: Its id, see :data:`SWEEP_ID_PATTERN`.
        job: The job's name.
        backend: The backend every run went to.
        project: The project root it was submitted from.
        created_at: When it was submitted, in UTC.
        axes: The swept variables and their values.
        runs: The runs submitted so far, in grid order.
    """

    schema_version: int = SWEEP_VERSION
    sweep_id: str
    job: str
    backend: str
    project: str
    created_at: dt.datetime
    axes: tuple[SweepAxis, ...]
    runs: tuple[SweepRun, ...] = ()

    def __post_init__(self) -> None:
        """Check the version and the id.

        Raises:
            ValueError: If the version is not this release's or the id is not a sweep id.
        """
        if self.schema_version != SWEEP_VERSION:
            raise ValueError(
                f"sweep record version {self.schema_version!r} is not the version this x-tui"
                f" reads ({SWEEP_VERSION})"
            )
        if not is_sweep_id(self.sweep_id):
            raise ValueError(f"{self.sweep_id!r} is not a sweep id (sweep-<job>-<time>-<hex>)")

    @property
    def run_ids(self) -> tuple[str, ...]:
        """The runs' ids, in grid order."""
        return tuple(run.run_id for run in self.runs)

    def parameters_of(self, run_id: str) -> Mapping[str, str] | None:
        """A run's values, or ``None`` when the run is not in this sweep."""
        for run in self.runs:
            if run.run_id == run_id:
                return run.parameters
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredSweeps:
    """What a :class:`SweepStore` holds.

    Attributes:
        sweeps: The readable sweeps, newest first.
        unreadable: Each record that cannot be read, by path, with the reason.
    """

    sweeps: tuple[Sweep, ...]
    unreadable: Mapping[Path, str]

    def of_run(self, run_id: str) -> Sweep | None:
        """The sweep a run belongs to, or ``None``."""
        for sweep in self.sweeps:
            if run_id in sweep.run_ids:
                return sweep
        return None


class SweepStore:
    """Sweep records, one JSON file per sweep, beside (never inside) substrax's run store."""

    def __init__(self, root: Path | None = None) -> None:
        """Keep sweeps under ``root``.

        Args:
            root: The directory; ``default_state_dir() / "x-tui" / "sweeps"`` when ``None``.
        """
        self.root = root if root is not None else default_state_dir() / "x-tui" / "sweeps"

    def path_of(self, sweep_id: str) -> Path:
        """The file of a sweep.

        Raises:
            SweepNotFoundError: If ``sweep_id`` is not a sweep id.
        """
        if not isinstance(sweep_id, str) or not is_sweep_id(sweep_id):
            raise SweepNotFoundError(
                f"{sweep_id!r} is not a sweep id (such as 'sweep-train-20261129T150000Z-1a2b3c4d')"
            )
        return self.root / f"{sweep_id}.json"

    def save(self, sweep: Sweep) -> Path:
        """Write a sweep atomically, replacing an earlier record of it.

        Returns:
            Its file.
        """
        path = self.path_of(sweep.sweep_id)
        write_atomic(path, dumps_pretty(sweep))
        return path

    def load(self, sweep_id: str) -> Sweep:
        """Read a sweep.

        Raises:
            SweepNotFoundError: If there is no such sweep (the message names the directory).
            BadRecordError: If its record cannot be read; the message names the file.
        """
        path = self.path_of(sweep_id)
        try:
            sweep = read_record_file(path, _read_sweep, max_bytes=RECORD_BYTES)
        except FileNotFoundError:
            raise SweepNotFoundError(f"no sweep '{sweep_id}' in {self.root}") from None
        if sweep.sweep_id != sweep_id:
            raise BadRecordError(f"{path}: {misfiled_reason('sweep', sweep.sweep_id, path.stem)}")
        return sweep

    def read_all(self) -> StoredSweeps:
        """Every sweep, newest first, and each record that cannot be read, with the reason."""
        sweeps, unreadable = read_record_dir(
            self.root,
            _read_sweep,
            id_of=lambda sweep: sweep.sweep_id,
            is_id=is_sweep_id,
            kind="sweep",
            max_bytes=RECORD_BYTES,
        )
        sweeps.sort(key=lambda sweep: (sweep.created_at, sweep.sweep_id), reverse=True)
        return StoredSweeps(sweeps=tuple(sweeps), unreadable=unreadable)


def _read_sweep(data: object) -> Sweep:
    return read_record(Sweep, data)
