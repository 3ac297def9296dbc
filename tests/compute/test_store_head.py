"""The store index's head: the newest runs from a few kilobytes, believed only while the store
is as it was when the head was made."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.compute.store_support import handle, settle, substrax_save
from tests.support import read_index_document
from x_tui.compute.store import RunStore
from x_tui.compute.store_index import (
    HEAD_ROWS,
    PROJECT_HEAD_ROWS,
    PROJECT_HEADS_NAME,
    index_text,
    project_head_name,
)

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
    data = read_index_document(path)
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
        path.write_text(index_text(data))
    assert store.head() is None
    assert [run.run_id for run in store.read_all().handles] == newest_first


def test_a_fifo_in_the_head_place_is_no_head(store: RunStore) -> None:
    store, newest_first = indexed_store(store)
    store.head_path.unlink()
    os.mkfifo(store.head_path)
    assert store.head() is None  # refused at once, never blocks
    assert [run.run_id for run in store.read_all().handles] == newest_first


MINE = "/home/me/mine"
THEIRS = "/home/me/theirs"


def two_project_store(store: RunStore) -> tuple[list[str], list[str]]:
    """A settled, listed store where another project saved its runs after ours: the newest
    ``HEAD_ROWS`` runs are all theirs.

    Returns:
        Our run ids and theirs, each newest first.
    """
    mine = [replace(handle(index), project=MINE) for index in range(PROJECT_HEAD_ROWS + 10)]
    theirs = [
        replace(handle(len(mine) + index, job="sweep"), project=THEIRS)
        for index in range(HEAD_ROWS + 5)
    ]
    for run in [*mine, *theirs]:
        store.save(run)
    settle(store)
    store.read_all()
    return [run.run_id for run in reversed(mine)], [run.run_id for run in reversed(theirs)]


def test_a_project_whose_runs_are_not_the_newest_has_its_newest_in_the_head_it_asks_for(
    store: RunStore,
) -> None:
    mine, theirs = two_project_store(store)
    again = RunStore(store.root)
    head = again.head()
    assert head is not None
    assert [run.run_id for run in head.runs] == theirs[:HEAD_ROWS]
    ours = again.head(MINE + "/")  # a root as the runs table matches it (normalised)
    assert ours is not None
    assert [run.run_id for run in ours.runs] == theirs[:HEAD_ROWS] + mine[:PROJECT_HEAD_ROWS]
    assert ours.total == head.total == len(mine) + len(theirs)
    assert not ours.complete
    assert ours.handle(ours.runs[HEAD_ROWS]).project == MINE  # the whole handle, as listed
    # a project whose newest runs the head holds has no head of its own
    assert again.head(THEIRS) == head
    heads = store.head_path.with_name(PROJECT_HEADS_NAME)
    assert sorted(path.name for path in heads.iterdir()) == [project_head_name(MINE)]


def test_a_projects_head_is_believed_only_as_the_head_is_and_only_with_its_own_runs(
    store: RunStore,
) -> None:
    mine, theirs = two_project_store(store)
    heads = store.head_path.with_name(PROJECT_HEADS_NAME)
    ours = heads / project_head_name(MINE)
    # someone else's runs under our name (a hand, or a hash's collision) add nothing
    kept = ours.read_bytes()
    data = read_index_document(ours)
    data["projects"] = [THEIRS] * len(data["projects"])
    ours.write_text(index_text(data))
    head = store.head(MINE)
    assert head is not None
    assert [run.run_id for run in head.runs] == theirs[:HEAD_ROWS]
    ours.write_bytes(kept)
    # a run saved since: neither head is believed, and the store's listing makes both anew
    substrax_save(store, replace(handle(10_000), project=THEIRS))
    assert store.head(MINE) is None
    settle(store)
    store.read_all()
    head = store.head(MINE)
    assert head is not None
    assert [run.run_id for run in head.runs][HEAD_ROWS:] == mine[:PROJECT_HEAD_ROWS]
    # once our runs are the newest again, our own head is removed, and theirs made
    for index in range(HEAD_ROWS):
        store.save(replace(handle(20_000 + index), project=MINE))
    settle(store)
    store.read_all()
    assert [path.name for path in heads.iterdir()] == [project_head_name(THEIRS)]


def test_a_link_in_the_place_of_the_projects_heads_is_left_alone(
    store: RunStore, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept.json").write_text("{}")
    store.head_path.parent.mkdir(parents=True, exist_ok=True)
    store.head_path.with_name(PROJECT_HEADS_NAME).symlink_to(elsewhere)
    mine, theirs = two_project_store(store)
    assert [path.name for path in elsewhere.iterdir()] == ["kept.json"]  # nothing written there
    head = store.head(MINE)
    assert head is not None
    assert [run.run_id for run in head.runs] == theirs[:HEAD_ROWS]
    assert [run.run_id for run in store.read_all().handles] == theirs + mine
