"""What the runs table shows of each running run beyond its state: progress and ETA, mean GPU
use, cost so far and flags, read from the worker's side files.

:class:`WatchPoller` reads every running run's ``telemetry.jsonl`` and ``metrics.jsonl`` through
the service (a local run's files directly, a remote run's through its backend's peek: two small
reads), blocking (call it from a thread worker), at most every :data:`WATCH_SECONDS`. It
imports no Textual; :func:`watch_cells` makes the table's cells.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from x_tui.app.run_sources import RunReader
from x_tui.app.service import Service
from x_tui.compute.run_health import cost_so_far, flags_of, run_hourly_price
from x_tui.compute.store import RunHandle
from x_tui.compute.telemetry_read import RunMetrics, Telemetry, read_metrics, read_telemetry
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
    metrics: RunMetrics,
    *,
    now: float,
    hourly: float | None,
) -> RunWatch:
    progress = metrics.progress
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

    A run whose files are on this machine has them read again only once they changed (their
    size or modification time); a run whose side files stand still is not read at every poll.
    The cost and the flags, which change with the time alone, are worked out afresh at every
    poll.
    """

    def __init__(self, service: Service) -> None:
        """Read through ``service``."""
        self._service = service
        self._hourly: dict[str, float | None] = {}
        self._outputs: dict[str, Path | None] = {}
        self._read: dict[str, _Read] = {}

    def poll(self, handles: Iterable[RunHandle], *, now: float) -> dict[str, RunWatch]:
        """Each running run's :class:`RunWatch`, by run id (blocking)."""
        found: dict[str, RunWatch] = {}
        for handle in handles:
            if handle.run_id not in self._hourly:
                spec, _note = RunReader(self._service, handle).spec()
                self._hourly[handle.run_id] = (
                    run_hourly_price(self._service.store, handle, spec.resources)
                    if spec is not None
                    else None
                )
            hourly = self._hourly[handle.run_id]
            stamps = self._stamps(handle)
            kept = self._read.get(handle.run_id)
            if stamps is not None and kept is not None and kept.stamps == stamps:
                found[handle.run_id] = _watch(
                    handle, kept.telemetry, kept.metrics, now=now, hourly=hourly
                )
                continue
            try:
                telemetry = read_telemetry(self._service.peek(handle, TELEMETRY_NAME))
                metrics = read_metrics(self._service.peek(handle, METRICS_NAME))
            except Exception:  # a provider's failure: the state column says it, not these
                found[handle.run_id] = RunWatch()
                continue
            if stamps is not None:
                self._read[handle.run_id] = _Read(stamps, telemetry, metrics)
            found[handle.run_id] = _watch(handle, telemetry, metrics, now=now, hourly=hourly)
        return found

    def _stamps(self, handle: RunHandle) -> tuple[_Stamp, _Stamp] | None:
        """The size and time of the run's two side files, when they are on this machine."""
        if handle.run_id not in self._outputs:
            try:
                files = self._service.run_files(handle)
            except Exception:  # read through the backend each time, as before
                files = None
            self._outputs[handle.run_id] = files.outputs if files is not None else None
        outputs = self._outputs[handle.run_id]
        if outputs is None:
            return None
        return _stamp(outputs / TELEMETRY_NAME), _stamp(outputs / METRICS_NAME)


_Stamp = tuple[int, int] | None


def _stamp(path: Path) -> _Stamp:
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


@dataclass(frozen=True)
class _Read:
    """A run's side files as last read, and their stamps then."""

    stamps: tuple[_Stamp, _Stamp]
    telemetry: Telemetry | None
    metrics: RunMetrics
