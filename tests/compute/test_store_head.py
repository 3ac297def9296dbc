"""The store index's head: the newest runs from a few kilobytes, believed only while the store
is as it was when the head was made."""

from __future__ import annotations

import json
import os

import pytest

from tests.compute.store_support import handle, settle, substrax_save
from x_tui.compute.store import RunStore
from x_tui.compute.store_index import HEAD_ROWS

COUNT = HEAD_ROWS + 20


def indexed_store(store: RunStore) -> tuple[RunStore, list[str]]:
    """A settled store of ``COUNT`` runs, listed once (its index and head made)."""
    runs = [handle(index) for index in range(COUNT)]
    for run in runs:
        store.save(run)
    settle(store)
    store.read_all()
    return store, [run.run_id for run in reversed(runs)]


def test_the_head_gives_the_newest_runs_without_listing_the_directory(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, newest_first = indexed_store(store)
    listed: list[object] = []
    real_listdir = os.listdir

    def listdir(path: object) -> list[str]:
        listed.append(path)
        return real_listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "listdir", listdir)
    again = RunStore(store.root)
    head = again.head()
    assert head is not None
    assert [run.run_id for run in head.runs] == newest_first[:HEAD_ROWS]
    assert head.total == COUNT
    assert not head.complete
    assert head.handle(head.runs[0]) == handle(COUNT - 1)  # the whole handle, details and all
    assert listed == []


def test_a_small_store_s_head_is_the_whole_store(store: RunStore) -> None:
    for index in range(3):
        store.save(handle(index))
    settle(store)
    store.read_all()
    head = store.head()
    assert head is not None
    assert head.complete
    assert [run.run_id for run in head.runs] == [handle(index).run_id for index in (2, 1, 0)]


def test_a_run_written_after_the_head_makes_it_unbelieved(store: RunStore) -> None:
    store, _ = indexed_store(store)
    substrax_save(store, handle(COUNT + 5))  # by substrax, which knows no head
    assert store.head() is None
    settle(store)  # however quiet the directory since: it is not the one the head was made from
    assert store.head() is None
    listed = store.read_all()  # the store listed whole makes the head anew
    head = store.head()
    assert head is not None
    assert head.runs[0].run_id == handle(COUNT + 5).run_id == listed.handles[0].run_id


def test_a_head_made_as_the_directory_changed_is_not_believed(store: RunStore) -> None:
    store, _ = indexed_store(store)
    store.save(handle(COUNT))
    store.read_all()  # the directory changed a moment ago: a write in the same tick could hide
    assert store.head() is None


@pytest.mark.parametrize(
    "damage",
    [
        "not JSON",
        "another store's",
        "a column of the wrong type",
        "a file named twice",
        "no count",
        "a count below its rows",
    ],
)
def test_a_damaged_head_is_ignored_and_the_store_still_lists_every_run(
    store: RunStore, damage: str
) -> None:
    store, newest_first = indexed_store(store)
    path = store.head_path
    data = json.loads(path.read_text())
    if damage == "not JSON":
        path.write_text("{not json")
    else:
        if damage == "another store's":
            data["runs_dir"] = "/elsewhere/compute/runs"
        elif damage == "a column of the wrong type":
            data["versions"][0] = "2"
        elif damage == "a file named twice":
            data["names"][0] = data["names"][1]
        elif damage == "no count":
            del data["total"]
            data["total"] = "many"
        else:
            data["total"] = 1
        path.write_text(json.dumps(data))
    assert store.head() is None
    assert [run.run_id for run in store.read_all().handles] == newest_first


def test_a_fifo_in_the_head_place_is_no_head(store: RunStore) -> None:
    store, newest_first = indexed_store(store)
    store.head_path.unlink()
    os.mkfifo(store.head_path)
    assert store.head() is None  # refused at once, never blocks
    assert [run.run_id for run in store.read_all().handles] == newest_first
