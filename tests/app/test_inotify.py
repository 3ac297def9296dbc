"""Reading inotify's events: entries by name, a lost queue, a directory gone, and a real one."""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from pathlib import Path

import pytest

from x_tui.app import inotify
from x_tui.app.inotify import Inotify, open_inotify

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's inotify")


def _event(number: int, mask: int, name: bytes = b"") -> bytes:
    padded = name + b"\0" * (16 - len(name) % 16) if name else b""
    return struct.pack("iIII", number, mask, 0, len(padded)) + padded


def _fed(events: bytes, tmp_path: Path) -> Inotify:
    """An Inotify reading ``events`` from a pipe, as if the kernel had queued them."""
    notify = open_inotify()
    assert notify is not None
    notify.watch(tmp_path)  # watch number 1
    reader, writer = os.pipe()
    os.set_blocking(reader, False)
    os.write(writer, events)
    os.close(writer)
    os.close(notify._descriptor)
    notify._descriptor = reader
    return notify


def test_named_entries_are_told_by_path(tmp_path: Path) -> None:
    events = _event(1, inotify.IN_CLOSE_WRITE, b"a.json") + _event(
        1, inotify.IN_MOVED_TO, b"b.json"
    )
    notify = _fed(events, tmp_path)
    changes = notify.read()
    notify.close()
    assert changes.paths == {tmp_path / "a.json", tmp_path / "b.json"}
    assert not changes.lost
    assert not changes.gone


def test_an_overflowed_queue_is_lost_and_a_removed_directory_gone(tmp_path: Path) -> None:
    notify = _fed(_event(-1, inotify.IN_Q_OVERFLOW), tmp_path)
    assert notify.read().lost
    notify.close()
    notify = _fed(_event(1, inotify.IN_DELETE_SELF) + _event(1, inotify.IN_IGNORED), tmp_path)
    assert notify.read().gone
    notify.close()


def test_more_changed_entries_than_it_names_are_told_as_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inotify, "MAX_PATHS", 3)
    events = b"".join(_event(1, inotify.IN_CREATE, f"{n}.json".encode()) for n in range(5))
    notify = _fed(events, tmp_path)
    changes = notify.read()
    notify.close()
    assert changes.lost  # the watcher reads the whole store again
    assert changes.paths == frozenset()


def test_a_directory_changing_without_pause_cannot_keep_one_read_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inotify, "MAX_READS", 2)
    monkeypatch.setattr(inotify, "_READ_BYTES", len(_event(1, inotify.IN_CREATE, b"0.json")))
    events = b"".join(_event(1, inotify.IN_CREATE, f"{n}.json".encode()) for n in range(4))
    notify = _fed(events, tmp_path)
    first = notify.read()
    second = notify.read()
    notify.close()
    assert first.paths == {tmp_path / "0.json", tmp_path / "1.json"}
    assert second.paths == {tmp_path / "2.json", tmp_path / "3.json"}  # left queued, not lost


def test_a_real_descriptor_tells_a_file_written_and_nothing_else(tmp_path: Path) -> None:
    notify = open_inotify()
    assert notify is not None
    try:
        notify.watch(tmp_path)
        assert not notify.wait(0)
        (tmp_path / "record.json").write_text("{}", encoding="utf-8")
        assert notify.wait(5)
        assert notify.read().paths == {tmp_path / "record.json"}
        assert not notify.wait(0)
    finally:
        notify.close()


def test_a_missing_directory_cannot_be_watched(tmp_path: Path) -> None:
    notify = open_inotify()
    assert notify is not None
    try:
        with pytest.raises(OSError, match="cannot watch"):
            notify.watch(tmp_path / "missing")
    finally:
        notify.close()


def test_no_inotify_in_the_c_library_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    class Bare:
        def __init__(self, *_: object, **__: object) -> None:
            pass

    monkeypatch.setattr(ctypes, "CDLL", Bare)
    assert open_inotify() is None
