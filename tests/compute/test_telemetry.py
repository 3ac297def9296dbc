"""Device and process samples, metrics from plain logs, and the flags read from them.

The worker runs for real, as the zipapp in a subprocess, with a stand-in ``nvidia-smi``
(``tests/fake_gpus/nvidia-smi``: 8 GPUs whose figures change each loop, honouring ``-l``) on
its ``PATH``, or none at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.compute.telemetry_support import run_worker
from x_tui.compute.run_health import FlagKind, cost_so_far, flags_of, hourly_price
from x_tui.compute.telemetry_read import (
    Sample,
    Telemetry,
    metrics_document,
    read_metrics,
    read_telemetry,
)
from x_tui.compute.worker import log_metrics
from x_tui.compute.worker.line_assembly import Piece, PieceKind
from x_tui.compute.worker.log_metrics import (
    METRICS_NAME,
    MetricsExtractor,
    parse_json_metrics,
    parse_pairs,
    parse_progress,
)
from x_tui.compute.worker.records import dumps_compact
from x_tui.compute.worker.spec import Accelerator, JobSpec, Resources, Task
from x_tui.compute.worker.telemetry import TELEMETRY_NAME, TelemetryFile, parse_gpu_line
from x_tui.compute.worker_bundle import write_worker_zipapp

pytestmark = pytest.mark.timeout(120)

FAKE_GPUS = Path(__file__).resolve().parent.parent / "fake_gpus"

TRAINING = """\
import json, sys, time
for i in range(20):
    print(json.dumps({"step": i, "loss": 1 / (i + 1)}), flush=True)
    print(f"step={i} acc={i / 20:.3f} lr: 3e-4", flush=True)
    sys.stderr.write(f"\\r{i + 1}/20 [00:{i // 10:02d}<00:{(19 - i) // 10:02d}, 10.00it/s]")
    sys.stderr.flush()
    time.sleep(0.1)
time.sleep(1.5)
"""


@pytest.mark.slow
def test_the_worker_samples_eight_fake_gpus_whose_values_change(tmp_path: Path) -> None:
    done, outputs = run_worker(tmp_path, TRAINING, path=f"{FAKE_GPUS}:{os.environ['PATH']}")

    assert done.returncode == 0, done.stderr
    telemetry = read_telemetry((outputs / TELEMETRY_NAME).read_bytes())
    assert telemetry is not None
    assert telemetry.interval == 0.3
    assert sorted(telemetry.names) == list(range(8))
    assert telemetry.names[3] == "NVIDIA H100 80GB HBM3"
    with_gpus = [sample for sample in telemetry.samples if sample.gpus]
    assert len(with_gpus) >= 3
    assert all(sorted(sample.gpus) == list(range(8)) for sample in with_gpus)
    assert len({sample.gpus[0][0] for sample in with_gpus}) > 1  # utilisation changes
    assert all(sample.gpus[5][2] == 81559 for sample in with_gpus)  # memory total
    # The task's own process is sampled; nvidia-smi is not counted among the run's processes.
    assert any(sample.procs == 1 and (sample.rss_mib or 0) > 1 for sample in telemetry.samples)
    # When a task last wrote: unknown only until the task's first line (a slow start can be late).
    stamped = [sample.last_output is not None for sample in telemetry.samples]
    assert stamped[-1]
    assert stamped == sorted(stamped)


def test_gpu_samples_go_on_through_every_task(tmp_path: Path) -> None:
    """The worker ends what each task left running, but never its own nvidia-smi."""
    spec = JobSpec(
        name="job",
        tasks=tuple(
            Task(
                name=name, argv=("python", "-c", "import time; time.sleep(1.5)"), timeout_seconds=60
            )
            for name in ("first", "second")
        ),
        timeout_seconds=60,
    )
    (tmp_path / "spec.json").write_text(dumps_compact(spec))
    worker = write_worker_zipapp(tmp_path)
    outputs = tmp_path / "outputs"
    env = {**os.environ, "PATH": f"{FAKE_GPUS}:{os.environ['PATH']}", "FAKE_GPUS_SLEEP": "0.1"}
    started = time.time()
    done = subprocess.run(
        [sys.executable, str(worker), "--spec", str(tmp_path / "spec.json"), "--project",
         str(tmp_path), "--outputs", str(outputs), "--telemetry-seconds", "0.3"],
        env=env, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    telemetry = read_telemetry((outputs / TELEMETRY_NAME).read_bytes())
    assert telemetry is not None
    # The fake's memory figure grows each loop: the last samples, in the second task, are fresh.
    last = telemetry.samples[-3:]
    assert all(sorted(sample.gpus) == list(range(8)) for sample in last)
    assert len({sample.gpus[0][1] for sample in last}) == 3
    assert last[-1].t - started > 2.5


def test_without_nvidia_smi_there_are_cpu_and_memory_samples_and_no_error(tmp_path: Path) -> None:
    done, outputs = run_worker(tmp_path, TRAINING, path=str(tmp_path / "no-tools"))

    assert done.returncode == 0, done.stderr
    telemetry = read_telemetry((outputs / TELEMETRY_NAME).read_bytes())
    assert telemetry is not None
    assert telemetry.samples
    assert telemetry.names == {}
    assert all(sample.gpus == {} for sample in telemetry.samples)
    assert any((sample.rss_mib or 0) > 1 for sample in telemetry.samples)
    assert "x-tui worker" not in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_metrics_and_progress_are_found_in_the_tasks_output(tmp_path: Path) -> None:
    done, outputs = run_worker(tmp_path, TRAINING, path=str(tmp_path / "no-tools"))

    assert done.returncode == 0, done.stderr
    found = read_metrics((outputs / METRICS_NAME).read_bytes())
    assert found.series["loss"][:3] == [(0, 1.0), (1, 0.5), (2, 1 / 3)]
    assert len(found.series["loss"]) == 20
    assert found.series["acc"][-1] == (19, 0.95)
    assert found.series["lr"][0] == (0, 3e-4)
    assert found.progress is not None
    assert (found.progress.n, found.progress.total, found.progress.percent) == (20, 20, 100.0)
    assert found.progress.rate == 10.0
    assert found.progress.task == "train"
    # The log itself is unchanged by it.
    assert '[train] {"step": 19, "loss": 0.05}' in done.stdout


def test_a_job_pattern_makes_metrics_of_its_named_groups(tmp_path: Path) -> None:
    code = 'for i in range(5): print(f"it {i} | reward {i * 2}.5", flush=True)'
    done, outputs = run_worker(
        tmp_path,
        code,
        path=str(tmp_path / "no-tools"),
        extra=("--metric-pattern", r"it (?P<step>\d+) \| reward (?P<reward>[\d.]+)"),
    )

    assert done.returncode == 0, done.stderr
    found = read_metrics((outputs / METRICS_NAME).read_bytes())
    assert found.series["reward"] == [(0, 0.5), (1, 2.5), (2, 4.5), (3, 6.5), (4, 8.5)]


def test_sampling_that_fails_stops_with_one_note_and_the_task_succeeds(tmp_path: Path) -> None:
    blocked = tmp_path / "outputs" / TELEMETRY_NAME
    (blocked / "in-the-way").mkdir(parents=True)  # a directory where the file goes

    done, _outputs = run_worker(tmp_path, TRAINING, path=str(tmp_path / "no-tools"))

    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "telemetry stopped" in line]
    assert len(notes) == 1, done.stderr
    assert "IsADirectoryError" in notes[0] or "OSError" in notes[0]


def test_a_simulated_eight_gpu_day_stays_small_and_keeps_the_last_hour_whole(
    tmp_path: Path,
) -> None:
    header = {"x_tui_telemetry": 1, "interval": 5.0, "stall_seconds": 600.0, "started": 0.0}
    file = TelemetryFile(tmp_path / TELEMETRY_NAME, header, full_window=3600)
    file.set_devices({index: "NVIDIA H100 80GB HBM3" for index in range(8)})
    rows = [[index, 97, 71234.5, 81559, 612.34, 71] for index in range(8)]
    day = 24 * 3600
    for tick in range(0, day, 5):
        file.add(tick, {"t": tick, "gpus": rows, "cpu": 812.5, "rss_mib": 20480.1, "procs": 9})

    data = (tmp_path / TELEMETRY_NAME).read_bytes()
    assert len(data) < 5 * 1024 * 1024
    telemetry = read_telemetry(data)
    assert telemetry is not None
    times = [sample.t for sample in telemetry.samples]
    assert times == sorted(times)
    last_hour = [when for when in times if when > day - 3600]
    assert len(last_hour) >= 719  # every sample of the last hour
    assert times[0] < 6 * 3600  # older ones thinned, not dropped
    assert len(times) < 3 * 720


def test_parse_gpu_line_reads_not_available_as_none() -> None:
    assert parse_gpu_line("1, NVIDIA A100, 55, 1024, 40960, [N/A], 60") == (
        1,
        "NVIDIA A100",
        [55, 1024, 40960, None, 60],
    )
    assert parse_gpu_line("garbage") is None
    assert parse_gpu_line("x, a, 1, 2, 3, 4, 5") is None


def test_key_value_pairs_count_only_on_a_line_with_a_step_like_key() -> None:
    assert parse_pairs("step=10 loss=0.31 lr: 3e-4") == (10.0, {"loss": 0.31, "lr": 3e-4})
    assert parse_pairs("epoch: 2, val_loss: 1.5e-1") == (2.0, {"val_loss": 0.15})
    assert parse_pairs("loss=0.31 lr=3e-4") is None  # no step
    assert parse_pairs("step=3") is None  # nothing else
    assert parse_pairs("url=http://x/step=3") is None


def test_json_lines_give_their_numeric_fields() -> None:
    assert parse_json_metrics('{"global_step": 7, "loss": 0.5, "tag": "a", "ok": true}') == (
        7.0,
        {"loss": 0.5},
    )
    assert parse_json_metrics('{"loss": NaN}') is None
    assert parse_json_metrics("[1, 2]") is None
    assert parse_json_metrics("{not json}") is None


def test_tqdm_bars_give_progress_rate_and_eta() -> None:
    bar = " 45%|████▌     | 45/100 [00:04<00:05, 10.00it/s]"
    assert parse_progress(bar) == {
        "n": 45,
        "total": 100,
        "percent": 45.0,
        "rate": 10.0,
        "eta_seconds": 5.0,
    }
    slow = parse_progress("3/10 [1:02:03<2:00:00,  4.00s/it]")
    assert slow is not None
    assert (slow["rate"], slow["eta_seconds"]) == (0.25, 7200.0)
    assert parse_progress("11/10 [00:01<00:00]") is None
    assert parse_progress("see 1/2 of it") is None


def test_the_metrics_file_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_metrics, "MAX_LINES", 200)
    monkeypatch.setattr(log_metrics, "MAX_POINTS", 50)
    monkeypatch.setattr(log_metrics, "MAX_SERIES", 3)
    extractor = MetricsExtractor(tmp_path)
    for step in range(2000):
        line = f"step={step} a={step} b={2 * step} c=1 d=2".encode()
        extractor.observe("t", [Piece(PieceKind.LINE, line)])
    extractor.close()

    data = (tmp_path / METRICS_NAME).read_bytes()
    assert data.count(b"\n") < 3 * 2 * 200
    found = read_metrics(data)
    assert sorted(found.series) == ["a", "b", "c"]  # a fourth name is ignored
    assert found.series["a"][-1] == (1999, 1999.0)  # the latest point is kept
    assert found.series["a"][0] == (0, 0.0)
    assert len(found.series["a"]) < 300


def test_damaged_side_files_read_as_what_can_be_read() -> None:
    data = b"\n".join(
        [
            b'{"x_tui_telemetry": 1, "interval": "fast", "started": 5}',
            b"not json",
            b'{"devices": [[0, "A"], ["x", 1], [1]]}',
            b'{"t": 10, "gpus": [[0, 50, 1, 2, 3, 4], [0, 1], "x"], "cpu": "lots"}',
            b'{"t": "late", "gpus": []}',
            b"[1, 2, 3]",
            b'{"t": 11, "gpus": [[0, Infinity, 1, 2, 3, 4]], "procs": true}',
        ]
    )
    telemetry = read_telemetry(data)
    assert telemetry is not None
    assert telemetry.interval is None
    assert telemetry.started == 5
    assert telemetry.names == {0: "A"}
    assert [sample.t for sample in telemetry.samples] == [10, 11]
    assert telemetry.samples[0].cpu is None
    assert telemetry.samples[1].gpus[0][0] is None
    assert telemetry.samples[1].procs is None
    assert read_telemetry(b"\x00\xff garbage") is None
    assert read_metrics(b'{"x_tui_metrics": 1}\n{"step": "a", "values": {"x": 1}}').series == {}


def _telemetry(
    samples: list[Sample], *, started: float = 0.0, stall: float = 60.0, limit: float = 1000.0
) -> Telemetry:
    return Telemetry(
        interval=5.0,
        stall_seconds=stall,
        started=started,
        memory_limit_mib=limit,
        samples=tuple(samples),
    )


def _sample(t: float, util: float, *, used: float = 100.0, out: float = 0.0) -> Sample:
    gpus = {0: (util, used, 1000.0, 50.0, 40.0), 1: (util, used, 1000.0, 50.0, 40.0)}
    return Sample(t=t, gpus=gpus, cpu=1.0, rss_mib=100.0, procs=1, last_output=out)


def test_a_silent_run_with_idle_gpus_is_flagged_once_the_stall_time_passed() -> None:
    samples = [_sample(t, 0.0, out=10.0) for t in range(0, 125, 5)]
    telemetry = _telemetry(samples)

    early = _telemetry([sample for sample in samples if sample.t <= 50])
    assert flags_of(early, now=50.0) == ()  # not yet
    flags = flags_of(telemetry, now=124.0)
    assert [flag.kind for flag in flags] == [FlagKind.SILENT]
    assert flags[0].reason == "silent 2 min, GPUs 0%"


def test_busy_gpus_keep_a_silent_run_unflagged_and_idle_gpus_are_flagged_while_it_logs() -> None:
    busy = _telemetry([_sample(t, 80.0, out=0.0) for t in range(0, 125, 5)])
    assert flags_of(busy, now=124.0) == ()

    chatty = _telemetry([_sample(t, 0.0, out=t) for t in range(0, 125, 5)])
    flags = flags_of(chatty, now=120.0)
    assert [(flag.kind, flag.reason) for flag in flags] == [
        (FlagKind.GPUS_IDLE, "GPUs 0% for 1 min")
    ]


def test_memory_growing_toward_the_limit_is_flagged() -> None:
    samples = [_sample(t, 90.0, used=800 + t, out=t) for t in range(0, 125, 5)]
    flags = flags_of(_telemetry(samples), now=124.0)
    assert [(flag.kind, flag.reason) for flag in flags] == [
        (FlagKind.MEMORY_GROWING, "GPU 0 memory 92% and growing")
    ]


def test_cost_so_far_is_elapsed_times_the_hourly_list_price() -> None:
    resources = Resources(accelerator=Accelerator(kind="H100", count=2))
    hourly = hourly_price("modal", resources)
    assert hourly is not None
    assert hourly > 1
    assert cost_so_far(1800, hourly) == round(hourly / 2, 4)
    assert hourly_price("local", resources) is None
    assert cost_so_far(1800, None) is None


def test_the_metrics_document_holds_the_latest_values_and_recent_series() -> None:
    telemetry = _telemetry([_sample(0, 10.0), _sample(5, 20.0)])
    found = read_metrics(b'{"x_tui_metrics": 1}\n{"step": 1, "values": {"loss": 0.5}}\n')
    document = metrics_document(telemetry, found)
    assert json.loads(json.dumps(document)) == document
    devices = document["devices"]
    assert isinstance(devices, list)
    assert len(devices) == 2
    assert devices[0] == {
        "index": 0,
        "name": None,
        "utilization": 20.0,
        "memory_used_mib": 100.0,
        "memory_total_mib": 1000.0,
        "power_w": 50.0,
        "temperature_c": 40.0,
        "at": 5,
        "series": {
            "utilization": [10.0, 20.0],
            "memory_used_mib": [100.0, 100.0],
            "memory_total_mib": [1000.0, 1000.0],
            "power_w": [50.0, 50.0],
            "temperature_c": [40.0, 40.0],
        },
    }
    assert document["metrics"] == {"loss": [[1, 0.5]]}
    assert document["process"] == {"cpu_percent": 1.0, "rss_mib": 100.0, "processes": 1, "at": 5}
    assert document["progress"] is None
