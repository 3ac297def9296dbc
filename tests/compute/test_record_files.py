"""The one bounded reader of records: what it refuses, and that nothing it meets can stop it.

Each read runs on a thread the test waits for with a deadline, so a reader that blocked (on a
FIFO, a device) fails the test instead of hanging it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from x_tui.compute.store import RunHandle, RunStore, StoredRuns
from x_tui.compute.worker.errors import BadRecordError, RunNotFoundError
from x_tui.compute.worker.manifest import load_manifest, parse_manifest
from x_tui.compute.worker.record_files import (
    HANDLE_BYTES,
    MAX_DEPTH,
    MAX_REASON,
    UnreadableRecordError,
    parse_json,
    read_json_file,
    read_regular_file,
)
from x_tui.compute.worker.records import RecordError, dumps_pretty

DEADLINE = 30.0
"""Seconds a read may take before the test calls it hung (a bound read takes milliseconds)."""

RUN_ID = "train-20260919T120000Z-3f9a1c"


def within_deadline(read: Callable[[], object]) -> object:
    """What ``read()`` returns or raises, failing the test if it does not end in time."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(read())
        except BaseException as error:  # handed to the test's thread
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert not thread.is_alive(), "the read did not end: something stopped the reader"
    return outcome[0]


def refusal(path: Path, max_bytes: int = HANDLE_BYTES) -> str:
    """Why ``path`` is refused (the test fails if it is read)."""
    outcome = within_deadline(lambda: read_json_file(path, max_bytes=max_bytes))
    assert isinstance(outcome, UnreadableRecordError), f"{path} was read: {outcome!r}"
    return str(outcome)


def handle(run_id: str = RUN_ID) -> RunHandle:
    return RunHandle(
        run_id=run_id,
        backend="local",
        job=run_id.rsplit("-", 2)[0],
        project="/home/me/project",
        submitted_at=dt.datetime(2026, 9, 19, 12, tzinfo=dt.UTC),
        settings={"python": None, "state_dir": None},
        details={"pid": "48213", "run_dir": f"/tmp/state/compute/local/{run_id}"},
    )


def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    os.mkfifo(path)
    assert refusal(path) == "is a FIFO, not a regular file"


def test_a_fifo_with_a_writer_that_never_stops_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    os.mkfifo(path)
    writer = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # holds the FIFO open for writing
    try:
        os.write(writer, b'{"endless": "')
        assert refusal(path) == "is a FIFO, not a regular file"
    finally:
        os.close(writer)


def test_a_socket_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a socket's path must be short
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("x.json")
    try:
        assert refusal(tmp_path / "x.json") == "is a socket, not a regular file"
    finally:
        listener.close()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_link_to_a_device_is_not_followed(tmp_path: Path, device: str) -> None:
    path = tmp_path / "x.json"
    path.symlink_to(device)
    assert "symbolic link" in refusal(path)


def test_a_link_to_a_good_record_a_dangling_link_and_a_link_to_a_directory_are_refused(
    tmp_path: Path,
) -> None:
    good = tmp_path / "elsewhere.json"
    good.write_text("{}")
    for name, target in (("a", good), ("b", tmp_path / "missing"), ("c", tmp_path)):
        link = tmp_path / f"{name}.json"
        link.symlink_to(target)
        assert "symbolic link" in refusal(link)


def test_a_directory_named_like_a_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.mkdir()
    assert refusal(path) == "is a directory, not a regular file"


def test_a_missing_file_is_not_found_not_unreadable(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing.json", max_bytes=10)


def test_a_100_mb_sparse_file_is_refused_by_its_size_without_being_read(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    with path.open("wb") as out:
        out.truncate(100 << 20)
    assert (
        refusal(path) == f"is {100 << 20} bytes, larger than the {HANDLE_BYTES} a record may hold"
    )


def test_a_file_that_reports_no_size_is_still_read_only_up_to_the_cap() -> None:
    # /proc files report a size of 0 whatever they hold.
    outcome = within_deadline(lambda: read_regular_file(Path("/proc/self/maps"), max_bytes=16))
    assert isinstance(outcome, UnreadableRecordError)
    assert "more than 16 bytes" in str(outcome)


def test_a_read_past_its_time_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}")
    with pytest.raises(UnreadableRecordError, match="took longer than"):
        read_regular_file(path, max_bytes=100, seconds=-1.0)


def test_json_nested_100000_deep_is_refused_without_recursion() -> None:
    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 100_000, "[" * 100_000):
        outcome = within_deadline(lambda text=text: parse_json(text, max_bytes=1 << 20))
        assert isinstance(outcome, UnreadableRecordError)
        assert str(outcome) == f"nested deeper than {MAX_DEPTH} levels"


def test_the_depth_cap_is_exact_and_brackets_inside_strings_do_not_count() -> None:
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, max_bytes=1000) is not None
    with pytest.raises(UnreadableRecordError, match="nested deeper"):
        parse_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), max_bytes=1000)
    quoted = json.dumps(["[" * 1000, '\\"{' * 1000, "]"])
    assert parse_json(quoted, max_bytes=1 << 20) == ["[" * 1000, '\\"{' * 1000, "]"]


def test_a_truncated_record_is_not_json_not_too_deep() -> None:
    with pytest.raises(UnreadableRecordError, match=r"not JSON \(Expecting"):
        parse_json('{"a": [1, {"b": [2', max_bytes=1000)


def test_a_record_of_countless_tiny_containers_is_refused_before_it_is_built() -> None:
    text = "[" + "[]," * 1_000_000 + "[]]"
    with pytest.raises(UnreadableRecordError, match="arrays and objects"):
        parse_json(text, max_bytes=len(text))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"a": "\xff"}', "not UTF-8 text (byte 0xff at offset 7)"),
        ('{"a": 1}'.encode("utf-16"), "not UTF-8 text (byte 0xff at offset 0)"),
        ('{"a": 1}'.encode("utf-32"), "not UTF-8 text (byte 0xff at offset 0)"),
        (b"\xef\xbb\xbf{}", "not JSON (Unexpected UTF-8 BOM"),
        (b'{"a":\x00 1}', "not JSON (Expecting value"),
        (b"", "not JSON (Expecting value"),
        (b"NaN NaN", "not JSON (Extra data"),
    ],
)
def test_text_that_is_not_utf8_json_is_named(data: bytes, reason: str) -> None:
    with pytest.raises(UnreadableRecordError) as refused:
        parse_json(data, max_bytes=1000)
    assert str(refused.value).startswith(reason)


def test_a_handle_filed_under_another_runs_name_is_never_loaded_as_either(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "runs")
    store.save(handle())
    other = "other-20260919T120000Z-000001"
    (store.root / f"{other}.json").write_text(dumps_pretty(handle()))
    with pytest.raises(BadRecordError, match="filed under another run's name"):
        store.load(other)
    assert store.load(RUN_ID) == handle()


def test_copies_of_a_handle_never_hide_or_replace_it(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    store.save(handle())
    text = dumps_pretty(handle())
    for name in (f"{RUN_ID} (copy).json", "other-20260919T120000Z-000001.json", "zz.json"):
        (store.root / name).write_text(text)
    stored = store.read_all()
    assert stored.handles == (handle(),)
    assert sorted(path.name for path in stored.unreadable) == sorted(
        [f"{RUN_ID} (copy).json", "other-20260919T120000Z-000001.json", "zz.json"]
    )
    assert (
        "filed under another run's name"
        in stored.unreadable[store.root / "other-20260919T120000Z-000001.json"]
    )
    assert "is not a run id" in stored.unreadable[store.root / "zz.json"]


def test_a_fifo_in_place_of_a_handle_is_named_and_the_other_runs_are_listed(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "runs")
    store.save(handle())
    fifo = store.root / "bad-20260919T120000Z-000002.json"
    os.mkfifo(fifo)
    stored = within_deadline(store.read_all)
    assert isinstance(stored, StoredRuns)
    assert stored.handles == (handle(),)
    assert stored.unreadable == {fifo: "is a FIFO, not a regular file"}
    with pytest.raises(BadRecordError, match="is a FIFO"):
        store.load("bad-20260919T120000Z-000002")
    with pytest.raises(RunNotFoundError):
        store.load("gone-20260919T120000Z-000003")


def test_a_reason_quoting_a_huge_value_is_kept_to_a_line(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    data = json.loads(dumps_pretty(handle()))
    data["run_id"] = "r" * 500_000
    (store.root).mkdir(parents=True)
    (store.root / f"{RUN_ID}.json").write_text(json.dumps(data))
    [reason] = store.read_all().unreadable.values()
    assert len(reason) <= MAX_REASON
    assert reason.startswith("run id 'rrrr")


def test_a_manifest_replaced_by_a_fifo_a_directory_or_a_link_is_refused_at_once(
    tmp_path: Path,
) -> None:
    fifo, directory, link = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    os.mkfifo(fifo)
    directory.mkdir()
    link.symlink_to("/dev/zero")
    for path, reason in ((fifo, "FIFO"), (directory, "directory"), (link, "symbolic link")):
        outcome = within_deadline(lambda path=path: load_manifest(path))
        assert isinstance(outcome, RecordError)
        assert str(outcome).startswith(f"{path}: ")
        assert reason in str(outcome)
    assert load_manifest(tmp_path / "none.json") is None


def test_a_manifest_peeked_from_elsewhere_is_parsed_within_the_same_bounds() -> None:
    with pytest.raises(RecordError, match=r"^remote: nested deeper"):
        parse_manifest(b"[" * 100_000, source="remote")
