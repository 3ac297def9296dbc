"""What the runs table's tests share: an app that shows the table alone, and runs to list."""

from __future__ import annotations

import datetime as dt

from textual.app import App, ComposeResult

from tests.support import local_handle
from x_tui.compute.store import RunHandle
from x_tui.widgets.runs_table import RunsTable

START = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)
"""When the first run of :func:`runs_newest_first` was submitted."""


class TableApp(App[None]):
    """The table alone on the screen."""

    def __init__(self, table: RunsTable) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


def runs_newest_first(count: int, *jobs: str) -> tuple[RunHandle, ...]:
    """``count`` runs a minute apart from :data:`START`, of ``jobs`` in turn, newest first."""
    made = []
    for index in range(count):
        moment = START + dt.timedelta(minutes=index)
        job = jobs[index % len(jobs)]
        made.append(local_handle(f"{job}-{moment:%Y%m%dT%H%M%SZ}-{index:06x}", moment))
    return tuple(reversed(made))
