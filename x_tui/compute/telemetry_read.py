"""Reading a run's ``telemetry.jsonl`` and ``metrics.jsonl``, whatever bytes they hold.

The worker writes them (``telemetry``, ``log_metrics``; ``docs/telemetry.md``); a backend's
peek (local: the file itself) hands their bytes here. Every line is checked: a line that is not
a JSON object of the expected shape is skipped, a figure that is not a finite number is
``None``, so a damaged or hostile file gives less, never an error. :func:`metrics_document` is
the object ``x-tui metrics --json`` prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from x_tui.compute.worker.records import JsonValue

READ_LIMIT = 16 << 20
"""Bytes of a side file read at most (the worker keeps them near a megabyte)."""
RECENT_SAMPLES = 60
"""Samples in a device's recent series."""
GPU_FIELDS = ("utilization", "memory_used_mib", "memory_total_mib", "power_w", "temperature_c")
"""A sample's GPU figures, in the order the file holds them after the index."""
_MAX_NAME = 64
_MAX_GPUS = 64


def _figure(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class Sample:
    """One sample: when, each GPU's figures by index, the run's processes' CPU and memory."""

    t: float
    gpus: dict[int, tuple[float | None, ...]]
    cpu: float | None
    rss_mib: float | None
    procs: int | None
    last_output: float | None = None


@dataclass(frozen=True)
class Telemetry:
    """A run's samples, oldest first, and the settings the worker took them with."""

    interval: float | None = None
    stall_seconds: float | None = None
    started: float | None = None
    memory_limit_mib: float | None = None
    names: dict[int, str] = field(default_factory=dict)
    samples: tuple[Sample, ...] = ()

    @property
    def latest(self) -> Sample | None:
        """The newest sample, if any."""
        return self.samples[-1] if self.samples else None

    def device_indexes(self) -> list[int]:
        """Every GPU index a sample or the names line holds, ascending."""
        seen = set(self.names)
        for sample in self.samples[-RECENT_SAMPLES:]:
            seen.update(sample.gpus)
        return sorted(seen)

    def series(self, index: int, figure: str, count: int = RECENT_SAMPLES) -> list[float]:
        """One GPU figure (a :data:`GPU_FIELDS` name) over the last ``count`` samples."""
        position = GPU_FIELDS.index(figure)
        values = []
        for sample in self.samples[-count:]:
            row = sample.gpus.get(index)
            value = row[position] if row is not None else None
            values.append(value if value is not None else 0.0)
        return values

    def mean_utilization(self, count: int = 12) -> float | None:
        """The mean GPU utilisation over the last ``count`` samples, ``None`` without GPUs."""
        values = [
            row[0]
            for sample in self.samples[-count:]
            for row in sample.gpus.values()
            if row[0] is not None
        ]
        return sum(values) / len(values) if values else None


def json_lines(data: bytes | None) -> list[dict[str, object]]:
    """The JSON objects of a JSON-lines file's bytes (of its first :data:`READ_LIMIT` bytes),
    in order; a line that is not one is skipped."""
    if not data:
        return []
    found = []
    for raw in data[:READ_LIMIT].split(b"\n"):
        line = json_line(raw)
        if line is not None:
            found.append(line)
    return found


def json_line(raw: bytes) -> dict[str, object] | None:
    """One line's JSON object; ``None`` for a line that is not one."""
    if not raw.startswith(b"{"):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def read_telemetry(data: bytes | None) -> Telemetry | None:
    """The telemetry in a ``telemetry.jsonl``'s bytes; ``None`` without a header line."""
    lines = TelemetryLines()
    lines.add(json_lines(data))
    return lines.telemetry()


class TelemetryLines:
    """A ``telemetry.jsonl`` read line by line as it grows (:func:`read_telemetry` reads a
    whole one the same way)."""

    def __init__(self) -> None:
        """Nothing read yet."""
        self._header: dict[str, object] | None = None
        self._foreign = False
        self._names: dict[int, str] = {}
        self._samples: list[Sample] = []

    def add(self, lines: Iterable[dict[str, object]]) -> None:
        """Take the file's next lines (a file whose first line is no header holds nothing)."""
        for line in lines:
            if self._foreign:
                return
            if self._header is None:
                if line.get("x_tui_telemetry") != 1:
                    self._foreign = True
                    return
                self._header = line
                continue
            devices = line.get("devices")
            if isinstance(devices, list):
                for entry in devices[:_MAX_GPUS]:
                    if (
                        isinstance(entry, list)
                        and len(entry) == 2
                        and isinstance(entry[0], int)
                        and isinstance(entry[1], str)
                    ):
                        self._names[entry[0]] = entry[1][:_MAX_NAME]
                continue
            sample = _sample(line)
            if sample is not None:
                self._samples.append(sample)

    def copy(self) -> TelemetryLines:
        """Another reader that has read what this one has."""
        other = TelemetryLines()
        other._header = self._header
        other._foreign = self._foreign
        other._names = dict(self._names)
        other._samples = list(self._samples)
        return other

    def telemetry(self) -> Telemetry | None:
        """The telemetry of the lines taken so far; ``None`` without a header line."""
        header = self._header
        if header is None or self._foreign:
            return None
        return Telemetry(
            interval=_figure(header.get("interval")),
            stall_seconds=_figure(header.get("stall_seconds")),
            started=_figure(header.get("started")),
            memory_limit_mib=_figure(header.get("memory_limit_mib")),
            names=dict(self._names),
            samples=tuple(self._samples),
        )


def _sample(line: dict[str, object]) -> Sample | None:
    when = _figure(line.get("t"))
    if when is None:
        return None
    gpus: dict[int, tuple[float | None, ...]] = {}
    rows = line.get("gpus")
    if isinstance(rows, list):
        for row in rows[:_MAX_GPUS]:
            if isinstance(row, list) and len(row) == 6 and isinstance(row[0], int):
                gpus[row[0]] = tuple(_figure(value) for value in row[1:])
    procs = line.get("procs")
    return Sample(
        t=when,
        gpus=gpus,
        cpu=_figure(line.get("cpu")),
        rss_mib=_figure(line.get("rss_mib")),
        procs=procs if isinstance(procs, int) and not isinstance(procs, bool) else None,
        last_output=_figure(line.get("last_output")),
    )


@dataclass(frozen=True)
class Progress:
    """A tqdm-style bar's latest state."""

    n: float
    total: float
    percent: float
    rate: float | None
    eta_seconds: float | None
    t: float | None
    task: str | None

    def describe(self) -> dict[str, JsonValue]:
        """The progress as JSON."""
        return {
            "n": self.n,
            "total": self.total,
            "percent": self.percent,
            "rate": self.rate,
            "eta_seconds": self.eta_seconds,
            "at": self.t,
            "task": self.task,
        }

    def text(self) -> str:
        """``45% ETA 5m`` or ``45%``."""
        eta = f" ETA {duration_text(self.eta_seconds)}" if self.eta_seconds is not None else ""
        return f"{self.percent:.0f}%{eta}"


@dataclass(frozen=True)
class RunMetrics:
    """A run's metrics by name, each ``[(step, value), ...]`` in file order, and its progress."""

    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    progress: Progress | None = None


def read_metrics(data: bytes | None, *, max_series: int = 64) -> RunMetrics:
    """The metrics in a ``metrics.jsonl``'s bytes (nothing, for a missing or damaged file)."""
    lines = MetricsLines(max_series=max_series)
    lines.add(json_lines(data))
    return lines.metrics()


class MetricsLines:
    """A ``metrics.jsonl`` read line by line as it grows (:func:`read_metrics` reads a whole
    one the same way)."""

    def __init__(self, *, max_series: int = 64) -> None:
        """Nothing read yet; at most ``max_series`` metrics are kept."""
        self._max_series = max_series
        self._started = False
        self._foreign = False
        self._series: dict[str, list[tuple[float, float]]] = {}
        self._progress: Progress | None = None

    @property
    def progress(self) -> Progress | None:
        """The latest progress bar of the lines taken so far, if any."""
        return None if self._foreign else self._progress

    def add(self, lines: Iterable[dict[str, object]]) -> None:
        """Take the file's next lines (a file whose first line is no header holds nothing)."""
        for line in lines:
            if self._foreign:
                return
            if not self._started:
                if line.get("x_tui_metrics") != 1:
                    self._foreign = True
                    return
                self._started = True
                continue
            bar = line.get("progress")
            if isinstance(bar, dict):
                self._progress = _progress(bar, line) or self._progress
                continue
            step = _figure(line.get("step"))
            values = line.get("values")
            if step is None or not isinstance(values, dict):
                continue
            series = self._series
            for name, value in values.items():
                number = _figure(value)
                if not isinstance(name, str) or number is None or len(name) > _MAX_NAME:
                    continue
                if name not in series:
                    if len(series) >= self._max_series:
                        continue
                    series[name] = []
                series[name].append((step, number))

    def copy(self) -> MetricsLines:
        """Another reader that has read what this one has."""
        other = MetricsLines(max_series=self._max_series)
        other._started = self._started
        other._foreign = self._foreign
        other._series = {name: list(points) for name, points in self._series.items()}
        other._progress = self._progress
        return other

    def metrics(self) -> RunMetrics:
        """The metrics of the lines taken so far."""
        if self._foreign:
            return RunMetrics()
        return RunMetrics(
            series={name: list(points) for name, points in self._series.items()},
            progress=self._progress,
        )


def _progress(bar: dict[str, object], line: dict[str, object]) -> Progress | None:
    n, total, percent = (
        _figure(bar.get("n")),
        _figure(bar.get("total")),
        _figure(bar.get("percent")),
    )
    if n is None or total is None or percent is None or not 0 <= percent <= 100:
        return None
    task = line.get("task")
    return Progress(
        n=n,
        total=total,
        percent=percent,
        rate=_figure(bar.get("rate")),
        eta_seconds=_figure(bar.get("eta_seconds")),
        t=_figure(line.get("t")),
        task=task[:_MAX_NAME] if isinstance(task, str) else None,
    )


def duration_text(seconds: float) -> str:
    """``45s``, ``12m``, ``3h05m``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m"


def metrics_document(
    telemetry: Telemetry | None, metrics: RunMetrics, *, recent: int = RECENT_SAMPLES
) -> dict[str, JsonValue]:
    """The object ``x-tui metrics --json`` prints.

    Returns:
        ``devices`` (per GPU: ``index``, ``name``, the latest ``utilization``,
        ``memory_used_mib``, ``memory_total_mib``, ``power_w``, ``temperature_c``, ``at`` and
        ``series``, each figure's last ``recent`` values), ``process`` (the latest ``cpu_percent``,
        ``rss_mib``, ``processes``, ``at``, or ``null``), ``metrics`` (name -> ``[[step,
        value], ...]``) and ``progress`` (or ``null``).
    """
    devices: list[JsonValue] = []
    process: JsonValue = None
    if telemetry is not None:
        latest = telemetry.latest
        for index in telemetry.device_indexes():
            row = latest.gpus.get(index) if latest is not None else None
            device: dict[str, JsonValue] = {
                "index": index,
                "name": telemetry.names.get(index),
            }
            for position, figure in enumerate(GPU_FIELDS):
                device[figure] = row[position] if row is not None else None
            device["at"] = latest.t if latest is not None else None
            device["series"] = {
                figure: list(_recent(telemetry, index, position, recent))
                for position, figure in enumerate(GPU_FIELDS)
            }
            devices.append(device)
        if latest is not None:
            process = {
                "cpu_percent": latest.cpu,
                "rss_mib": latest.rss_mib,
                "processes": latest.procs,
                "at": latest.t,
            }
    return {
        "devices": devices,
        "process": process,
        "metrics": {
            name: [[step, value] for step, value in points]
            for name, points in metrics.series.items()
        },
        "progress": metrics.progress.describe() if metrics.progress is not None else None,
    }


def _recent(telemetry: Telemetry, index: int, position: int, count: int) -> list[JsonValue]:
    values: list[JsonValue] = []
    for sample in telemetry.samples[-count:]:
        row = sample.gpus.get(index)
        values.append(row[position] if row is not None else None)
    return values
