"""The run store's index: listing from it, never believing it over the store, never hurt by it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.compute.store_support import handle, settle, substrax_save
from tests.support import read_index_document
from x_tui.compute import store_index
from x_tui.compute.store import RunHandle, RunStore, handle_json
from x_tui.compute.store_index import INDEX_NAME, index_text


def count_reads(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record each handle file the store reads from disk (not from its index)."""
    read: list[Path] = []
    real = store._read_fields

    def counting(path: Path) -> object:
        read.append(path)
        return real(path)

    monkeypatch.setattr(store, "_read_fields", counting)
    return read


def test_a_settled_store_lists_from_its_index_without_reading_a_handle(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [handle(index) for index in range(5)]
    for run in runs:
        store.save(run)
    settle(store)
    first = store.read_all()
    assert first.handles == tuple(reversed(runs))
    assert (store.root.parent.parent / "x-tui" / INDEX_NAME).is_file()
    read = count_reads(store, monkeypatch)
    again = RunStore(store.root)
    monkeypatch.setattr(again, "_read_fields", store._read_fields)
    assert again.read_all() == first
    assert read == []


def test_runs_saved_replaced_and_removed_after_the_index_was_made_are_seen(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(3):
        store.save(handle(index))
    settle(store)
    store.read_all()
    read = count_reads(store, monkeypatch)
    store.save(handle(3))  # by x-tui
    substrax_save(store, handle(4, job="other"))  # by substrax, which knows no index
    replaced = RunHandle(**{**_fields(handle(1)), "details": {"pid": "7", "run_dir": "/r"}})
    substrax_save(store, replaced)
    store.delete(handle(0).run_id)
    listed = store.read_all()
    assert [run.run_id for run in listed.handles] == [
        handle(4, job="other").run_id,
        handle(3).run_id,
        handle(2).run_id,
        handle(1).run_id,
    ]
    assert listed.handles[3].details == {"pid": "7", "run_dir": "/r"}
    # Only the files that changed were read again.
    assert sorted(path.stem for path in read) == sorted(
        [handle(3).run_id, handle(4, job="other").run_id, handle(1).run_id]
    )


def test_a_handle_rewritten_in_place_while_the_directory_is_fresh_is_read_again(
    store: RunStore,
) -> None:
    store.save(handle(0))
    store.read_all()  # the directory changed just now: the index is not believed on its own
    path = store.path_of(handle(0).run_id)
    data = json.loads(path.read_text())
    data["job"] = "renamed"
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert store.read_all().handles[0].job == "renamed"


def test_an_unreadable_record_keeps_its_reason_and_is_read_once_it_is_mended(
    store: RunStore,
) -> None:
    run = handle(0)
    path = store.path_of(run.run_id)
    path.write_text("{not json")
    (store.root / "notes.json").write_text("{}")
    first = store.read_all()
    assert first.handles == ()
    assert set(first.unreadable) == {path, store.root / "notes.json"}
    assert "not JSON" in first.unreadable[path]
    settle(store)
    assert store.read_all().unreadable == first.unreadable
    store.save(run)
    mended = store.read_all()
    assert mended.handles == (run,)
    assert set(mended.unreadable) == {store.root / "notes.json"}


HOSTILE_INDEXES = {
    "garbage": b"\x00\xff not json",
    "deep": b"[" * 100_000,
    "wrong version": json.dumps({"version": 99}).encode(),
    "column of the wrong type": None,  # made from a real index below
    "column of the wrong length": None,
    "run id not its file's": None,
    "a file named twice": None,
    "name leaving the directory": None,
    "time that is not a time": None,
    "details out of step": None,
    "rows out of order": None,
}


@pytest.mark.parametrize("trusted", [True, False], ids=["names-trusted", "files-looked-at"])
@pytest.mark.parametrize("damage", sorted(HOSTILE_INDEXES))
def test_a_damaged_index_never_changes_what_the_store_lists(
    store: RunStore, damage: str, trusted: bool
) -> None:
    runs = [handle(index) for index in range(3)]
    for run in runs:
        store.save(run)
    settle(store)
    truth = store.read_all()  # the index now says the settled directory holds these files
    index_path = store.index_path
    content = HOSTILE_INDEXES[damage]
    if content is None:
        data = read_index_document(index_path)
        damaged = {
            "column of the wrong type": ("versions", 0, "2"),
            "run id not its file's": ("names", 0, f"{runs[1].run_id}.json"),
            "a file named twice": ("names", 0, data["names"][1]),
            "name leaving the directory": ("names", 0, "../../escape.json"),
            "time that is not a time": ("submitted", 1, "yesterday"),
            "details out of step": ("detail_starts", 1, 1),
        }
        if damage == "column of the wrong length":
            data["jobs"].append("train")
        elif damage == "rows out of order":
            reverse_rows(data)
        else:
            column, row, value = damaged[damage]
            data[column][row] = value
        content = index_text(data).encode()
    index_path.write_bytes(content)
    if not trusted:
        settle(store)
    assert store.read_all() == truth
    assert store.read_all() == truth  # and the index made again holds the truth


def test_a_fifo_or_a_directory_in_the_index_place_is_read_as_no_index(store: RunStore) -> None:
    store.save(handle(0))
    store.index_path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(store.index_path)
    settle(store)
    assert store.read_all().handles == (handle(0),)  # a FIFO is refused, never blocks
    store.index_path.unlink()
    store.index_path.mkdir()
    assert store.read_all().handles == (handle(0),)  # and one that cannot be written is no error


def test_a_tampered_entry_is_refused_field_by_field(store: RunStore) -> None:
    store.save(handle(0))
    settle(store)
    store.read_all()
    data = read_index_document(store.index_path)
    data["settings"][0] = "[1, 2]"  # settings that are not an object
    store.index_path.write_text(index_text(data))
    settle(store)
    assert store.read_all().handles == (handle(0),)


def reverse_rows(data: dict[str, list[object]]) -> None:
    """Put an index's rows in the opposite order, each row kept whole."""
    count = len(data["names"])
    starts = data["detail_starts"]
    details = [data["details"][starts[row] : starts[row + 1]] for row in range(count)]  # type: ignore[index]
    stamps = [data["stamps"][3 * row : 3 * row + 3] for row in range(count)]
    for name in ("names", "reasons", "versions", "backends", "jobs", "projects", "submitted"):
        data[name].reverse()
    data["settings"].reverse()
    data["details"] = [text for row in reversed(details) for text in row]
    data["stamps"] = [value for row in reversed(stamps) for value in row]
    lengths = [len(row) for row in reversed(details)]
    data["detail_starts"] = [sum(lengths[:row]) for row in range(count + 1)]


def _fields(run: RunHandle) -> dict[str, object]:
    return {name: getattr(run, name) for name in RunHandle.__dataclass_fields__}


def test_listed_version_1_handles_say_where_their_settings_come_from(tmp_path: Path) -> None:
    from x_tui.compute.store import SettingsOrigin

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.substrax.compute]\nbackend = "local"\n\n'
        '[tool.substrax.compute.backends.local]\npython = "/usr/bin/python3"\n'
    )
    runs = tmp_path / "state" / "compute" / "runs"
    store = RunStore(runs)
    by_x_tui = RunHandle(**{**_fields(handle(0)), "schema_version": 1, "project": str(project)})
    store.save(by_x_tui)  # its settings go to a side record
    runs.mkdir(parents=True, exist_ok=True)
    by_substrax = RunHandle(
        **{**_fields(handle(1)), "schema_version": 1, "project": str(project), "settings": {}}
    )
    substrax_save(store, by_substrax)  # no side record: the project's settings now
    listed = {run.run_id: run for run in store.read_all().handles}
    x_tui_run, substrax_run = listed[by_x_tui.run_id], listed[by_substrax.run_id]
    assert x_tui_run.settings == by_x_tui.settings
    assert store.settings_origin(x_tui_run) is SettingsOrigin.SIDE_RECORD
    assert substrax_run.settings == {"python": "/usr/bin/python3"}
    assert store.settings_origin(substrax_run) is SettingsOrigin.PROJECT
    store.side_record_of(by_x_tui.run_id).unlink()  # asked again of a handle it did not list
    assert store.settings_origin(by_x_tui) is SettingsOrigin.PROJECT


def _slow_fields(data: object) -> tuple[object, ...]:
    """What the generic record reader makes of a handle, as the index keeps it."""
    from x_tui.compute.store import read_handle
    from x_tui.compute.worker.records import format_datetime

    run = read_handle(data)
    return (
        run.schema_version,
        run.run_id,
        run.backend,
        run.job,
        run.project,
        format_datetime(run.submitted_at),
        dict(run.settings),
        dict(run.details),
    )


def _variants() -> list[object]:
    good = json.loads(handle_json(handle(0)))
    version_1 = {key: value for key, value in good.items() if key != "settings"}
    version_1["schema_version"] = 1
    changes: list[tuple[str, object]] = [
        ("schema_version", True),
        ("schema_version", 3),
        ("schema_version", "2"),
        ("run_id", "not a run id"),
        ("run_id", 7),
        ("backend", None),
        ("submitted_at", "yesterday"),
        ("submitted_at", "2026-09-19T12:00:00"),
        ("submitted_at", "2026-09-19T14:00:00+02:00"),
        ("settings", [1]),
        ("settings", {"deep": {"list": [1, None, "x"]}}),
        ("details", {"pid": 7}),
        ("details", []),
        ("unknown", 1),
    ]
    variants: list[object] = [good, version_1, [], "handle", None]
    variants += [{**good, key: value} for key, value in changes]
    variants += [{**version_1, "settings": {}}, {k: v for k, v in good.items() if k != "job"}]
    variants += [{k: v for k, v in good.items() if k not in ("settings", "details")}]
    return variants


@pytest.mark.parametrize("data", _variants())
def test_a_handle_is_read_for_the_index_as_the_record_reader_reads_it(data: object) -> None:
    from x_tui.compute.store import handle_fields
    from x_tui.compute.worker.records import RecordError

    def outcome(read: Callable[[object], tuple[object, ...]]) -> object:
        try:
            return tuple(read(data))
        except RecordError as error:
            return f"refused: {error}"

    assert outcome(handle_fields) == outcome(_slow_fields)


def test_substrax_runs_of_a_project_that_cannot_be_read_are_named_the_others_listed(
    tmp_path: Path,
) -> None:
    from x_tui.compute.store import SettingsOrigin

    good, broken = tmp_path / "good", tmp_path / "broken"
    for project in (good, broken):
        project.mkdir()
    (good / "pyproject.toml").write_text(
        '[tool.substrax.compute]\n\n[tool.substrax.compute.backends.local]\npython = "/p"\n'
    )
    (broken / "pyproject.toml").write_text("[tool.other]\n")
    store = RunStore(tmp_path / "state" / "compute" / "runs")
    store.root.mkdir(parents=True)
    runs = [
        RunHandle(
            **{
                **_fields(handle(index)),
                "schema_version": 1,
                "project": str(good if index % 2 else broken),
                "settings": {},
            }
        )
        for index in range(4)
    ]
    for run in runs:
        substrax_save(store, run)
    settle(store)
    for _ in range(2):  # from the files, then from the index
        listing = store.listing()
        assert [(run.run_id, run.origin) for run in listing.runs] == [
            (runs[3].run_id, SettingsOrigin.PROJECT),
            (runs[1].run_id, SettingsOrigin.PROJECT),
        ]
        assert listing.handle(listing.runs[0]).settings == {"python": "/p"}
        unreadable = listing.unreadable
        assert sorted(unreadable) == sorted(store.path_of(runs[i].run_id) for i in (0, 2))
        assert all("settings from the project" in why for why in unreadable.values())


def test_runs_saved_among_the_indexed_ones_are_listed_in_their_places(store: RunStore) -> None:
    for index in range(0, 20, 2):
        store.save(handle(index))
    settle(store)
    store.read_all()
    for index in (-1, 5, 11, 25):  # older than all, between, newer than all
        substrax_save(store, handle(index) if index >= 0 else handle(0, job="early"))
    (store.root / "zz-notes.json").write_text("{}")  # an unreadable file, listed last
    (store.root / "aa-notes.json").write_text("{}")
    listed = store.read_all()
    store.index_path.unlink()
    truth = RunStore(store.root).read_all()
    assert listed == truth
    assert listed.handles[0].run_id == handle(25).run_id
    assert list(listed.unreadable) == [store.root / "aa-notes.json", store.root / "zz-notes.json"]
    assert RunStore(store.root).read_all() == truth  # and from the index written just now


def test_the_index_is_written_a_few_values_a_line_and_read_back_whole(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One parse of a 27 MB index held every other thread, the app's included, some 130-200 ms.
    monkeypatch.setattr(store_index, "INDEX_CHUNK", 2)
    runs = [handle(index) for index in range(5)]
    for run in runs:
        store.save(run)
    settle(store)
    first = store.read_all()
    lines = [json.loads(line) for line in store.index_path.read_text().splitlines()]
    assert lines[0]["version"] == store_index.INDEX_VERSION
    names = [line[1] for line in lines[1:] if line[0] == "names"]
    assert [len(chunk) for chunk in names] == [2, 2, 1]
    read = count_reads(store, monkeypatch)
    again = RunStore(store.root)
    monkeypatch.setattr(again, "_read_fields", store._read_fields)
    assert again.read_all() == first
    assert read == []  # every run from the index


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [["names", []]],
        [{"version": 3}, {"names": []}],
        [{"version": 3}, ["extra", [1]]],
        [{"version": 3}, ["names", "a.json"]],
        [{"version": 3}, ["names", [], "more"]],
        [{"version": 3, "names": 7}, ["names", ["a.json"]]],
    ],
    ids=[
        "no line",
        "no fields",
        "a line that is no column",
        "a column no index has",
        "values that are no list",
        "a line of three",
        "fields that hold a column",
    ],
)
def test_an_index_line_that_is_not_a_columns_values_is_refused(lines: list[object]) -> None:
    assert store_index.joined_document(lines) is None
