"""What the runs table shows of each running run beyond its state: progress and ETA, mean GPU
use, cost so far and flags, read from the worker's side files.

:class:`WatchPoller` reads every running run's ``telemetry.jsonl`` and ``metrics.jsonl`` (a local
run's files as they grow, a remote run's through its backend's peek: two small reads), blocking
(call it from a thread worker), at most every :data:`WATCH_SECONDS`. It imports no Textual;
:func:`watch_cells` makes the table's cells.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from x_tui.app.run_sources import RunReader
from x_tui.app.service import Service
from x_tui.compute.output_lines import OutputLines
from x_tui.compute.run_health import cost_so_far, flags_of, run_hourly_price
from x_tui.compute.store import RunHandle
from x_tui.compute.telemetry_read import (
    READ_LIMIT,
    MetricsLines,
    Progress,
    Telemetry,
    TelemetryLines,
    json_line,
    read_metrics,
    read_telemetry,
)
from x_tui.compute.worker.log_metrics import METRICS_NAME
from x_tui.compute.worker.telemetry import TELEMETRY_NAME
from x_tui.widgets.run_cells import EMPTY

WATCH_SECONDS = 5.0
"""How often the runs table's progress, GPU and cost columns are read again."""


@dataclass(frozen=True)
class RunWatch:
    """A running run's progress, GPU use, cost so far and flags, as last read."""

    progress: str | None = None
    gpu_percent: float | None = None
    cost_usd: float | None = None
    flags: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        """Whether there is anything to show."""
        return bool(
            self.progress is not None
            or self.gpu_percent is not None
            or self.cost_usd is not None
            or self.flags
        )


def _watch(
    handle: RunHandle,
    telemetry: Telemetry | None,
    progress: Progress | None,
    *,
    now: float,
    hourly: float | None,
) -> RunWatch:
    return RunWatch(
        progress=progress.text() if progress is not None else None,
        gpu_percent=telemetry.mean_utilization() if telemetry is not None else None,
        cost_usd=cost_so_far(now - handle.submitted_at.timestamp(), hourly),
        flags=tuple(flag.reason for flag in flags_of(telemetry, now=now)),
    )


def watch_cells(watch: RunWatch) -> tuple[Text, Text, Text]:
    """The runs table's progress (its flags first, when it has any), GPU and cost cells."""
    if watch.flags:
        progress = Text("⚠ " + "; ".join(watch.flags), style="bold black on dark_orange")
    else:
        progress = Text(watch.progress or "", style="bold")
    gpu = Text(f"{watch.gpu_percent:.0f}%" if watch.gpu_percent is not None else "")
    cost = Text(f"${watch.cost_usd:,.2f}" if watch.cost_usd is not None else EMPTY, style="dim")
    return progress, gpu, cost


class WatchPoller:
    """Reads the running runs' side files, each run's hourly price looked up once.

    A run whose files are on this machine has them followed (:mod:`x_tui.compute.output_lines`):
    only the lines appended since the last poll are read and parsed, and a file that did not
    change is not opened. A remote run's files are read whole through its backend at each poll.
    The cost and the flags, which change with the time alone, are worked out afresh at every
    poll.
    """

    def __init__(self, service: Service) -> None:
        """Read through ``service``."""
        self._service = service
        self._hourly: dict[str, float | None] = {}
        self._local: dict[str, _LocalFiles | None] = {}

    def poll(self, handles: Iterable[RunHandle], *, now: float) -> dict[str, RunWatch]:
        """Each running run's :class:`RunWatch`, by run id (blocking)."""
        found: dict[str, RunWatch] = {}
        polled: set[str] = set()
        for handle in handles:
            polled.add(handle.run_id)
            if handle.run_id not in self._hourly:
                spec, _note = RunReader(self._service, handle).spec()
                self._hourly[handle.run_id] = (
                    run_hourly_price(self._service.store, handle, spec.resources)
                    if spec is not None
                    else None
                )
            hourly = self._hourly[handle.run_id]
            local = self._local_files(handle)
            try:
                if local is not None:
                    telemetry, progress = local.read()
                else:
                    telemetry = read_telemetry(self._service.peek(handle, TELEMETRY_NAME))
                    progress = read_metrics(self._service.peek(handle, METRICS_NAME)).progress
            except Exception:  # a provider's failure: the state column says it, not these
                if local is not None:  # read whole at the next poll (a refused file again)
                    self._local[handle.run_id] = _LocalFiles(local.outputs)
                found[handle.run_id] = RunWatch()
                continue
            found[handle.run_id] = _watch(handle, telemetry, progress, now=now, hourly=hourly)
        for run_id in self._local.keys() - polled:  # finished or gone: nothing kept of it
            del self._local[run_id]
        return found

    def _local_files(self, handle: RunHandle) -> _LocalFiles | None:
        """The run's side files when they are on this machine (found out once per run)."""
        if handle.run_id not in self._local:
            try:
                files = self._service.run_files(handle)
            except Exception:  # read through the backend each time, as before
                files = None
            self._local[handle.run_id] = _LocalFiles(files.outputs) if files is not None else None
        return self._local[handle.run_id]


class _LocalFiles:
    """A local run's two side files, followed, and what they said when they last changed."""

    def __init__(self, outputs: Path) -> None:
        self.outputs = outputs
        self._telemetry_file = OutputLines(outputs, TELEMETRY_NAME, limit=READ_LIMIT)
        self._metrics_file = OutputLines(outputs, METRICS_NAME, limit=READ_LIMIT)
        self._telemetry_lines = TelemetryLines()
        self._metrics_lines = MetricsLines()
        self._telemetry: Telemetry | None = None
        self._progress: Progress | None = None

    def read(self) -> tuple[Telemetry | None, Progress | None]:
        """The run's telemetry and progress as the files hold them now."""
        telemetry = self._telemetry_file.read()
        metrics = self._metrics_file.read()
        if telemetry is not None:
            if telemetry.restart:
                self._telemetry_lines = TelemetryLines()
            self._telemetry_lines.add(_parsed(telemetry.lines))
            lines = self._telemetry_lines
            if telemetry.rest:  # a line not finished yet counts as a whole read counts it
                lines = lines.copy()
                lines.add(_parsed([telemetry.rest]))
            self._telemetry = lines.telemetry()
        if metrics is not None:
            if metrics.restart:
                self._metrics_lines = MetricsLines()
            self._metrics_lines.add(_parsed(metrics.lines))
            if metrics.rest:
                finished = self._metrics_lines.copy()
                finished.add(_parsed([metrics.rest]))
                self._progress = finished.progress
            else:
                self._progress = self._metrics_lines.progress
        return self._telemetry, self._progress


def _parsed(lines: Iterable[bytes]) -> list[dict[str, object]]:
    return [line for raw in lines if (line := json_line(raw)) is not None]
