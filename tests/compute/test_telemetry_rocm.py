"""AMD GPUs: where ``rocm-smi`` is on ``PATH`` (and ``nvidia-smi`` is not), the worker samples it.

Runs the real worker zipapp with ``tests/fake_rocm/rocm-smi`` (4 MI300X whose figures change each
second, shaped as rocm-smi 6.x prints them) on its ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.compute.telemetry_support import run_worker
from x_tui.compute.telemetry_read import RunMetrics, metrics_document, read_telemetry
from x_tui.compute.worker.run_processes import descendants
from x_tui.compute.worker.telemetry import (
    ROCM_ARGUMENTS,
    TELEMETRY_NAME,
    gpu_reader,
    parse_rocm_json,
)

pytestmark = pytest.mark.timeout(120)

FAKE_ROCM = Path(__file__).resolve().parent.parent / "fake_rocm"

BUSY = """\
import time
for i in range(4):
    print(f"working {i}", flush=True)
    time.sleep(0.8)
"""


def _path_without_nvidia_smi() -> str:
    """This machine's ``PATH`` with the fake ``rocm-smi`` first and no ``nvidia-smi`` on it."""
    kept = [
        entry
        for entry in os.environ["PATH"].split(os.pathsep)
        if entry and not shutil.which("nvidia-smi", path=entry)
    ]
    return os.pathsep.join([str(FAKE_ROCM), *kept])


def test_the_worker_samples_fake_amd_gpus_through_rocm_smi(tmp_path: Path) -> None:
    done, outputs = run_worker(tmp_path, BUSY, path=_path_without_nvidia_smi())

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    telemetry = read_telemetry((outputs / TELEMETRY_NAME).read_bytes())
    assert telemetry is not None
    assert telemetry.names == {index: "AMD Instinct MI300X" for index in range(4)}
    with_gpus = [sample for sample in telemetry.samples if sample.gpus]
    assert len(with_gpus) >= 2
    assert all(sorted(sample.gpus) == [0, 1, 2, 3] for sample in with_gpus)
    # Total VRAM in MiB; junction temperature where the edge one reads N/A; socket power.
    assert all(sample.gpus[2][2] == 196288 for sample in with_gpus)
    assert all(sample.gpus[2][4] == 37 for sample in with_gpus)
    assert all(130 <= (sample.gpus[1][3] or 0) < 180 for sample in with_gpus)
    # rocm-smi is asked once a second: its figures change while the task runs.
    assert len({sample.gpus[0][0] for sample in with_gpus}) > 1
    # Each rocm-smi is the worker's own, never counted among the run's processes.
    assert all(sample.procs in (None, 0, 1) for sample in telemetry.samples)
    devices = metrics_document(telemetry, RunMetrics())["devices"]
    assert isinstance(devices, list)
    assert len(devices) == 4


def test_rocm_json_is_read_whatever_shape_it_comes_in() -> None:
    """Older field names, missing and non-numeric figures, and garbage give less, never an error."""
    older = (
        '{"card1": {"Card series": "Radeon Pro W7900", "GPU use (%)": "42",'
        ' "VRAM Total Memory (B)": "48301604864", "VRAM Total Used Memory (B)": "1048576",'
        ' "Average Graphics Package Power (W)": "61.0", "Temperature (Sensor edge) (C)": "44.0"},'
        ' "card0": {"GPU use (%)": "[N/A]"}, "card99": {"GPU use (%)": "5"},'
        ' "cardX": {}, "system": {"Driver version": "6.2"}}'
    )
    assert parse_rocm_json(older) == [
        (0, "AMD GPU", [None, None, None, None, None]),
        (1, "Radeon Pro W7900", [42, 1, 46064, 61, 44]),
    ]
    garbage = ("", "not json", "[1, 2]", '{"card0": 3}', "[" * 100_000, '{"card0": {"x": true}}')
    for text in garbage:
        rows = parse_rocm_json(text)
        assert all(figures == [None] * 5 for _index, _name, figures in rows)
    assert "--json" in ROCM_ARGUMENTS


def _is_rocm_smi(pid: int) -> bool:
    try:
        return b"rocm-smi" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_a_rocm_smi_being_started_is_never_counted_as_the_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Popen`` returns only after the child exists: a walk of the run's processes in that window
    waits for the reader to know its tool's pid, rather than count the tool as the run's."""
    child_exists = threading.Event()
    real_popen = subprocess.Popen

    class SlowToReturn(real_popen):  # type: ignore[misc,valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            child_exists.set()
            time.sleep(0.3)  # as a loaded machine can take between fork and return

    monkeypatch.setenv("PATH", _path_without_nvidia_smi())
    monkeypatch.setattr(subprocess, "Popen", SlowToReturn)
    reader = gpu_reader(1.0)
    try:
        assert child_exists.wait(10)
        with reader.steady() as own:
            tools = {pid for pid in descendants(os.getpid()) if _is_rocm_smi(pid)}
        # (The tool may have answered and been reaped by the time the walk may begin.)
        assert tools <= own, "a walk in the window meets the tool as the reader's own"
    finally:
        reader.stop()
