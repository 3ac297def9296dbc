"""``x-tui status`` over a store of many runs: newest first, and a finished run costs no question.

A run whose final state x-tui keeps is listed from the store's index and the kept state alone:
its backend is not built and its handle not made. Only the other runs are asked about, and the
final states they are found in are kept, so the next ``status`` asks nothing.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import read_index_document
from x_tui.app.final_states import final_states_path, read_final_states, write_final_states
from x_tui.cli import main, run_verbs
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, RunStore, handle_json
from x_tui.compute.store_index import index_text

START = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


class Answering:
    """A backend that says every run it is asked about succeeded, and records the question."""

    capabilities: frozenset[object] = frozenset()

    def __init__(self) -> None:
        self.asked: list[str] = []

    def status(self, handle: RunHandle) -> RunState:
        self.asked.append(handle.run_id)
        return RunState.SUCCEEDED

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        raise AssertionError("status never reads logs")


def run(index: int, job: str = "train") -> RunHandle:
    """A run submitted ``index`` minutes after START (so a higher index is newer)."""
    moment = START + dt.timedelta(minutes=index)
    return RunHandle(
        run_id=f"{job}-{moment:%Y%m%dT%H%M%SZ}-{index:06x}",
        backend="answering",
        job=job,
        project="/home/user/project",
        submitted_at=moment,
        settings={"region": "a"},
        details={},
    )


def test_kept_final_states_are_listed_newest_first_and_only_the_others_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore()
    runs = [run(index) for index in (3, 0, 4, 1, 2)]  # saved in no order
    for handle in runs:
        store.save(handle)
    kept = {run(0).run_id: (RunState.FAILED, 1.0), run(3).run_id: (RunState.CANCELLED, None)}
    write_final_states(final_states_path(store.root), kept)
    backend = Answering()
    built: list[str] = []

    def backend_for(handle: RunHandle) -> Answering:
        built.append(handle.run_id)
        return backend

    monkeypatch.setattr(run_verbs, "backend_for", backend_for)

    assert main(["status"]) == 0
    assert gc.isenabled()  # paused while listing, on again after
    out, err = capsys.readouterr()
    assert err == ""
    listed = [line.split() for line in out.splitlines()]
    assert [fields[0] for fields in listed] == [run(index).run_id for index in (4, 3, 2, 1, 0)]
    assert [fields[3] for fields in listed] == [
        "succeeded",
        "cancelled",
        "succeeded",
        "succeeded",
        "failed",
    ]
    # Only the runs without a kept final state were asked about (one backend, built once).
    assert sorted(backend.asked) == sorted(run(index).run_id for index in (1, 2, 4))
    assert len(built) == 1
    # What was learnt is kept: the next status asks nothing and lists the same.
    finals = read_final_states(final_states_path(store.root))
    assert finals is not None
    assert {run_id: state for run_id, (state, _) in finals.items()} == {
        **{run_id: state for run_id, (state, _) in kept.items()},
        **{run(index).run_id: RunState.SUCCEEDED for index in (1, 2, 4)},
    }
    backend.asked.clear()
    assert main(["status"]) == 0
    assert capsys.readouterr().out == out
    assert backend.asked == []


def test_a_run_saved_by_substrax_after_the_listing_was_indexed_is_listed_in_its_place(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore()
    for index in (0, 2):
        store.save(run(index))
    write_final_states(
        final_states_path(store.root),
        {run(index).run_id: (RunState.FAILED, None) for index in (0, 1, 2)},
    )
    monkeypatch.setattr(run_verbs, "backend_for", lambda handle: pytest.fail("asked"))
    assert main(["status"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    # substrax writes a partial file and renames it into place; it knows nothing of the index.
    partial = store.root / ".partial"
    partial.write_text(handle_json(run(1)), encoding="utf-8")
    partial.replace(store.path_of(run(1).run_id))
    assert main(["status"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [run(index).run_id for index in (2, 1, 0)]


def test_a_damaged_index_lists_the_same_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore()
    for index in range(3):
        store.save(run(index))
    write_final_states(
        final_states_path(store.root),
        {run(index).run_id: (RunState.FAILED, None) for index in range(3)},
    )
    monkeypatch.setattr(run_verbs, "backend_for", lambda handle: pytest.fail("asked"))
    assert main(["status"]) == 0
    truth = capsys.readouterr().out
    index = read_index_document(store.index_path)
    index["names"][0] = "../../../elsewhere.json"
    store.index_path.write_text(index_text(index), encoding="utf-8")
    assert main(["status"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (truth, "")


def test_status_json_still_makes_every_handle(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = RunStore()
    store.save(run(0))
    write_final_states(final_states_path(store.root), {run(0).run_id: (RunState.FAILED, None)})
    monkeypatch.setattr(run_verbs, "backend_for", lambda handle: Answering())
    assert main(["status", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [
        (entry["run_id"], entry["state"], entry["submitted_at"]) for entry in document["runs"]
    ] == [(run(0).run_id, "failed", "2026-12-01T12:00:00Z")]
