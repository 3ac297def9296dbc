"""The store watcher on real directories: each kind of change is told, through inotify (Linux)
and through watchfiles (elsewhere) alike, and it stops when asked."""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import DEADLINE
from x_tui.app import file_watch
from x_tui.app.file_watch import Watched, watch
from x_tui.app.inotify import Inotify, Interrupt
from x_tui.app.run_records import stamp_of


@dataclass
class Watch:
    """A watch running on its own thread, and what it told, in order."""

    root: Path
    told: queue.Queue[tuple[str, object]]
    stop: threading.Event
    thread: threading.Thread
    history: list[tuple[str, object]]

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def pyproject(self) -> Path:
        return self.root / "project" / "pyproject.toml"

    def next(self, wanted: Callable[[tuple[str, object]], bool], what: str) -> tuple[str, object]:
        """Wait for the next thing told that is ``wanted``."""
        seen = []
        while True:
            try:
                item = self.told.get(timeout=DEADLINE)
            except queue.Empty:
                raise AssertionError(f"the watch never told {what}; it told {seen}") from None
            seen.append(item)
            self.history.append(item)
            if wanted(item):
                return item


def _start(root: Path, *, edited_before: bool = False) -> Watch:
    for name in ("runs", "sweeps", "project"):
        (root / name).mkdir(exist_ok=True)
    pyproject = root / "project" / "pyproject.toml"
    pyproject.write_text("[project]\n", encoding="utf-8")
    stamp = stamp_of(pyproject)
    if edited_before:
        pyproject.write_text("[project]\nname = 'edited'\n", encoding="utf-8")
        os.utime(pyproject, ns=(0, 1))  # a stamp of its own, however coarse the clock
    told: queue.Queue[tuple[str, object]] = queue.Queue()
    watched = Watched(
        runs_dir=root / "runs",
        sweeps_dir=root / "sweeps",
        pyproject=pyproject,
        runs_changed=lambda paths: told.put(("runs", None if paths is None else set(paths))),
        sweeps_changed=lambda: told.put(("sweeps", None)),
        project_changed=lambda: told.put(("project", None)),
        pyproject_stamp=stamp,
    )
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=(watched, stop), daemon=True)
    thread.start()
    return Watch(root, told, stop, thread, [])


@pytest.fixture(params=["inotify", "watchfiles"])
def started(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Watch]]:
    if request.param == "inotify" and not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    if request.param == "watchfiles":
        monkeypatch.setattr(file_watch, "open_inotify", lambda: None)
    watches: list[Watch] = []

    def start(**options: bool) -> Watch:
        running = _start(tmp_path, **options)
        watches.append(running)
        # Everything is read once after the first quiet spell: from then on the watch is on.
        running.next(lambda item: item == ("runs", None), "the first quiet read")
        return running

    yield start
    for running in watches:
        running.stop.set()
        running.thread.join(DEADLINE)
        assert not running.thread.is_alive(), "the watch did not stop"


def _runs_told(paths: set[Path]) -> Callable[[tuple[str, object]], bool]:
    return lambda item: item[0] == "runs" and isinstance(item[1], set) and paths <= item[1]


def test_saved_replaced_and_deleted_records_are_told_by_name(started: Callable[..., Watch]) -> None:
    running = started()
    record = running.runs / "train-20260919T120000Z-aaaaaa.json"
    record.write_text("{}", encoding="utf-8")
    running.next(_runs_told({record}), "the saved record")

    temporary = running.runs / ".train-20260919T120000Z-aaaaaa.json.tmp"
    temporary.write_text('{"a": 1}', encoding="utf-8")
    os.replace(temporary, record)  # as the store saves
    running.next(_runs_told({record}), "the record renamed over")

    record.unlink()
    running.next(_runs_told({record}), "the deleted record")


def test_sweep_records_and_the_pyproject_are_told(started: Callable[..., Watch]) -> None:
    running = started()
    (running.root / "sweeps" / "lr.json").write_text("{}", encoding="utf-8")
    running.next(lambda item: item[0] == "sweeps", "the sweep record")
    running.pyproject.write_text("[project]\nname = 'x'\n", encoding="utf-8")
    running.next(lambda item: item[0] == "project", "the edited pyproject")


def test_a_pyproject_edited_before_the_watch_began_is_told(started: Callable[..., Watch]) -> None:
    running = started(edited_before=True)
    if ("project", None) not in running.history:  # told before the first quiet read, or after
        running.next(lambda item: item[0] == "project", "the edit made before the watch")


def test_a_removed_store_directory_is_read_again_by_polling(
    started: Callable[..., Watch], monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["started"] == "watchfiles":
        pytest.skip("watchfiles does not say that a watched directory went away")
    monkeypatch.setattr(file_watch, "POLL_SECONDS", 0.1)
    running = started()
    os.rename(running.runs, running.root / "runs-moved")
    running.runs.mkdir()
    record = running.runs / "late-20260919T120000Z-bbbbbb.json"
    record.write_text("{}", encoding="utf-8")
    # The new directory is not watched by name: it is read whole, again and again.
    running.next(lambda item: item == ("runs", None), "a read of the whole store")
    running.next(lambda item: item == ("runs", None), "another read of the whole store")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_an_interrupted_watch_sleeps_until_a_change_and_stops_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without an interrupt it would wake each STOP_SECONDS to see whether to stop.
    monkeypatch.setattr(file_watch, "STOP_SECONDS", 1000.0)
    monkeypatch.setattr(file_watch, "FIRST_QUIET_SECONDS", 0.05)
    waits: list[float | None] = []
    real_wait = Inotify.wait

    def counted(
        self: Inotify, seconds: float | None, *, interrupt: Interrupt | None = None
    ) -> bool:
        waits.append(seconds)
        return real_wait(self, seconds, interrupt=interrupt)

    monkeypatch.setattr(Inotify, "wait", counted)
    for name in ("runs", "sweeps", "project"):
        (tmp_path / name).mkdir()
    told: queue.Queue[tuple[str, object]] = queue.Queue()
    watched = Watched(
        runs_dir=tmp_path / "runs",
        sweeps_dir=tmp_path / "sweeps",
        pyproject=None,
        runs_changed=lambda paths: told.put(("runs", None if paths is None else set(paths))),
        sweeps_changed=lambda: None,
        project_changed=lambda: None,
    )
    stop, interrupt = threading.Event(), Interrupt()
    thread = threading.Thread(
        target=watch, args=(watched, stop), kwargs={"interrupt": interrupt}, daemon=True
    )
    thread.start()
    try:
        assert told.get(timeout=DEADLINE) == ("runs", None)  # the first quiet read
        record = tmp_path / "runs" / "r.json"
        record.write_text("{}", encoding="utf-8")
        item = told.get(timeout=DEADLINE)
        assert item == ("runs", {record})
        # Asleep with no deadline between changes: neither the time nor a stop check wakes it.
        assert None in waits
        assert 1000.0 not in waits
    finally:
        stop.set()
        interrupt.set()
        thread.join(DEADLINE)
        interrupt.close()
    assert not thread.is_alive(), "the interrupted watch did not stop"
