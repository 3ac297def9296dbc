"""What the worker's watching costs: its sampling's CPU, and the telemetry file's size.

Two figures, each a ratio against a reference measured in the same run:

- ``sampling``: the CPU the sampler thread takes per sample (reading the stand-in ``nvidia-smi``'s
  latest 8-GPU rows, walking ``/proc`` for the worker's descendants with ``--processes`` sleeping
  children, appending a line), at the default 5 s interval, as a share of one core; against the
  1% target (the ratio must stay below 1);
- ``metrics``: finding metrics in 200,000 lines of plain output and in 200,000 ``step=N
  loss=X`` lines (every line a metrics line, the worst case), against the line assembly of the
  same output, which the worker does anyway;
- ``file size``: the telemetry file of a simulated 8-GPU run of ``--hours`` hours at the default
  5 s interval (every sample appended and thinned as the worker does), against the 5 MB target.

    uv run python bench/telemetry.py [--processes 20] [--seconds 6] [--hours 24]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from x_tui.compute.telemetry_read import read_telemetry
from x_tui.compute.worker.line_assembly import LineAssembler, Piece
from x_tui.compute.worker.log_metrics import MetricsExtractor
from x_tui.compute.worker.telemetry import (
    DEFAULT_SECONDS,
    TELEMETRY_NAME,
    TelemetryFile,
    TelemetrySampler,
)

FAKE_GPUS = Path(__file__).resolve().parent.parent / "tests" / "fake_gpus"
CPU_TARGET = 0.01
SIZE_TARGET = 5 * 1024 * 1024


def _thread_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sampling(processes: int, seconds: float) -> None:
    """Run the sampler at a fast pace beside sleeping children; its CPU per sample."""
    os.environ["PATH"] = f"{FAKE_GPUS}:{os.environ['PATH']}"
    os.environ["FAKE_GPUS_SLEEP"] = "0.2"
    children = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        for _ in range(processes)
    ]
    try:
        time.sleep(1.0)  # the children have started
        with tempfile.TemporaryDirectory() as directory:
            sampler = TelemetrySampler(Path(directory), seconds=0.2)
            before = _thread_cpu()
            sampler.start()
            time.sleep(seconds)
            sampler.stop()
            spent = _thread_cpu() - before
            telemetry = read_telemetry((Path(directory) / TELEMETRY_NAME).read_bytes())
    finally:
        for child in children:
            child.kill()
            child.wait()
    count = len(telemetry.samples) if telemetry is not None else 0
    per_sample = spent / max(count, 1)
    share = per_sample / DEFAULT_SECONDS
    gpus = len(telemetry.latest.gpus) if telemetry is not None and telemetry.latest else 0
    print(
        f"sampling: {count} samples of {gpus} GPUs and {processes} processes, "
        f"{per_sample * 1000:.2f} ms CPU each; at {DEFAULT_SECONDS:g} s that is "
        f"{share * 100:.3f}% of one core = {share / CPU_TARGET:.3f} x the 1% target"
    )


def file_size(hours: float) -> None:
    """Simulate an 8-GPU run of ``hours`` hours; the file's size against the target."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / TELEMETRY_NAME
        header = {"x_tui_telemetry": 1, "interval": DEFAULT_SECONDS, "started": 0.0}
        file = TelemetryFile(path, header, full_window=3600)
        file.set_devices({index: "NVIDIA H100 80GB HBM3" for index in range(8)})
        started = time.perf_counter()
        ticks = int(hours * 3600 / DEFAULT_SECONDS)
        for tick in range(ticks):
            now = tick * DEFAULT_SECONDS
            rows = [
                [index, (tick + index) % 100, 71234 + tick % 977, 81559, 612.34, 71]
                for index in range(8)
            ]
            file.add(now, {"t": now, "gpus": rows, "cpu": 812.5, "rss_mib": 20480.1, "procs": 9})
        spent = time.perf_counter() - started
        size = path.stat().st_size
        telemetry = read_telemetry(path.read_bytes())
    kept = len(telemetry.samples) if telemetry is not None else 0
    print(
        f"file size: {ticks} samples of 8 GPUs over {hours:g} h -> {kept} kept, "
        f"{size / 1024:.0f} KiB = {size / SIZE_TARGET:.3f} x the 5 MB target "
        f"(written in {spent:.2f} s, {spent / ticks * 1e6:.0f} us per sample)"
    )


def _assembled(data: bytes) -> tuple[float, list[list[Piece]]]:
    started = time.perf_counter()
    assembler = LineAssembler()
    pieces = [assembler.feed(data[at : at + 65536], 0.0) for at in range(0, len(data), 65536)]
    return time.perf_counter() - started, pieces


def metrics(lines: int) -> None:
    """Extract metrics from plain lines and from step lines; against line assembly."""
    plain = b"".join(
        b"line %07d of a chatty task, with words to make it eighty bytes long\n" % i
        for i in range(lines)
    )
    steps = b"".join(
        b"step=%d loss=%.6f lr=0.0003 and words to make it eighty bytes long\n" % (i, 1 / (i + 1))
        for i in range(lines)
    )
    for name, data in (("plain lines", plain), ("step=N lines", steps)):
        reference, pieces = _assembled(data)
        with tempfile.TemporaryDirectory() as directory:
            extractor = MetricsExtractor(Path(directory))
            started = time.perf_counter()
            for chunk in pieces:
                extractor.observe("train", chunk)
            extractor.close()
            spent = time.perf_counter() - started
        print(
            f"metrics, {name}: {spent / lines * 1e6:.2f} us per line against line assembly's"
            f" {reference / lines * 1e6:.2f} us = {spent / reference:.2f} x"
        )


def main() -> None:
    """Print both figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--processes", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    sampling(args.processes, args.seconds)
    metrics(args.lines)
    file_size(args.hours)


if __name__ == "__main__":
    main()
