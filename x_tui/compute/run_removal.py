"""Deleting a finished run: its local files first, its record last; never a run still going.

What goes: the run's directory on this machine, ``<state_dir>/compute/<backend>/<run_id>``, where
a backend keeps a run's files or what it staged (for a backend that names its run's directory,
checked to be exactly that one before anything is removed: a record's path is never trusted),
the side files
x-tui keeps for it (a remote run's spooled log), then its handle. The record goes last, so a
crash or a failure part way leaves the run listed, never files no record points to. Outputs
already fetched elsewhere, and anything on a provider, are left alone (``x-tui teardown``).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.backend import (
    Capability,
    ComputeBackend,
    RunState,
    ability,
)
from x_tui.compute.store import RunHandle, RunStore, backend_state_dir
from x_tui.compute.worker.errors import UserError

_BACKEND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""A backend's name as a directory name: no separator, no dot."""


class RunStillGoingError(UserError, RuntimeError):
    """The run has not ended: it is never deleted (cancel it first)."""


class UnexpectedRunDirError(UserError, RuntimeError):
    """The handle names a run directory that is not the one its backend keeps for the run."""


@dataclass(frozen=True, slots=True)
class Removal:
    """What deleting a run removes.

    Attributes:
        run_dir: The run's directory on this machine, if its backend keeps one and it exists.
        side_files: x-tui's own files about the run that exist (a spooled log).
        record: The run's handle file.
    """

    run_dir: Path | None
    side_files: tuple[Path, ...]
    record: Path


def check_ended(handle: RunHandle, state: RunState) -> None:
    """Refuse to delete a run that has not ended.

    Raises:
        RunStillGoingError: If ``state`` is not final; the message says how to stop the run.
    """
    if not state.is_final:
        raise RunStillGoingError(
            f"{handle.run_id} is {state.value}: a run is deleted only once it has ended"
            f" (x-tui cancel {handle.run_id} stops it)"
        )


def plan_removal(
    handle: RunHandle,
    backend: ComputeBackend,
    store: RunStore,
    *,
    side_files: Sequence[Path] = (),
) -> Removal:
    """What deleting ``handle``'s run would remove (nothing is removed, the state not asked).

    Args:
        handle: The run.
        backend: Its backend.
        store: The store holding its record.
        side_files: x-tui's own files about the run (kept only those that exist).

    Returns:
        The removal.

    Raises:
        UnexpectedRunDirError: If the handle's run directory is not
            ``<state_dir>/compute/<backend>/<run_id>`` (or is a link).
    """
    if not _BACKEND_NAME.fullmatch(handle.backend):
        raise UnexpectedRunDirError(
            f"{handle.run_id}: its record names the backend {handle.backend!r}, which is no"
            " backend name; nothing was deleted"
        )
    state_dir = handle.settings.get("state_dir")
    expected = (
        backend_state_dir(state_dir if isinstance(state_dir, str) else None, handle.backend)
        / handle.run_id
    )
    keeper = ability(backend, Capability.LOCAL_FILES)
    if keeper is not None:
        candidate = keeper.run_files(handle).worker_log.parent
        if candidate.is_symlink() or candidate.resolve() != expected.resolve():
            raise UnexpectedRunDirError(
                f"{handle.run_id}: its record names {candidate} as its directory, not {expected};"
                " nothing was deleted"
            )
    if expected.is_symlink():
        raise UnexpectedRunDirError(f"{expected} is a link; nothing was deleted")
    # A remote backend may keep the run's staged files here too.
    run_dir = expected if expected.is_dir() else None
    from x_tui.compute.price_quotes import quote_path

    own = (*side_files, quote_path(store, handle.run_id))
    kept = tuple(path for path in own if path.is_file() and not path.is_symlink())
    return Removal(run_dir=run_dir, side_files=kept, record=store.path_of(handle.run_id))


def delete_run(
    handle: RunHandle,
    backend: ComputeBackend,
    store: RunStore,
    *,
    side_files: Sequence[Path] = (),
    state: RunState | None = None,
) -> Removal:
    """Delete a finished run's local files and then its record.

    Args:
        handle: The run.
        backend: Its backend (asked for the run's state first).
        store: The store holding its record.
        side_files: x-tui's own files about the run.
        state: The run's state, just asked; the backend is asked when ``None``.

    Returns:
        What was removed.

    Raises:
        RunStillGoingError: If the backend says the run has not ended.
        UnexpectedRunDirError: If the handle names an unexpected run directory.
        OSError: If a file cannot be removed (the record is kept then).
    """
    check_ended(handle, state if state is not None else backend.status(handle))
    removal = plan_removal(handle, backend, store, side_files=side_files)
    if removal.run_dir is not None:
        shutil.rmtree(removal.run_dir)
    for path in removal.side_files:
        path.unlink(missing_ok=True)
    store.delete(handle.run_id)
    return removal
