"""The TUI's run monitor: a :class:`~x_tui.app.run_follower.RunFollower` that posts messages.

What the follower's threads learn (the store, the sweeps, the project, each run's state) is
posted as one of :mod:`~x_tui.app.messages` through ``post`` (the app's thread-safe
``post_message``), and the screens update themselves from those. The following itself (store
watching, polling with deadlines and backoff, final states kept across sessions) lives in the
follower, which the headless watcher uses too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Unpack

from textual.message import Message

from x_tui.app.messages import (
    ConfigChanged,
    RunsChanged,
    RunStateChanged,
    RunStatusFailed,
    RunStatusRecovered,
    SweepsChanged,
)
from x_tui.app.run_follower import FollowerOptions, RunFollower
from x_tui.app.service import Service
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.compute.sweeps import StoredSweeps

if TYPE_CHECKING:
    from x_tui.compute.operations import Project


class RunMonitor(RunFollower):
    """Keeps the app's view of the run store and of each run's state current."""

    first_pause = 1.0
    """The main screen says when its first screenful is shown (:meth:`first_shown`: the newest
    runs and, in a project, its jobs); the rest of the store is read then, or after this many
    seconds if it does not."""

    def __init__(
        self,
        service: Service,
        post: Callable[[Message], object],
        **options: Unpack[FollowerOptions],
    ) -> None:
        """Watch ``service``'s store (and the project's pyproject.toml) and post what changes.

        Args:
            service: Reads the store and asks backends for states.
            post: Delivers a message to the app; called from the monitor's threads.
            **options: The project watched and how runs are polled, as
                :class:`~x_tui.app.run_follower.RunFollower` takes them.
        """
        super().__init__(service, **options)
        self._post = post
        self._problems: dict[str, str] = {}

    def problems(self) -> dict[str, str]:
        """Why each run's backend could not say where it is, by run id, until it answers again
        (a screen opened after the event catches up from here)."""
        return dict(self._problems)

    def on_runs_changed(self, stored: StoredRuns, *, complete: bool) -> None:
        """Post :class:`RunsChanged`."""
        self._post(RunsChanged(stored, complete))

    def on_sweeps_changed(self, sweeps: StoredSweeps) -> None:
        """Post :class:`SweepsChanged`."""
        self._post(SweepsChanged(sweeps))

    def on_project_changed(self, project: Project) -> None:
        """Post :class:`ConfigChanged`."""
        self._post(ConfigChanged(project))

    def on_state_changed(
        self, handle: RunHandle, state: RunState, previous: RunState | None
    ) -> None:
        """Post :class:`RunStateChanged`."""
        self._problems.pop(handle.run_id, None)
        self._post(RunStateChanged(handle.run_id, state, previous))

    def on_polled(self, handle: RunHandle, state: RunState) -> None:
        """Forget the run's last status problem: its backend answered."""
        self._problems.pop(handle.run_id, None)

    def on_status_failed(self, run_id: str, reason: str) -> None:
        """Keep the reason and post :class:`RunStatusFailed`."""
        self._problems[run_id] = reason
        self._post(RunStatusFailed(run_id, reason))

    def on_status_recovered(self, run_id: str) -> None:
        """Forget the run's problem and post :class:`RunStatusRecovered`."""
        self._problems.pop(run_id, None)
        self._post(RunStatusRecovered(run_id))

    def on_launch_state(self, run_id: str, state: RunState) -> None:
        """Post :class:`RunStateChanged` (with no previous state: not a backend's answer)."""
        self._post(RunStateChanged(run_id, state))

    def on_kept_state(self, run_id: str, state: RunState) -> None:
        """Post :class:`RunStateChanged` (with no previous state: not a backend's answer)."""
        self._post(RunStateChanged(run_id, state))
