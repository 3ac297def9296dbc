"""``x-tui metrics`` and what ``status`` says of a run's progress, cost and flags, end to end.

A real local run, its worker with a stand-in ``nvidia-smi`` (``tests/fake_gpus``: 8 GPUs whose
figures change, honouring ``-l``) on ``PATH``; the job's watch settings come from x-tui's overlay
table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from x_tui.compute.telemetry_read import read_telemetry
from x_tui.compute.worker.telemetry import TELEMETRY_NAME

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

pytestmark = pytest.mark.timeout(180)

FAKE_GPUS = Path(__file__).resolve().parent.parent / "fake_gpus"

TRAIN = """\
import json, sys, time
for i in range(10):
    print(json.dumps({"step": i, "loss": 1 / (i + 1)}), flush=True)
    print(f"step={i} acc={i / 10:.2f}", flush=True)
    sys.stderr.write(f"\\r{i + 1}/10 [00:00<00:0{9 - i}, 8.00it/s]")
    sys.stderr.flush()
    time.sleep(0.15)
time.sleep(1.2)
"""

JOBS = """
[tool.substrax.compute.jobs.train]
timeout_seconds = 300
commands = { train = ["python", "train.py"] }

[tool.substrax.compute.jobs.quiet]
timeout_seconds = 300
commands = { quiet = ["python", "-c", "import time; time.sleep(120)"] }

[tool.x-tui.jobs.train]
telemetry_seconds = 0.3

[tool.x-tui.jobs.quiet]
telemetry_seconds = 0.2
stall_seconds = 2
"""


def _with_fake_gpus(cli: Cli, *, idle: bool = False) -> None:
    cli.env["PATH"] = f"{FAKE_GPUS}:{cli.env['PATH']}"
    cli.env["FAKE_GPUS_SLEEP"] = "0.1"
    if idle:
        cli.env["FAKE_GPUS_IDLE"] = "1"


def test_metrics_json_reports_devices_series_and_progress_of_a_run(cli: Cli) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    (cli.project / "train.py").write_text(TRAIN)
    _with_fake_gpus(cli)

    result = cli("run", "train")
    assert result.returncode == 0, result.stderr
    run_id = cli.submitted_id(result.stdout)

    shown = cli("metrics", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert [device["index"] for device in document["devices"]] == list(range(8))
    # The same values as the telemetry file's latest sample.
    outputs = cli.state / "compute" / "local" / run_id / "outputs"
    telemetry = read_telemetry((outputs / TELEMETRY_NAME).read_bytes())
    assert telemetry is not None
    assert telemetry.latest is not None
    for device in document["devices"]:
        row = telemetry.latest.gpus[device["index"]]
        assert device["name"] == "NVIDIA H100 80GB HBM3"
        assert [
            device["utilization"],
            device["memory_used_mib"],
            device["memory_total_mib"],
            device["power_w"],
            device["temperature_c"],
        ] == list(row)
        assert device["series"]["utilization"][-1] == device["utilization"]
    assert len(set(document["devices"][0]["series"]["memory_used_mib"])) > 1
    # The latest sample's processes (none, if it was taken after the task ended and before the
    # worker stopped sampling); the task's own memory in the samples taken while it ran.
    assert document["process"]["rss_mib"] == telemetry.latest.rss_mib
    assert any((sample.rss_mib or 0) > 0 for sample in telemetry.samples)
    assert document["metrics"]["loss"][:2] == [[0, 1.0], [1, 0.5]]
    assert document["metrics"]["acc"][-1] == [9, 0.9]
    assert document["progress"]["percent"] == 100.0
    assert document["progress"]["total"] == 10

    status = json.loads(cli("status", run_id, "--json").stdout)
    assert status["progress"]["percent"] == 100.0
    assert status["cost_so_far"] is None  # the local backend bills nothing
    assert status["flags"] == []

    # --follow on a run that has ended: one compact object, then it stops.
    followed = cli("metrics", run_id, "--follow", "--json")
    assert followed.returncode == 0, followed.stderr
    assert [json.loads(line) for line in followed.stdout.splitlines()] == [document]

    text = cli("metrics", run_id).stdout.splitlines()
    assert "progress  100%" in text[0]
    assert sum(line.startswith("gpu ") for line in text) == 8
    assert any(line.startswith("loss  0.1") for line in text)


def test_a_silent_run_with_idle_gpus_is_flagged_in_status(cli: Cli) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    _with_fake_gpus(cli, idle=True)
    submitted = cli("run", "quiet", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    run_id = cli.submitted_id(submitted.stdout)
    try:
        flags: list[dict[str, str]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not flags:
            flags = json.loads(cli("status", run_id, "--json").stdout)["flags"]
        assert flags, "no flag within a minute"
        assert flags[0]["kind"] == "silent", flags
        assert flags[0]["reason"].endswith(", GPUs 0%")
        line = cli("status", run_id).stdout
        assert "FLAGGED: silent " in line
    finally:
        cli("cancel", run_id)


def test_a_bad_metric_pattern_is_refused_naming_the_key(cli: Cli) -> None:
    jobs = JOBS.replace("telemetry_seconds = 0.3", 'metric_patterns = ["(unclosed"]')
    cli.write_pyproject(jobs=jobs, top='backend = "local"')

    result = cli("run", "train", "--detach")

    assert result.returncode == 2
    assert "metric_patterns" in result.stderr
    assert "(unclosed" in result.stderr
    assert "Traceback" not in result.stderr
