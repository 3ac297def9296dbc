"""The runs table's ages and durations as time passes: only the changed rows are drawn again,
and the screen shows every new value."""

from __future__ import annotations

import asyncio
import datetime as dt

from textual.app import App

from tests.support import local_handle
from x_tui.compute.backend import RunState
from x_tui.compute.store import StoredRuns
from x_tui.widgets.run_cells import COARSE_GATHER, RedrawQueue
from x_tui.widgets.runs_table import RunsTable

from .table_support import TableApp

START = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _lines(app: App[None]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def test_running_rows_show_each_second_and_finished_rows_stay_as_drawn() -> None:
    async def scenario() -> None:
        clock = _Clock(START.timestamp() + 5.5)
        table = RunsTable(clock=clock, min_refresh=0.05)
        app = TableApp(table)
        handles = (
            local_handle("busy-20260919T120000Z-aaaaaa", START),
            local_handle("also-20260919T120001Z-bbbbbb", START + dt.timedelta(seconds=1)),
            local_handle("done-20260919T110000Z-cccccc", START - dt.timedelta(hours=1)),
        )
        states = {
            handles[0].run_id: RunState.RUNNING,
            handles[1].run_id: RunState.RUNNING,
            handles[2].run_id: RunState.SUCCEEDED,
        }
        ended = {handles[2].run_id: (START - dt.timedelta(minutes=30)).timestamp()}
        async with app.run_test(size=(100, 10)) as pilot:
            table.show_stored(
                StoredRuns(handles=handles, unreadable={}), states=states.get, ended=ended.get
            )
            await pilot.pause()

            def row(name: str) -> str:
                return next(line for line in _lines(app) if name in line)

            assert "5s" in row("busy")
            assert "4s" in row("also")
            done_before = row("done")
            for second in range(6, 9):
                clock.now = START.timestamp() + second + 0.5
                for _ in range(40):
                    await asyncio.sleep(0.05)
                    await pilot.pause()
                    if f"{second}s" in row("busy"):
                        break
                # Both the age and the running duration move on, on both running rows.
                assert row("busy").count(f"{second}s") == 2, row("busy")
                assert row("also").count(f"{second - 1}s") == 2, row("also")
                assert row("done") == done_before
            # A cell changed by hand (a state) still shows, with the ages kept.
            table.set_state(handles[0].run_id, RunState.SUCCEEDED, clock.now)
            await pilot.pause()
            assert "succeeded" in row("busy")
            assert row("also").count("7s") == 2

    asyncio.run(scenario())


def test_rows_whose_minutes_turn_within_seconds_of_each_other_are_redrawn_together() -> None:
    # Three runs submitted 1.3 s apart (a sweep, a script): each one's age turns 2m on its own
    # second, and each used to cost a redraw of its own.
    for tenth in range(100):
        start = 1000.0 + tenth / 10
        queue = RedrawQueue()
        offsets = {"a": 0.0, "b": 1.3, "c": 2.6}
        for key, offset in offsets.items():
            queue.schedule(key, start + offset, start + 100.0, fine=True)
        redraws: list[list[str]] = []
        while (due := queue.first_due()) is not None:
            assert queue.pop_due(due - 0.001) == []
            keys = queue.pop_due(due)
            for key in keys:  # its text turns now, at most a little late
                assert 0 <= due - (start + offsets[key] + 120.0) <= COARSE_GATHER
            redraws.append(keys)
        assert sorted(key for keys in redraws for key in keys) == ["a", "b", "c"]
        assert len(redraws) <= 2, redraws  # together, or split once by the clock's grid
        if start % COARSE_GATHER == 0.5:
            assert len(redraws) == 1
    # Within the first minute every second shows, on time.
    queue = RedrawQueue()
    queue.schedule("young", 1000.0, 1010.2, fine=False)
    assert queue.first_due() == 1011.0
    assert queue.pop_due(1011.0) == ["young"]
