"""The runs table's progress reader follows a local run's side files: a file that did not change
is not opened, a grown one is read from where the last read stopped, and what it shows is what a
whole read of the files shows, whatever happens to them (rewritten, renamed over, truncated,
half-written, damaged, turned into a link, removed)."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from x_tui.app.run_watch import RunWatch, WatchPoller
from x_tui.app.service import Service
from x_tui.compute import output_lines
from x_tui.compute.outputs import read_output
from x_tui.compute.run_health import flags_of
from x_tui.compute.store import RunHandle
from x_tui.compute.telemetry_read import read_metrics, read_telemetry
from x_tui.compute.worker.log_metrics import METRICS_NAME
from x_tui.compute.worker.telemetry import TELEMETRY_NAME

from .app_support import save_handle

NOW = dt.datetime(2026, 9, 19, 12, 0, tzinfo=dt.UTC)
RUN_ID = "train-20260919T120000Z-aaaaaa"
T0 = NOW.timestamp()


def _line(value: dict[str, object]) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def _header() -> str:
    return _line({"x_tui_telemetry": 1, "interval": 5.0, "stall_seconds": 30.0, "started": T0})


def _sample(i: int, util: int) -> str:
    gpus = [[0, util, 1000 + i, 81559, 100.0, 40], [1, util // 2, 900, 81559, 90.0, 41]]
    return _line({"t": T0 + 5 * i, "gpus": gpus, "cpu": 50.0, "rss_mib": 100 + i, "procs": 1})


def _bar(n: int) -> str:
    return _line(
        {"t": T0 + n, "task": "train", "progress": {"n": n, "total": 40, "percent": n * 2.5}}
    )


def _local_run(state_dir: Path, tmp_path: Path) -> tuple[RunHandle, Path]:
    handle = save_handle(state_dir, run_id=RUN_ID, job="train", submitted_at=NOW)
    run_dir = tmp_path / "run"
    outputs = run_dir / "outputs"
    outputs.mkdir(parents=True)
    return replace(handle, details={"pid": "999999999", "run_dir": str(run_dir)}), outputs


def _whole_read(outputs: Path, now: float) -> RunWatch:
    """What the files show read whole, as every other reader reads them."""

    def data(name: str) -> bytes | None:
        try:
            return read_output(outputs, name)
        except (OSError, ValueError):
            return None

    telemetry = read_telemetry(data(TELEMETRY_NAME))
    progress = read_metrics(data(METRICS_NAME)).progress
    return RunWatch(
        progress=progress.text() if progress is not None else None,
        gpu_percent=telemetry.mean_utilization() if telemetry is not None else None,
        cost_usd=None,  # the local backend bills nothing
        flags=tuple(flag.reason for flag in flags_of(telemetry, now=now)),
    )


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


def _rename_over(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _rewrite_in_place(path: Path, text: str) -> None:
    """The same inode, written over from its first byte (and a newer modification time)."""
    with path.open("r+", encoding="utf-8") as file:
        file.write(text)
        file.truncate()
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))


def test_followed_side_files_show_what_a_whole_read_shows(state_dir: Path, tmp_path: Path) -> None:
    handle, outputs = _local_run(state_dir, tmp_path)
    telemetry, metrics = outputs / TELEMETRY_NAME, outputs / METRICS_NAME
    samples = [_sample(i, util=(i * 37) % 100) for i in range(40)]
    steps: list[tuple[str, Callable[[], object]]] = [
        ("neither file written yet", lambda: None),
        (
            "headers",
            lambda: (
                telemetry.write_text(_header()),
                metrics.write_text(_line({"x_tui_metrics": 1})),
            ),
        ),
        (
            "samples and a bar appended",
            lambda: (_append(telemetry, "".join(samples[:3])), _append(metrics, _bar(4))),
        ),
        ("a sample half-written", lambda: _append(telemetry, samples[3][:20])),
        (
            "the sample finished, more after it",
            lambda: _append(telemetry, samples[3][20:] + samples[4]),
        ),
        ("a bar half-written", lambda: _append(metrics, _bar(8)[:-1])),
        ("the bar's newline", lambda: _append(metrics, "\n")),
        (
            "damaged lines",
            lambda: (
                _append(telemetry, "{not json\n[1, 2]\n" + samples[5]),
                _append(metrics, "\x00\x01\n"),
            ),
        ),
        (
            "the devices named",
            lambda: _append(telemetry, _line({"devices": [[0, "H100"], [1, "H100"]]})),
        ),
        ("many samples", lambda: _append(telemetry, "".join(samples[6:30]))),
        (
            "thinned and renamed over",
            lambda: _rename_over(telemetry, _header() + "".join(samples[:30:2])),
        ),
        ("appended after the rename", lambda: _append(telemetry, "".join(samples[30:33]))),
        (
            "rewritten in place, same size",
            lambda: _rewrite_in_place(
                metrics, metrics.read_text().replace('"n":8', '"n":9').replace("20.0", "22.5")
            ),
        ),
        (
            "rewritten in place, larger",
            lambda: _rewrite_in_place(metrics, metrics.read_text() + _bar(12) + _bar(16)),
        ),
        ("truncated", lambda: telemetry.write_text("")),
        (
            "a new header and samples",
            lambda: telemetry.write_text(_header() + "".join(samples[33:36])),
        ),
        (
            "three samples",
            lambda: telemetry.write_text(
                _header() + _sample(0, 22) + _sample(1, 22) + _sample(2, 33)
            ),
        ),
        (
            "renamed over by a longer file that ends as it did, an earlier sample changed",
            lambda: _rename_over(
                telemetry,
                _header() + _sample(0, 88) + _sample(1, 22) + _sample(2, 33) + _sample(3, 44),
            ),
        ),
        ("a foreign first line", lambda: _rename_over(metrics, _line({"other": 1}) + _bar(20))),
        (
            "a link put in its place",
            lambda: (telemetry.unlink(), telemetry.symlink_to(tmp_path / "elsewhere")),
        ),
        (
            "the link's target written",
            lambda: (tmp_path / "elsewhere").write_text(_header() + samples[0]),
        ),
        (
            "a file again",
            lambda: (telemetry.unlink(), telemetry.write_text(_header() + samples[36])),
        ),
        ("removed", lambda: (telemetry.unlink(), metrics.unlink())),
        (
            "written again",
            lambda: (
                telemetry.write_text(_header() + "".join(samples[37:])),
                metrics.write_text(_line({"x_tui_metrics": 1}) + _bar(36)),
            ),
        ),
    ]
    poller = WatchPoller(Service())
    for number, (what, change) in enumerate(steps):
        change()
        now = T0 + 200 + number
        shown = poller.poll([handle], now=now)[RUN_ID]
        assert shown == _whole_read(outputs, now), what
    assert shown.progress == "90%"
    assert shown.gpu_percent is not None


def test_unchanged_files_are_not_opened_and_grown_ones_are_read_from_the_last_end(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle, outputs = _local_run(state_dir, tmp_path)
    (outputs / TELEMETRY_NAME).write_text(_header() + "".join(_sample(i, 50) for i in range(500)))
    (outputs / METRICS_NAME).write_text(_line({"x_tui_metrics": 1}) + _bar(10))
    opened: list[str] = []
    read: list[int] = []
    real_open, real_pread = output_lines.open_output, os.pread

    def counted_open(root: Path, relative: str) -> int | None:
        opened.append(relative)
        return real_open(root, relative)

    def counted_pread(descriptor: int, length: int, offset: int) -> bytes:
        data = real_pread(descriptor, length, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(output_lines, "open_output", counted_open)
    monkeypatch.setattr(os, "pread", counted_pread)
    poller = WatchPoller(Service())
    now = T0 + 2500
    first = poller.poll([handle], now=now)[RUN_ID]
    assert first.progress == "25%"
    assert first.gpu_percent == pytest.approx(37.5)  # GPU 0 at 50%, GPU 1 at 25%
    assert sorted(opened) == [METRICS_NAME, TELEMETRY_NAME]
    assert sum(read) == sum(path.stat().st_size for path in outputs.iterdir())

    opened.clear()
    read.clear()
    for _ in range(3):
        assert poller.poll([handle], now=now)[RUN_ID] == first
    assert opened == []  # nothing changed: nothing opened
    assert read == []

    added = _bar(30)
    _append(outputs / METRICS_NAME, added)
    later = poller.poll([handle], now=now)[RUN_ID]
    assert later.progress == "75%"
    assert later.gpu_percent == first.gpu_percent
    assert opened == [METRICS_NAME]
    # The appended line, and the few bytes before it that show the file was not rewritten.
    assert sum(read) <= len(added) + output_lines.SIGNATURE_BYTES
