"""The run store: handles saved, loaded and listed, safely, by many processes at once."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
from multiprocessing.queues import Queue
from pathlib import Path

import pytest

from x_tui.compute.store import RunHandle, RunStore, SettingsOrigin, handle_json
from x_tui.compute.worker.errors import BadRecordError, RunNotFoundError

SUBMITTED_AT = dt.datetime(2026, 9, 19, 12, 0, 0, 123456, tzinfo=dt.UTC)


def make_handle(
    run_id: str = "contract-20260919T120000Z-3f9a1c",
    *,
    submitted_at: dt.datetime = SUBMITTED_AT,
    settings: dict[str, object] | None = None,
) -> RunHandle:
    return RunHandle(
        run_id=run_id,
        backend="local",
        job=run_id.rsplit("-", 2)[0],
        project="/home/me/project",
        submitted_at=submitted_at,
        settings={"python": None, "state_dir": "/tmp/state"} if settings is None else settings,
        details={"pid": "48213", "run_dir": f"/tmp/state/compute/local/{run_id}"},
    )


def test_a_saved_handle_loads_back_equal_microseconds_settings_and_details_included(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "runs")
    settings: dict[str, object] = {
        "python": None,
        "nested": {"list": [1, 2.5, "three", True, None], "empty": {}},
        "count": 3,
    }
    handle = make_handle(settings=settings)
    path = store.save(handle)
    assert path == tmp_path / "runs" / "contract-20260919T120000Z-3f9a1c.json"
    loaded = store.load(handle.run_id)
    assert loaded == handle
    assert loaded.submitted_at.microsecond == 123456
    assert loaded.settings == settings
    assert loaded.details == handle.details
    assert RunStore(tmp_path / "runs").read_all().handles == (handle,)


def test_saving_again_replaces_the_handle_and_leaves_no_partial_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.save(make_handle(settings={"round": 1}))
    store.save(make_handle(settings={"round": 2}))
    assert store.load("contract-20260919T120000Z-3f9a1c").settings == {"round": 2}
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "contract-20260919T120000Z-3f9a1c.json"
    ]


def test_a_writer_that_died_mid_write_leaves_the_record_whole(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    handle = make_handle()
    store.save(handle)
    # What a writer killed between writing and renaming leaves: a partial file beside the record.
    text = (tmp_path / f"{handle.run_id}.json").read_text()
    (tmp_path / f".{handle.run_id}.json.x1y2z3.partial").write_text(text[: len(text) // 2])
    stored = store.read_all()
    assert stored.handles == (handle,)
    assert stored.unreadable == {}
    assert store.load(handle.run_id) == handle


def test_read_all_lists_handles_newest_first_and_names_each_unreadable_record(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path)
    first = make_handle("a-20260919T120000Z-000001", submitted_at=SUBMITTED_AT)
    third = make_handle("b-20260919T120000Z-000002", submitted_at=SUBMITTED_AT + dt.timedelta(1))
    second = make_handle(
        "c-20260919T120000Z-000003", submitted_at=SUBMITTED_AT + dt.timedelta(hours=2)
    )
    for handle in (first, third, second):
        store.save(handle)
    good = json.loads((tmp_path / f"{first.run_id}.json").read_text())

    def bad(name: str, text: str) -> Path:
        path = tmp_path / f"{name}-20260919T120000Z-00000f.json"
        path.write_text(text)
        return path

    truncated = bad("truncated", json.dumps(good, indent=2)[:80])
    not_json = bad("notjson", "this is not JSON\n")
    version_1 = bad("one", json.dumps({**good, "schema_version": 1}))
    version_3 = bad("three", json.dumps({**good, "schema_version": 3}))
    wrong_type = bad("typed", json.dumps({**good, "details": {"pid": 48213}}))
    misnamed = bad("misnamed", json.dumps(good))
    stored = store.read_all()
    assert stored.handles == (third, second, first)
    assert set(stored.unreadable) == {
        truncated,
        not_json,
        version_1,
        version_3,
        wrong_type,
        misnamed,
    }
    assert "not JSON" in stored.unreadable[truncated]
    assert "not JSON" in stored.unreadable[not_json]
    assert "a version 1 run handle holds no settings" in stored.unreadable[version_1]
    assert "version 3 is not a version this x-tui reads (1 or 2)" in stored.unreadable[version_3]
    assert "details.pid" in stored.unreadable[wrong_type]
    assert "expected a string, got 48213" in stored.unreadable[wrong_type]
    assert first.run_id in stored.unreadable[misnamed]
    assert "misnamed-20260919T120000Z-00000f" in stored.unreadable[misnamed]


def _substrax_01_handle(run_id: str, project: Path) -> dict[str, object]:
    """A handle exactly as substrax 0.1.22 writes it (no settings, microseconds)."""
    return {
        "schema_version": 1,
        "run_id": run_id,
        "backend": "local",
        "job": "contract",
        "project": str(project),
        "submitted_at": "2026-09-19T12:00:00.123456Z",
        "details": {"pid": "48213", "run_dir": f"/state/compute/local/{run_id}"},
    }


def test_a_substrax_01_handle_takes_the_projects_current_settings(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        '[tool.substrax.compute]\n[tool.substrax.compute.backends.local]\nstate_dir = "/a"\n'
    )
    store = RunStore(tmp_path / "state" / "compute" / "runs")
    run_id = "contract-20260919T120000Z-3f9a1c"
    text = json.dumps(_substrax_01_handle(run_id, project), indent=2) + "\n"
    store.root.mkdir(parents=True)
    (store.root / f"{run_id}.json").write_text(text)
    handle = store.load(run_id)
    assert handle.schema_version == 1
    assert handle.settings == {"state_dir": "/a"}
    assert handle.submitted_at.microsecond == 123456
    assert store.settings_origin(handle) is SettingsOrigin.PROJECT
    assert store.settings_origin(handle).describe() == (
        "settings from the project, as substrax 0.1.x"
    )
    assert [h.run_id for h in store.read_all().handles] == [run_id]
    pyproject.write_text(
        '[tool.substrax.compute]\n[tool.substrax.compute.backends.local]\nstate_dir = "/bb"\n'
    )
    assert store.load(run_id).settings == {"state_dir": "/bb"}  # the project's settings now
    assert handle_json(handle) == text  # written back byte for byte
    pyproject.write_text("[tool.other]\n")
    with pytest.raises(BadRecordError, match=r"settings from the project, as substrax 0\.1\.x"):
        store.load(run_id)
    pyproject.unlink()
    assert store.load(run_id).settings == {}  # no pyproject: an empty configuration


def test_a_version_1_handle_x_tui_writes_keeps_its_settings_in_a_side_record(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.substrax.compute]\n[tool.substrax.compute.backends.local]\nstate_dir = "/now"\n'
    )
    store = RunStore(tmp_path / "state" / "compute" / "runs")
    handle = RunHandle(
        schema_version=1,
        run_id="contract-20260919T120000Z-3f9a1c",
        backend="local",
        job="contract",
        project=str(project),
        submitted_at=dt.datetime(2026, 9, 19, 12, 0, 0, 5, tzinfo=dt.UTC),
        settings={"state_dir": "/frozen"},
        details={"pid": "1", "run_dir": "/r"},
    )
    path = store.save(handle)
    written = json.loads(path.read_text())
    assert list(written) == [
        "schema_version", "run_id", "backend", "job", "project", "submitted_at", "details"
    ]  # fmt: skip
    side = tmp_path / "state" / "x-tui" / "handles" / f"{handle.run_id}.json"
    assert json.loads(side.read_text())["settings"] == {"state_dir": "/frozen"}
    assert store.load(handle.run_id) == handle  # the frozen settings, not the project's
    assert store.settings_origin(handle) is SettingsOrigin.SIDE_RECORD
    side.write_text('{"run_id": "other-20260919T120000Z-3f9a1c", "settings": {}}')
    assert "not x-tui's record" in store.read_all().unreadable[path]
    store.delete(handle.run_id)
    assert not path.exists()
    assert not side.exists()


def test_a_handle_of_an_unknown_version_is_named_unreadable(tmp_path: Path) -> None:
    run_id = "contract-20260919T120000Z-3f9a1c"
    path = tmp_path / f"{run_id}.json"
    path.write_text(json.dumps({**_substrax_01_handle(run_id, tmp_path), "schema_version": 7}))
    with pytest.raises(BadRecordError) as refused:
        RunStore(tmp_path).load(run_id)
    assert str(refused.value) == (
        f"{path}: run handle version 7 is not a version this x-tui reads (1 or 2)"
    )


def test_a_missing_run_names_the_store(tmp_path: Path) -> None:
    with pytest.raises(RunNotFoundError, match=f"no run 'x-20260919T120000Z-abcdef' in {tmp_path}"):
        RunStore(tmp_path).load("x-20260919T120000Z-abcdef")


@pytest.mark.parametrize(
    "run_id",
    [
        "../outside-20260919T120000Z-3f9a1c",
        "a/../../b-20260919T120000Z-3f9a1c",
        "..",
        "/etc/passwd",
    ],
)
def test_a_run_id_that_could_leave_the_store_is_refused(tmp_path: Path, run_id: str) -> None:
    store = RunStore(tmp_path / "runs")
    (tmp_path / "outside-20260919T120000Z-3f9a1c.json").write_text(json.dumps({"secret": True}))
    with pytest.raises(RunNotFoundError, match="is not a run id"):
        store.load(run_id)
    with pytest.raises(ValueError, match="run id"):
        make_handle(run_id)
    assert not (tmp_path / "runs").exists()


ROUNDS = 30
PROCESSES = 8
SHARED = "shared-20260919T120000Z-ffffff"


def hammer(root: str, index: int, failures: Queue[str]) -> None:
    """Save handles of one's own and of one shared run, reading the whole store every time."""
    store = RunStore(Path(root))
    try:
        for round_ in range(ROUNDS):
            own = make_handle(
                f"p{index}-20260919T120000Z-{index:02x}{round_:04x}",
                settings={"writer": index, "round": round_, "padding": "x" * 2000},
            )
            store.save(own)
            store.save(
                make_handle(SHARED, settings={"writer": index, "round": round_, "pad": "y" * 4000})
            )
            stored = store.read_all()
            if stored.unreadable:
                failures.put(f"writer {index} round {round_}: unreadable {dict(stored.unreadable)}")
            if own not in stored.handles:
                failures.put(f"writer {index} round {round_}: its own handle is missing")
            shared = store.load(SHARED)
            if set(shared.settings) != {"writer", "round", "pad"}:
                failures.put(f"writer {index} round {round_}: shared handle {shared.settings}")
    except Exception as error:  # reported to the test, which fails on it
        failures.put(f"writer {index}: {type(error).__name__}: {error}")


def test_eight_processes_writing_and_reading_at_once_never_tear_or_lose_a_record(
    tmp_path: Path,
) -> None:
    context = multiprocessing.get_context("fork")
    failures: Queue[str] = context.Queue()
    writers = [
        context.Process(target=hammer, args=(str(tmp_path), index, failures))
        for index in range(PROCESSES)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert [writer.exitcode for writer in writers] == [0] * PROCESSES
    reported = []
    while not failures.empty():
        reported.append(failures.get())
    assert reported == []
    stored = RunStore(tmp_path).read_all()
    assert stored.unreadable == {}
    assert len(stored.handles) == PROCESSES * ROUNDS + 1
    assert sorted(path.name for path in tmp_path.iterdir() if not path.name.endswith(".json")) == []


def test_a_substrax_01_handle_naming_an_enormous_pyproject_is_named_not_read(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with (project / "pyproject.toml").open("wb") as file:
        file.truncate(5 << 20)  # sparse: 5 MiB of nothing
    store = RunStore(tmp_path / "runs")
    run_id = "contract-20260919T120000Z-3f9a1c"
    store.root.mkdir()
    path = store.root / f"{run_id}.json"
    path.write_text(json.dumps(_substrax_01_handle(run_id, project)))
    stored = store.read_all()
    assert stored.handles == ()
    assert "is over 4194304 bytes" in stored.unreadable[path]
