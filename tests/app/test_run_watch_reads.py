"""The runs table's progress reader reads a local run's side files again only once they change."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path

import pytest

from x_tui.app.run_watch import WatchPoller
from x_tui.app.service import Service
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.log_metrics import METRICS_NAME

from .conftest import save_handle

NOW = dt.datetime(2026, 9, 19, 12, 0, tzinfo=dt.UTC)


def _write_progress(outputs: Path, n: int) -> None:
    lines = [
        {"x_tui_metrics": 1},
        {"t": 1.0, "progress": {"n": n, "total": 40, "percent": n * 2.5}},
    ]
    (outputs / METRICS_NAME).write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_unchanged_side_files_are_not_read_again_and_changed_ones_are(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = "train-20260919T120000Z-aaaaaa"
    handle = save_handle(state_dir, run_id=run_id, job="train", submitted_at=NOW)
    run_dir = tmp_path / "run"
    outputs = run_dir / "outputs"
    outputs.mkdir(parents=True)
    handle = replace(handle, details={"pid": "999999999", "run_dir": str(run_dir)})
    service = Service()
    peeks: list[str] = []
    real_peek = service.peek

    def counted(run: RunHandle, relative: str) -> bytes | None:
        peeks.append(relative)
        return real_peek(run, relative)

    monkeypatch.setattr(service, "peek", counted)
    poller = WatchPoller(service)
    now = NOW.timestamp() + 60

    assert poller.poll([handle], now=now)[run_id].progress is None
    assert len(peeks) == 2  # the telemetry and the metrics, neither written yet

    _write_progress(outputs, 10)
    first = poller.poll([handle], now=now)[run_id].progress
    assert first == "25%"
    assert len(peeks) == 4

    for _ in range(3):
        assert poller.poll([handle], now=now + 5)[run_id].progress == first
    assert len(peeks) == 4  # nothing changed: nothing read

    _write_progress(outputs, 20)
    later = poller.poll([handle], now=now + 10)[run_id].progress
    assert later == "50%"
    assert len(peeks) == 6
