"""Sweeps as operations: plan one run of a job per combination of values, submit them, find them.

:func:`plan_sweep` plans the job once (:func:`~x_tui.compute.operations.plan_run`) and makes one
plan per grid point, each with its values in the spec's ``env``; :func:`submit_sweep` submits
them in order, rewriting the sweep's record (:mod:`x_tui.compute.sweeps`) after each run, so a
sweep stopped part-way still groups and cancels what it started. :func:`list_sweeps`,
:func:`sweep_of` and :func:`load_sweep` find sweeps again, for the CLI and the TUI.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from x_tui.compute.worker.errors import UserError

if TYPE_CHECKING:
    from x_tui.compute.operations import Project, RunPlan
    from x_tui.compute.store import RunStore
    from x_tui.compute.sweeps import StoredSweeps, Sweep, SweepAxis, SweepStore


@dataclass(frozen=True, kw_only=True, slots=True)
class SweepPlan:
    """A job planned over several inputs: one plan per run, each with its values in ``env``.

    Attributes:
        base: The job's plan, without any swept value.
        axes: The swept variables and their values, as given.
        runs: Each run's plan, in grid order (the last axis changing fastest).
        parameters: Each run's values, in the same order.
    """

    base: RunPlan
    axes: tuple[SweepAxis, ...]
    runs: tuple[RunPlan, ...]
    parameters: tuple[Mapping[str, str], ...]


class SweepIncompleteError(UserError, RuntimeError):
    """A sweep stopped part-way: the runs submitted before the failure are kept in its record."""


def plan_sweep(
    project: Project,
    job: str,
    axes: tuple[SweepAxis, ...],
    *,
    backend: str | None = None,
    accelerator: str | None = None,
) -> SweepPlan:
    """Plan one run of ``job`` per combination of the axes' values.

    Args:
        project: The project.
        job: The job's name.
        axes: The swept variables (``--sweep NAME=V1,V2``), at least one.
        backend: The backend's name; the configuration's when ``None``.
        accelerator: Replaces the configured accelerator for every run.

    Returns:
        The plan of every run.

    Raises:
        SweepError: If the grid is empty, repeats a variable, is too large, or a swept variable
            is also one of the job's secrets.
        UserError: Whatever :func:`plan_run` raises.
    """
    from x_tui.compute.operations import plan_run
    from x_tui.compute.sweeps import SweepError, grid, with_parameters

    points = grid(axes)
    base = plan_run(project, job, backend=backend, accelerator=accelerator)
    secret_names = set(base.extensions.secrets.task_names)
    for axis in axes:
        if axis.name in secret_names:
            raise SweepError(
                f"--sweep {axis.name}=...: {axis.name} is one of job '{job}''s secrets; a swept"
                " value would replace it in the task"
            )
    runs = tuple(
        dataclasses.replace(base, spec=with_parameters(base.spec, point)) for point in points
    )
    return SweepPlan(base=base, axes=axes, runs=runs, parameters=points)


def submit_sweep(
    plan: SweepPlan,
    *,
    store: RunStore | None = None,
    sweeps: SweepStore | None = None,
    environ: Mapping[str, str] | None = None,
) -> Sweep:
    """Submit every run of a sweep, recording each in the sweep's record as it is submitted.

    Args:
        plan: The plan, from :func:`plan_sweep`.
        store: Where to keep the handles; the default store when ``None``.
        sweeps: Where to keep the sweep's record; the default sweep store when ``None``.
        environ: The submitting shell's environment (for secrets); ``os.environ`` when ``None``.

    Returns:
        The sweep, saved, with every run.

    Raises:
        MissingSecretError: If a required secret is unset; nothing is submitted.
        SweepIncompleteError: If a run is refused after others were submitted; the message names
            the sweep and how many runs it holds (each still running and cancellable).
    """
    import datetime as dt

    from x_tui.compute.operations import submit_run
    from x_tui.compute.secrets import capture
    from x_tui.compute.sweeps import Sweep, SweepRun, SweepStore, new_sweep_id

    capture(plan.base.extensions.secrets, environ, job=plan.base.spec.name)
    kept = sweeps if sweeps is not None else SweepStore()
    sweep = Sweep(
        sweep_id=new_sweep_id(plan.base.spec.name),
        job=plan.base.spec.name,
        backend=plan.base.backend,
        project=str(plan.base.project),
        created_at=dt.datetime.now(dt.UTC),
        axes=plan.axes,
    )
    for run, parameters in zip(plan.runs, plan.parameters, strict=True):
        try:
            handle = submit_run(run, store=store, environ=environ)
        except UserError as error:
            if not sweep.runs:
                raise
            raise SweepIncompleteError(
                f"sweep {sweep.sweep_id} stopped after {len(sweep.runs)} of {len(plan.runs)}"
                f" runs: {error}; cancel the submitted ones with x-tui cancel {sweep.sweep_id}"
            ) from None
        sweep = dataclasses.replace(
            sweep, runs=(*sweep.runs, SweepRun(run_id=handle.run_id, parameters=parameters))
        )
        kept.save(sweep)
    return sweep


def list_sweeps(sweeps: SweepStore | None = None) -> StoredSweeps:
    """Every recorded sweep, newest first, and each record that cannot be read.

    Args:
        sweeps: The sweep store; the default one when ``None``.

    Returns:
        The sweeps (``.sweeps``) and the unreadable records (``.unreadable``, path to reason);
        ``.of_run(run_id)`` finds a run's sweep among them.
    """
    from x_tui.compute.sweeps import SweepStore

    return (sweeps if sweeps is not None else SweepStore()).read_all()


def sweep_of(run_id: str, sweeps: SweepStore | None = None) -> Sweep | None:
    """The sweep a run belongs to.

    Args:
        run_id: The run.
        sweeps: The sweep store; the default one when ``None``.

    Returns:
        The sweep, or ``None`` when the run is in none (an unreadable record is skipped).
    """
    return list_sweeps(sweeps).of_run(run_id)


def load_sweep(sweep_id: str, sweeps: SweepStore | None = None) -> Sweep:
    """Read one sweep's record.

    Args:
        sweep_id: The sweep.
        sweeps: The sweep store; the default one when ``None``.

    Returns:
        The sweep.

    Raises:
        SweepNotFoundError: If there is no such sweep, or the id is not a sweep id.
        BadRecordError: If its record cannot be read.
    """
    from x_tui.compute.sweeps import SweepStore

    return (sweeps if sweeps is not None else SweepStore()).load(sweep_id)
