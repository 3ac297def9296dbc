"""A run's devices as they work: per GPU its latest figures and sparklines, and its processes.

The worker's samples (``telemetry.jsonl``, read by :mod:`x_tui.compute.telemetry_read`) give, per
GPU, utilisation, memory and power over the run; each GPU gets one row: its index and latest
figures, then a sparkline of each over the recent samples. A line above sums them up (the
devices' names, the mean utilisation) and one below gives the run's processes' CPU and memory.
Names come from the run and go through ``safe_text``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Sparkline, Static

from x_tui.compute.telemetry_read import Telemetry
from x_tui.widgets.safe_text import safe_text

SPARK_SAMPLES = 120
"""Samples each sparkline spans."""


def _summary(values: Sequence[float]) -> float:
    return max(values) if values else 0.0


def _figure(value: float | None, unit: str, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def device_line(index: int, row: tuple[float | None, ...] | None) -> Text:
    """A GPU's latest figures on one line: ``0  97%  70.1/79.6G  612W  71C``."""
    if row is None:
        return Text(f"{index:>2}  no sample", style="dim")
    util, used, total, power, temp = row
    memory = f"{used / 1024:.1f}/{total / 1024:.0f}G" if used is not None and total else "-"
    return Text(
        f"{index:>2} {_figure(util, '%'):>4} {memory:>10} {_figure(power, 'W'):>5}"
        f" {_figure(temp, 'C'):>4}"
    )


def _update(line: Static, text: Text) -> None:
    """Show ``text`` in a one-line Static, laying the screen out again only if its length changed
    (the same length at the same width wraps the same)."""
    before = line.content
    same = isinstance(before, Text) and len(before.plain) == len(text.plain)
    line.update(text, layout=not same)


class LiveDevices(Vertical):
    """Every GPU's latest figures and sparklines of utilisation, memory and power."""

    DEFAULT_CSS = """
    LiveDevices {
        height: auto;
        padding: 0 1;
    }
    LiveDevices .device-row {
        height: 1;
    }
    LiveDevices .device-figures {
        width: 30;
    }
    LiveDevices Sparkline {
        width: 1fr;
        margin-right: 1;
    }
    LiveDevices #live-heading {
        height: 1;
        text-style: bold;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        """Start with no samples."""
        super().__init__(id=id)
        self._indexes: tuple[int, ...] = ()
        self._shown: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        """The summary line, the column heading, then one row per GPU once samples come."""
        yield Static(Text("No samples yet.", style="dim"), id="live-summary")
        yield Static(
            Text(f"{'GPU':>2} {'util':>4} {'memory':>10} {'power':>5} {'temp':>4}"),
            id="live-heading",
        )
        yield Static(Text(""), id="live-process")

    async def show(self, telemetry: Telemetry | None, *, running: bool) -> None:
        """Show the samples (``None``: none were recorded, or not yet while ``running``)."""
        latest_at = telemetry.latest.t if telemetry is not None and telemetry.latest else None
        shown = (latest_at, len(telemetry.samples) if telemetry else 0, running)
        if shown == self._shown:
            return  # the same samples as last time: nothing to redraw
        self._shown = shown
        summary = self.query_one("#live-summary", Static)
        heading = self.query_one("#live-heading", Static)
        process = self.query_one("#live-process", Static)
        if telemetry is None or not telemetry.samples:
            text = (
                "No samples yet: the worker samples the devices every few seconds."
                if running
                else "This run recorded no device samples."
            )
            summary.update(Text(text, style="dim"))
            heading.display = False
            process.update(Text(""))
            return
        indexes = tuple(telemetry.device_indexes())
        if indexes != self._indexes:
            await self.query(".device-row").remove()
            rows = [
                Horizontal(
                    Static(classes="device-figures", id=f"figures-{index}"),
                    Sparkline(summary_function=_summary, id=f"util-{index}"),
                    Sparkline(summary_function=_summary, id=f"memory-{index}"),
                    Sparkline(summary_function=_summary, id=f"power-{index}"),
                    classes="device-row",
                )
                for index in indexes
            ]
            if rows:
                await self.mount_all(rows, before=process)
            self._indexes = indexes
        heading.display = bool(indexes)
        latest = telemetry.latest
        names = Counter(telemetry.names.get(index, "GPU") for index in indexes)
        line = Text()
        if indexes:
            line.append_text(safe_text(", ".join(f"{n}x {name}" for name, n in names.items())))
            mean = telemetry.mean_utilization()
            if mean is not None:
                line.append(f" · mean use {mean:.0f}%")
            line.append("   sparklines: util · memory · power", style="dim")
        else:
            line.append("No GPU figures (no nvidia-smi where the run runs).", style="dim")
        _update(summary, line)
        for index in indexes:
            row = latest.gpus.get(index) if latest is not None else None
            figures = self.query_one(f"#figures-{index}", Static)
            figures.update(device_line(index, row), layout=False)  # one line of fixed width
            self.query_one(f"#util-{index}", Sparkline).data = telemetry.series(
                index, "utilization", SPARK_SAMPLES
            )
            self.query_one(f"#memory-{index}", Sparkline).data = telemetry.series(
                index, "memory_used_mib", SPARK_SAMPLES
            )
            self.query_one(f"#power-{index}", Sparkline).data = telemetry.series(
                index, "power_w", SPARK_SAMPLES
            )
        if latest is not None:
            _update(
                process,
                Text(
                    f"processes: {latest.procs if latest.procs is not None else '-'}"
                    f" · CPU {_figure(latest.cpu, '%')}"
                    f" · memory {_figure(latest.rss_mib, ' MiB')}"
                ),
            )
