"""Modal and SkyPilot adopt the run a killed submitter left, from its launch record, or say why
there is none; neither trusts a path in the record."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.task import cluster_name
from x_tui.compute.launches import LaunchRecord
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.records import JsonValue

from .fake_modal import fixtures as modal_fixtures

RUN_ID = "train-20261201T120000Z-abcdef"


def _record(backend: str, settings: dict[str, JsonValue], **details: str) -> LaunchRecord:
    return LaunchRecord(
        run_id=RUN_ID,
        backend=backend,
        job="train",
        project="/home/user/sample",
        submitted_at=dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC),
        settings=settings,
        submitter_pid=os.getpid(),
        submitter_start="1",
        staging="/etc",  # never trusted: the backend finds the run's directory by its id
        details=details,
    )


def _sky(tmp_path: Path) -> tuple[SkyPilotBackend, dict[str, JsonValue]]:
    settings: dict[str, JsonValue] = {
        "sky": "no-such-sky-command",
        "state_dir": str(tmp_path / "state"),
        "bucket": {"outputs_bucket": "s3://runs"},
    }
    return SkyPilotBackend(settings), settings


def test_skypilot_adopts_a_run_whose_launch_intent_was_written(tmp_path: Path) -> None:
    backend, settings = _sky(tmp_path)
    run_dir = backend.runs / RUN_ID
    run_dir.mkdir(parents=True)
    (run_dir / "launch.json").write_text("{}")
    (run_dir / "request.json").write_text(json.dumps({"request_id": "req-42"}))
    handle = backend.adopt(_record("skypilot", settings))
    assert isinstance(handle, RunHandle)
    assert handle.run_id == RUN_ID
    assert handle.details == {
        "cluster": cluster_name(RUN_ID),
        "request_id": "req-42",
        "transport": "bucket",
    }
    assert handle.settings == backend.settings.table()
    assert run_dir.is_dir()


def test_skypilot_removes_a_half_staged_run_that_never_reached_it(tmp_path: Path) -> None:
    backend, settings = _sky(tmp_path)
    run_dir = backend.runs / RUN_ID
    run_dir.mkdir(parents=True)
    (run_dir / "spec.json").write_text("{}")
    answer = backend.adopt(_record("skypilot", settings))
    assert answer == "the submitting process died before the launch was sent (nothing ran)"
    assert not run_dir.exists()
    assert Path("/etc").is_dir()


fake = modal_fixtures.fake_modal


@pytest.mark.usefixtures("fake")
def test_modal_adopts_a_run_whose_ids_were_recorded_and_names_the_app_otherwise(
    tmp_path: Path,
) -> None:
    from x_tui.backends.modal.backend import ModalBackend

    settings: dict[str, JsonValue] = {"outputs_volume": "runs", "state_dir": str(tmp_path)}
    backend = ModalBackend(settings)
    handle = backend.adopt(_record("modal", settings, app_id="ap-1", call_id="fc-2"))
    assert isinstance(handle, RunHandle)
    assert handle.details == {"app_id": "ap-1", "call_id": "fc-2"}
    answer = backend.adopt(_record("modal", settings))
    assert answer == (
        "the submitting process died before Modal named the run's app; if Modal started it,"
        " it is an app named 'sample-train' (modal app list; modal app stop)"
    )
