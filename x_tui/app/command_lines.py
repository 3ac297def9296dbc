"""The ``x-tui`` command line behind each action of the TUI, for the user to see, copy and script.

Each function gives the argv of the headless verb that does what a TUI action does (the run
actions name theirs in :data:`x_tui.app.actions.RUN_ACTIONS`); turned into one shell-safe line
with :func:`shell_line` (every part quoted as a shell needs it, so a run name or a path with
spaces or quotes pastes as it was). This module imports no Textual.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from x_tui.compute.store import RunHandle

PROG = "x-tui"


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one line a POSIX shell reads back as the same arguments."""
    import shlex  # (with the first line shown, not at start-up)

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


def status_command(handle: RunHandle) -> list[str]:
    """``x-tui status RUN_ID``: the run's state, as the run screen's header shows it."""
    return [PROG, "status", handle.run_id]


def logs_command(handle: RunHandle) -> list[str]:
    """``x-tui logs RUN_ID --follow``: the run's combined log, as the log tab follows it."""
    return [PROG, "logs", handle.run_id, "--follow"]


def cancel_command(handle: RunHandle) -> list[str]:
    """``x-tui cancel RUN_ID`` (the cancel action)."""
    return [PROG, "cancel", handle.run_id]


def fetch_command(handle: RunHandle) -> list[str]:
    """``x-tui fetch RUN_ID`` (the fetch action, into the fetch root)."""
    return [PROG, "fetch", handle.run_id]


def delete_command(handle: RunHandle) -> list[str]:
    """``x-tui delete RUN_ID`` (the delete action; it asks first, as the action does)."""
    return [PROG, "delete", handle.run_id]
