"""The ``x-tui`` command line behind each action of the TUI, for the user to see, copy and script.

Each function gives the argv of the headless verb that does what the TUI action does; turned
into one shell-safe line with :func:`shell_line` (every part quoted as a shell needs it, so a run
name or a path with spaces or quotes pastes as it was). This module imports no Textual.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from x_tui.compute.store import RunHandle

PROG = "x-tui"


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one line a POSIX shell reads back as the same arguments."""
    return shlex.join(argv)


def run_command(
    job: str,
    *,
    backend: str | None = None,
    accelerator: str | None = None,
    project: Path | str | None = None,
    detach: bool = True,
    max_cost: str | None = None,
    max_duration: str | None = None,
) -> list[str]:
    """``x-tui run JOB ...``: what the submit screen submits (detached, as the TUI submits)."""
    argv = [PROG, "run", job]
    if backend:
        argv += ["--backend", backend]
    if accelerator:
        argv += ["--accelerator", accelerator]
    if max_cost:
        argv += ["--max-cost", max_cost]
    if max_duration:
        argv += ["--max-duration", max_duration]
    if project is not None:
        argv += ["--project", str(project)]
    if detach:
        argv.append("--detach")
    return argv


def rerun_command(handle: RunHandle) -> list[str]:
    """``x-tui run`` of the run's job on its backend, from its project (the re-run action)."""
    return run_command(handle.job, backend=handle.backend, project=handle.project)


def run_action_commands(handle: RunHandle, *, fetch_into: Path | None = None) -> dict[str, str]:
    """Each run action's command line, by the action's name (in the order the keys are shown).

    Args:
        handle: The run.
        fetch_into: Where the fetch action copies to, when the user chose a place.
    """
    fetch = [PROG, "fetch", handle.run_id]
    if fetch_into is not None:
        fetch += ["--into", str(fetch_into)]
    return {
        "status": shell_line([PROG, "status", handle.run_id]),
        "logs": shell_line([PROG, "logs", handle.run_id, "--follow"]),
        "cancel": shell_line([PROG, "cancel", handle.run_id]),
        "fetch": shell_line(fetch),
        "re-run": shell_line(rerun_command(handle)),
    }
