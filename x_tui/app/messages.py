"""The messages the run monitor posts to the app, which publishes them to its screens.

Workers (the monitor's watcher and poller threads, the service's calls) never touch widgets: they
post one of these to the app (``post_message`` is thread-safe), and the app publishes it on its
``monitor_events`` signal (:class:`~x_tui.app.app_context.AppContext`), to which each screen that
shows runs subscribes on mount and updates its own widgets. Each message is a small dataclass so
a test can assert on what was posted (``run_test(message_hook=...)``). None of them bubbles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.compute.sweeps import StoredSweeps

if TYPE_CHECKING:  # (the project is read after the first frame, and its module loaded then)
    from x_tui.compute.operations import Project


@dataclass
class RunsChanged(Message, bubble=False):
    """The run store changed: a handle was added, rewritten or removed, or became unreadable.

    Attributes:
        stored: Everything the store holds now (handles newest first, unreadable records by path).
        complete: ``False`` while the store is still being read at start-up (the newest records
            come first, so the first screenful shows before the rest is read).
    """

    stored: StoredRuns
    complete: bool = True


@dataclass
class RunStateChanged(Message, bubble=False):
    """A run's state, as its backend reports it, is not what it was last seen as.

    Attributes:
        run_id: The run.
        state: Its state now.
        previous: The state this session saw it in before (``None``: the backend's first answer).
    """

    run_id: str
    state: RunState
    previous: RunState | None = None


@dataclass
class RunStatusFailed(Message, bubble=False):
    """A run's backend could not say where the run is (an error, or no answer in time).

    Attributes:
        run_id: The run.
        reason: The backend's message (untrusted text: show it through ``safe_text``).
    """

    run_id: str
    reason: str


@dataclass
class RunStatusRecovered(Message, bubble=False):
    """A run's backend answers again after it could not say where the run is (an answer with a
    new state comes after that state's :class:`RunStateChanged`).

    Attributes:
        run_id: The run.
    """

    run_id: str


@dataclass
class SweepsChanged(Message, bubble=False):
    """A sweep record was added or rewritten (a sweep submitted from here or another shell).

    Attributes:
        sweeps: Every recorded sweep, newest first, and the unreadable records.
    """

    sweeps: StoredSweeps


@dataclass
class OpenRun(Message, bubble=False):
    """Show a run's screen (posted to the app by what cannot import that screen: a re-run, the
    command palette).

    Attributes:
        handle: The run to show.
    """

    handle: RunHandle


@dataclass
class ConfigChanged(Message, bubble=False):
    """The project's ``pyproject.toml`` changed and was read again.

    Attributes:
        project: The project as it reads now (``project.problem`` says why it has no jobs).
    """

    project: Project


MonitorEvent = (
    RunsChanged
    | RunStateChanged
    | RunStatusFailed
    | RunStatusRecovered
    | SweepsChanged
    | ConfigChanged
)
"""What the run monitor tells the screens, through the app's ``monitor_events`` signal."""
