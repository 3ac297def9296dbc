"""x-tui's own caches under ``<state>/x-tui/``: one that cannot be read is rebuilt, never trusted.

Each read that could block runs on a thread the test waits for with a deadline.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import x_tui.compute.slices
from tests.support import wait_for
from x_tui.app.final_states import (
    RECENT_NAME,
    RECENT_RUNS,
    keep_final_states,
    read_final_states,
    read_recent_final_states,
    write_final_states,
)
from x_tui.app.log_spool import LogSpools
from x_tui.compute.backend import ComputeBackend, RunState

from .app_support import save_handle

DEADLINE = 30.0
RUN_ID = "remote-20260919T120000Z-abcdef"


def test_a_final_states_cache_that_cannot_be_read_is_none_so_it_is_rebuilt(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "final-states.json"
    assert read_final_states(cache) == {}  # none yet: nothing to rebuild
    for make in (
        lambda: os.mkfifo(cache),
        cache.mkdir,
        lambda: cache.symlink_to("/dev/zero"),
        lambda: cache.write_text("[" * 100_000),
        lambda: cache.write_bytes(b"\xff\xfe{}"),
        lambda: cache.write_text('{"version": 1, "runs": []}'),
        lambda: cache.write_text("null"),
    ):
        make()
        found: list[object] = []
        reader = threading.Thread(target=lambda found=found: found.append(read_final_states(cache)))
        reader.start()
        reader.join(DEADLINE)
        assert not reader.is_alive(), f"reading {cache} did not end"
        assert found == [None]
        if cache.is_dir() and not cache.is_symlink():
            cache.rmdir()
        else:
            cache.unlink()


def test_entries_that_are_not_final_states_of_run_ids_are_skipped(tmp_path: Path) -> None:
    cache = tmp_path / "final-states.json"
    good = "good-20260919T120000Z-000001"
    cache.write_text(
        json.dumps(
            {
                "version": 1,
                "runs": {
                    good: {"state": "succeeded", "ended_at": 5.0},
                    "../../etc/passwd": {"state": "succeeded", "ended_at": 5.0},
                    "run-20260919T120000Z-000002": {"state": "running", "ended_at": None},
                    "run-20260919T120000Z-000003": {"state": "failed", "ended_at": "NaN"},
                    "run-20260919T120000Z-000004": [1],
                },
            }
        )
    )
    assert read_final_states(cache) == {good: (RunState.SUCCEEDED, 5.0)}


def test_final_states_are_kept_as_columns_and_an_older_cache_is_still_read(tmp_path: Path) -> None:
    cache = tmp_path / "final-states.json"
    older = {"version": 1, "runs": {RUN_ID: {"state": "failed", "ended_at": 5.0}}}
    cache.write_text(json.dumps(older))  # as x-tui kept them before
    assert read_final_states(cache) == {RUN_ID: (RunState.FAILED, 5.0)}
    other = "other-20260919T120000Z-000002"
    keep_final_states(cache, {other: (RunState.SUCCEEDED, None)})
    assert [json.loads(line) for line in cache.read_text().splitlines()] == [
        {"version": 3},
        {"run_ids": [other, RUN_ID], "states": ["succeeded", "failed"], "ended_at": [None, 5.0]},
    ]
    assert read_final_states(cache) == {
        RUN_ID: (RunState.FAILED, 5.0),
        other: (RunState.SUCCEEDED, None),
    }
    columns = {"run_ids": [RUN_ID], "states": ["failed"], "ended_at": [5.0]}
    cache.write_text(json.dumps({"version": 2, **columns}))  # as the release before kept them
    assert read_final_states(cache) == {RUN_ID: (RunState.FAILED, 5.0)}


def test_many_final_states_are_kept_a_slice_of_runs_a_line_and_read_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each line is parsed and checked on its own: the reading thread holds the interpreter from
    # the event loop a slice at a time, not for the whole cache at once.
    monkeypatch.setattr(x_tui.compute.slices, "SLICE", 3)
    cache = tmp_path / "final-states.json"
    kept = {
        f"train-20260919T1200{index:02d}Z-{index:06x}": (RunState.SUCCEEDED, float(index))
        for index in range(8)
    }
    write_final_states(cache, kept)
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    assert lines[0] == {"version": 3}
    assert [len(line["run_ids"]) for line in lines[1:]] == [3, 3, 2]
    assert read_final_states(cache) == kept
    # A damaged line is a damaged cache: rebuilt, not half believed.
    damaged = cache.read_text().splitlines()
    damaged[2] = json.dumps({"run_ids": ["x"], "states": []})
    cache.write_text("\n".join(damaged) + "\n")
    assert read_final_states(cache) is None


def test_column_entries_that_are_not_final_states_of_run_ids_are_skipped(tmp_path: Path) -> None:
    cache = tmp_path / "final-states.json"
    good = "good-20260919T120000Z-000001"
    entries = [
        (good, "succeeded", 5),  # a whole number is a time too
        ("../../etc/passwd", "succeeded", 5.0),
        ("run-20260919T120000Z-000002", "running", None),
        ("run-20260919T120000Z-000003", "failed", "NaN"),
        ("run-20260919T120000Z-000004", ["failed"], None),
        (7, "failed", None),
    ]
    columns = [list(column) for column in zip(*entries, strict=True)]
    line = {"run_ids": columns[0], "states": columns[1], "ended_at": columns[2]}
    cache.write_text(json.dumps({"version": 3}) + "\n" + json.dumps(line) + "\n")
    assert read_final_states(cache) == {good: (RunState.SUCCEEDED, 5.0)}
    cache.write_text(json.dumps({"version": 2, **line}))
    assert read_final_states(cache) == {good: (RunState.SUCCEEDED, 5.0)}
    out_of_step = {"run_ids": [good], "states": [], "ended_at": []}
    cache.write_text(json.dumps({"version": 3}) + "\n" + json.dumps(out_of_step) + "\n")
    assert read_final_states(cache) is None  # columns out of step: rebuilt


def test_a_cache_replaced_by_a_fifo_is_written_anew_as_a_file(tmp_path: Path) -> None:
    cache = tmp_path / "final-states.json"
    os.mkfifo(cache)
    write_final_states(cache, {RUN_ID: (RunState.FAILED, 1.0)})
    assert stat.S_ISREG(os.lstat(cache).st_mode)
    assert read_final_states(cache) == {RUN_ID: (RunState.FAILED, 1.0)}


def test_the_newest_runs_final_states_are_believed_only_beside_the_cache_they_came_from(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "final-states.json"
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    ids = [
        f"job{index % 3}-{start + dt.timedelta(minutes=index):%Y%m%dT%H%M%SZ}-{index:06x}"
        for index in range(RECENT_RUNS + 50)
    ]
    kept = {run_id: (RunState.SUCCEEDED, float(index)) for index, run_id in enumerate(ids)}
    write_final_states(cache, kept)
    recent = read_recent_final_states(cache)
    # The newest by the time in the run id, whatever the job's name sorts as.
    assert recent == {run_id: kept[run_id] for run_id in ids[-RECENT_RUNS:]}
    assert (tmp_path / RECENT_NAME).stat().st_size < cache.stat().st_size
    # The cache written anew by a release that keeps no newest runs beside it (same content).
    text = cache.read_text()
    cache.unlink()
    cache.write_text(text)
    assert read_recent_final_states(cache) is None
    assert read_final_states(cache) == kept
    keep_final_states(cache, {})  # written again by this release: believed again
    assert read_recent_final_states(cache) == recent
    cache.unlink()  # the cache removed (to ask about every run again): none believed
    assert read_recent_final_states(cache) is None


@pytest.mark.parametrize(
    "content",
    [b"{not json", b'{"version": 1, "of": "x"}', b"[" * 100_000, b'{"version": 9}'],
)
def test_a_damaged_file_of_the_newest_runs_final_states_is_not_believed(
    tmp_path: Path, content: bytes
) -> None:
    cache = tmp_path / "final-states.json"
    write_final_states(cache, {RUN_ID: (RunState.FAILED, 1.0)})
    (tmp_path / RECENT_NAME).write_bytes(content)
    assert read_recent_final_states(cache) is None
    assert read_final_states(cache) == {RUN_ID: (RunState.FAILED, 1.0)}


class _Lines:
    """A backend whose run's log is three lines."""

    def logs(self, handle: object, *, follow: bool) -> Iterator[str]:
        yield from ("one", "two", "three")


@pytest.mark.parametrize("left", ["fifo", "link"])
def test_a_log_copy_left_as_a_fifo_or_a_link_is_copied_anew_not_trusted(
    tmp_path: Path, left: str
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    copy, done = logs / f"{RUN_ID}.log", logs / f"{RUN_ID}.done"
    outside = tmp_path / "outside.txt"
    outside.write_text("not to be touched\n")
    if left == "fifo":
        os.mkfifo(copy)
    else:
        copy.symlink_to(outside)
    done.touch()
    handle = save_handle(
        tmp_path / "state",
        run_id=RUN_ID,
        job="remote",
        submitted_at=dt.datetime(2026, 9, 19, tzinfo=dt.UTC),
    )
    spools = LogSpools(logs, open_seconds=DEADLINE)
    state = spools.spool(handle, lambda: cast(ComputeBackend, cast(Any, _Lines())))
    wait_for(lambda: state.finished, "the spool's end", deadline=DEADLINE)
    assert state.error is None
    assert stat.S_ISREG(os.lstat(copy).st_mode)
    assert copy.read_text() == "one\ntwo\nthree\n"
    assert outside.read_text() == "not to be touched\n"
