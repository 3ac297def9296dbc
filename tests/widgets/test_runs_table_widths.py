"""The runs table keeps to its width: a watched run's Progress, GPU and Cost columns show only
where they fit beside the run's own (a table too narrow for one hides it, the cost first, never
shows it cut off), and a record's long words are cut short in their cells."""

from __future__ import annotations

from rich.text import Text

from tests.support import asynchronous
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, StoredRuns
from x_tui.widgets.run_rows import WORD_WIDTH
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
async def test_a_records_long_words_are_cut_short_in_their_cells_and_whole_under_the_table() -> (
    None
):
    job = "evaluate-every-checkpoint-on-the-held-out-set"
    project = "p" * 5000  # a hostile record's: one name would widen the whole table
    [plain] = runs_newest_first(1, "train")
    handle = RunHandle(
        run_id=f"{job}-20260919T120000Z-abcdef",
        backend="b" * 300,
        job=job,
        project=f"/home/user/{project}",
        submitted_at=plain.submitted_at,
        settings=plain.settings,
        details=plain.details,
    )
    table = RunsTable()
    async with TableApp(table).run_test(size=(200, 20)) as pilot:
        table.set_project(None)  # every project's runs: the Project column shows
        table.show_stored(StoredRuns(handles=(handle,), unreadable={}))
        await pilot.pause()
        cells = {
            key: table.get_cell(handle.run_id, key).plain for key in ("job", "project", "backend")
        }
        assert cells == {
            "job": job[: WORD_WIDTH - 1] + "…",
            "project": "p" * (WORD_WIDTH - 1) + "…",
            "backend": "b" * (WORD_WIDTH - 1) + "…",
        }
        assert table.virtual_size.width < 200
        described = table.describe(handle.run_id).plain
        assert job in described
        assert project in described
