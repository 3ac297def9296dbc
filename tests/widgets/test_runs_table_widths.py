"""The runs table keeps to its width: a watched run's Progress, GPU and Cost columns show only
where they fit beside the run's own (a table too narrow for one hides it, the cost first, never
shows it cut off), and a long job name is cut short in its cell."""

from __future__ import annotations

from rich.text import Text

from tests.support import asynchronous
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.widgets.run_rows import JOB_WIDTH
from x_tui.widgets.runs_table import RunsTable

from .table_support import TableApp, runs_newest_first


async def _watch_columns(width: int) -> tuple[list[str], int, int, int]:
    """The watch columns a table ``width`` wide shows for a running run; its columns' width, the
    width it has, and the width it would want for every column."""
    handles = runs_newest_first(3, "train")
    states = {handle.run_id: RunState.RUNNING for handle in handles}
    table = RunsTable()
    async with TableApp(table).run_test(size=(width, 20)) as pilot:
        table.show_stored(StoredRuns(handles=handles, unreadable={}), states=states.get)
        await pilot.pause()
        table.show_watch({handles[0].run_id: (Text("25% ETA 3m"), Text("91%"), Text("$0.12"))})
        await pilot.pause()
        shown = [key for key in ("progress", "gpu", "cost") if key in table.columns]
        if shown:
            assert table.get_cell(handles[0].run_id, "progress").plain == "25% ETA 3m"
            assert table.get_cell(handles[1].run_id, "progress").plain == ""
        return (
            shown,
            table.virtual_size.width,
            table.scrollable_content_region.width,
            table.wanted_width,
        )


@asynchronous
async def test_the_watch_columns_show_where_they_fit_and_hide_where_they_would_be_cut() -> None:
    shown, used, room, wanted = await _watch_columns(200)
    assert shown == ["progress", "gpu", "cost"]
    assert used == wanted <= room
    shown, used, room, _ = await _watch_columns(wanted - 1)  # (three rows: no scrollbar)
    assert shown == ["progress", "gpu"]  # the cost gives way first
    assert used <= room

    shown, used, room, _ = await _watch_columns(wanted - 30)
    assert shown == []
    assert used <= room  # nothing cut off on the right

    base = wanted - (18 + 6 + 10)  # the run's own columns
    shown, used, room, _ = await _watch_columns(base + 18)
    assert shown == ["progress"]
    assert used <= room


@asynchronous
async def test_a_long_job_name_is_cut_short_in_its_cell_and_whole_on_the_line_under_it() -> None:
    job = "evaluate-every-checkpoint-on-the-held-out-set"
    [plain] = runs_newest_first(1, "train")
    handle = RunHandle(
        run_id=f"{job}-20260919T120000Z-abcdef",
        backend="local",
        job=job,
        project="/home/user/sample",
        submitted_at=plain.submitted_at,
        settings=plain.settings,
        details=plain.details,
    )
    table = RunsTable()
    async with TableApp(table).run_test(size=(200, 20)) as pilot:
        table.show_stored(StoredRuns(handles=(handle,), unreadable={}))
        await pilot.pause()
        cell = table.get_cell(handle.run_id, "job").plain
        assert len(cell) == JOB_WIDTH
        assert cell == job[: JOB_WIDTH - 1] + "…"
        assert job in table.describe(handle.run_id).plain  # (the id has it whole too)
