"""The verbs that read the project's configuration: ``jobs``, ``plan`` and ``run``."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from x_tui.cli.check_verb import blocked_text, substrax_blocked
from x_tui.cli.describe import job_lines, job_summary
from x_tui.cli.output import complain, print_json, say
from x_tui.cli.plan_text import plan_json, plan_lines, sweep_json, sweep_lines
from x_tui.cli.project_arg import project_of
from x_tui.cli.run_verbs import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, follow_logs
from x_tui.compute.launches import fault_point
from x_tui.compute.operations import (
    RunPlan,
    backend_for,
    fetch_root,
    list_jobs,
    plan_run,
    submit_run,
)
from x_tui.compute.outputs import check_destination
from x_tui.compute.run_guards import parse_max_cost, parse_max_duration
from x_tui.compute.sanitize import escaped
from x_tui.compute.sweep_runs import plan_sweep
from x_tui.compute.sweeps import SweepAxis, parse_sweep
from x_tui.compute.worker.records import dump_record


def jobs(args: argparse.Namespace) -> int:
    """``x-tui jobs [--json]``: every configured job; a job that does not resolve is named.

    Args:
        args: The parsed command line.

    Returns:
        0, or 2 (a bad configuration) when a job's table cannot be used: every job that resolves
        is still listed, and each one that does not is named on stderr with the reason.

    Raises:
        UserError: If the project has no usable compute configuration.
    """
    project = project_of(args)
    listed = list_jobs(project)
    blocked = substrax_blocked(project)
    if args.json:
        print_json(
            {
                "project": str(project.root),
                "backend": project.config.backend if project.config else None,
                "jobs": {name: dump_record(spec) for name, spec in listed.specs.items()},
                "problems": {name: str(error) for name, error in listed.problems.items()},
                "substrax_cannot_run": {
                    name: [blocker.key for blocker in blockers]
                    for name, blockers in blocked.items()
                },
            }
        )
    else:
        for spec in listed.specs.values():
            say(job_summary(spec))
            if spec.name in blocked:
                say(f"  {blocked_text(blocked[spec.name])}")
            for line in job_lines(spec)[1:]:
                say(line)
    for name, error in listed.problems.items():
        complain(f"job {name!r}: {error}")
    return EXIT_REFUSED if listed.problems else EXIT_OK


def _axes(args: argparse.Namespace) -> tuple[SweepAxis, ...]:
    return tuple(parse_sweep(text) for text in getattr(args, "sweep", []) or [])


def _plan(args: argparse.Namespace) -> RunPlan:
    planned = plan_run(
        project_of(args), args.job, backend=args.backend, accelerator=args.accelerator
    )
    return with_budget(planned, args)


def with_budget(planned: RunPlan, args: argparse.Namespace) -> RunPlan:
    """The plan with ``--max-cost`` and ``--max-duration`` replacing the job's budget.

    Raises:
        ConfigError: If either value is refused (exit 2, naming the option and the value).
    """
    cost, duration = getattr(args, "max_cost", None), getattr(args, "max_duration", None)
    if cost is None and duration is None:
        return planned
    guard = planned.guard.with_budget(
        max_cost_usd=None if cost is None else parse_max_cost(cost, where="--max-cost"),
        max_duration_seconds=(
            None if duration is None else parse_max_duration(duration, where="--max-duration")
        ),
    )
    return dataclasses.replace(planned, guard=guard)


def plan(args: argparse.Namespace) -> int:
    """``x-tui plan JOB [--sweep NAME=V1,V2]``: the resolved job, the provider request and the
    most the run can cost; nothing is submitted.

    Args:
        args: The parsed command line.

    Returns:
        0.

    Raises:
        UserError: If the job, the accelerator, the backend, a sweep or the configuration is
            refused.
    """
    axes = _axes(args)
    if axes:
        swept = plan_sweep(
            project_of(args),
            args.job,
            axes,
            backend=args.backend,
            accelerator=args.accelerator,
        )
        planned, points = swept.base, swept.parameters
    else:
        planned, points = _plan(args), ()
    if args.json:
        document = plan_json(planned)
        if axes:
            document["sweep"] = sweep_json(planned, points)
        print_json(document)
        return EXIT_OK
    for line in plan_lines(planned):
        say(line)
    if axes:
        for line in sweep_lines(planned, points):
            say(line)
    say("Nothing was submitted.")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """``x-tui run JOB``: submit, then (unless ``--detach``) follow, wait and fetch.

    With ``--sweep``, one run per combination of values, under one sweep id; without
    ``--detach`` every run is followed at once, each line prefixed with its run's values.

    Args:
        args: The parsed command line.

    Returns:
        0 when the run (every run of a sweep) succeeded or was detached, 1 when one did not, 130
        when the user stopped following (the runs go on).

    Raises:
        UserError: If the job, the accelerator, the backend, a secret, a sweep or the
            configuration is refused.
    """
    axes = _axes(args)
    destination = Path(args.into) if args.into else fetch_root()
    if axes:
        from x_tui.cli.sweep_verbs import run_sweep

        swept = plan_sweep(
            project_of(args), args.job, axes, backend=args.backend, accelerator=args.accelerator
        )
        swept = dataclasses.replace(
            swept,
            base=with_budget(swept.base, args),
            runs=tuple(with_budget(each, args) for each in swept.runs),
        )
        if not args.detach:
            check_destination(destination)  # refused before anything is submitted
        return run_sweep(swept, detach=args.detach, into=args.into)
    planned = _plan(args)
    if not args.detach:
        check_destination(destination)  # refused before anything is submitted
    fault_point("run planned")
    handle = submit_run(planned)
    say(f"Submitted {handle.run_id} to {escaped(handle.backend)}.")
    if planned.guard.has_budget:
        say(f"Its {planned.guard.budget_text()} is kept by the watcher (x-tui watch --detach).")
    fault_point("submit reported")
    if args.detach:
        return EXIT_OK
    backend = backend_for(handle)
    stopped = follow_logs(backend, handle, follow=True)
    if stopped is not None:
        return stopped
    state = backend.status(handle)
    check_destination(destination, handle.run_id)
    target = backend.fetch(handle, destination)
    say(f"{handle.run_id} {state.value}; outputs in {escaped(str(target))}.")
    return EXIT_OK if state.value == "succeeded" else EXIT_FAILED
