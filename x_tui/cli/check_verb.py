"""``x-tui check``: the jobs substrax itself could not run, and the overlay that fixes each.

A job whose ``[tool.substrax.compute.jobs.<name>]`` table holds one of x-tui's extensions runs in
x-tui but is refused by substrax 0.1.x. ``x-tui jobs`` marks each such job with the key that
stops it; ``x-tui check`` lists them with the two tables that keep the job runnable by both tools
(substrax's values in its table, the extension in ``[tool.x-tui.jobs.<name>]``).
"""

from __future__ import annotations

import argparse
import json

from x_tui.cli.output import print_json, say
from x_tui.cli.project_arg import project_of
from x_tui.compute.operations import Project
from x_tui.compute.overlays import Blocker, overlay_fix, substrax_blockers
from x_tui.compute.sanitize import escaped

EXIT_NONE = 0
EXIT_SOME = 1


def substrax_blocked(project: Project) -> dict[str, tuple[Blocker, ...]]:
    """The project's jobs that substrax 0.1.x could not run, each with its blocking keys.

    Raises:
        UserError: The project's problem (no pyproject.toml, no compute table, a bad one).
    """
    if project.problem is not None:
        raise project.problem
    if project.config is None:
        return {}
    blocked: dict[str, tuple[Blocker, ...]] = {}
    for name, table in project.config.jobs.items():
        blockers = substrax_blockers(table)
        if blockers:
            blocked[name] = blockers
    return blocked


def blocked_text(blockers: tuple[Blocker, ...]) -> str:
    """``substrax cannot run it: timeout_seconds = "6h" (a duration); see x-tui check``."""
    keys = ", ".join(f"{b.key} = {_shown(b.value)} ({b.reason})" for b in blockers)
    return escaped(f"substrax cannot run it: {keys}; see x-tui check")


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def check(args: argparse.Namespace) -> int:
    """``x-tui check [--json]``: each job substrax could not run, with the overlay that fixes it.

    Args:
        args: The parsed command line.

    Returns:
        1 when some job holds a key substrax refuses, 0 when none does.

    Raises:
        UserError: If the project has no usable compute configuration (exit 2).
    """
    project = project_of(args)
    blocked = substrax_blocked(project)
    if args.json:
        print_json(
            {
                "project": str(project.root),
                "jobs": {
                    name: {
                        "keys": [
                            {
                                "key": b.key,
                                "value": b.value,
                                "reason": b.reason,
                                "substrax_value": b.substrax_value,
                            }
                            for b in blockers
                        ],
                        "fix": overlay_fix(name, blockers),
                    }
                    for name, blockers in blocked.items()
                },
            }
        )
        return EXIT_SOME if blocked else EXIT_NONE
    if not blocked:
        say("every job can be run by substrax too")
        return EXIT_NONE
    for name, blockers in blocked.items():
        say(f"job {escaped(name)}: {blocked_text(blockers).removesuffix('; see x-tui check')}")
        say("  keep it runnable by both tools with x-tui's overlay table:")
        for line in overlay_fix(name, blockers):
            say(f"    {escaped(line)}")
    return EXIT_SOME
