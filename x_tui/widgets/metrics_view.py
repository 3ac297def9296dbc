"""A run's metrics, read from its plain logs by the worker: a plot of one against step, and a
table of every metric's latest value.

The worker's ``metrics.jsonl`` (read by :mod:`x_tui.compute.telemetry_read`) holds each metric's
``(step, value)`` points. The plot is Textual's own ``Sparkline`` (multi-row), which draws a few
hundred points at 80x24 in well under a millisecond and needs no dependency; ``m`` picks the
next metric (or choose a row of the table), ``l`` toggles a log scale. Metric names come from
the run and go through ``safe_text``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Sparkline, Static

from x_tui.compute.telemetry_read import RunMetrics
from x_tui.widgets.measured_table import MeasuredTable
from x_tui.widgets.safe_text import safe_text

_EMPTY = (
    "No metrics in the log yet. x-tui reads JSON lines with numbers, key=value lines that "
    "carry a step (step=10 loss=0.3), tqdm bars, and the job's metric_patterns."
)


def _summary(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _value(value: float) -> str:
    return f"{value:.4g}"


def scaled(values: Sequence[float], *, log: bool) -> list[float]:
    """The values to plot: as they are, or their log10 (a value at or below 0 is left out)."""
    if not log:
        return list(values)
    return [math.log10(value) for value in values if value > 0]


class MetricsView(Vertical):
    """The chosen metric plotted against step, and every metric's latest value.

    | Key | Description |
    | :- | :- |
    | m | Plot the next metric. |
    | l | Toggle a log scale. |
    """

    DEFAULT_CSS = """
    MetricsView {
        height: 1fr;
        padding: 0 1;
    }
    MetricsView #metrics-title {
        height: 1;
    }
    MetricsView #metrics-plot {
        height: 6;
        margin: 0 0 1 0;
    }
    MetricsView #metrics-table {
        height: 1fr;
    }
    """

    BINDINGS = [
        Binding("m", "next_metric", "Next metric", id="metrics.next"),
        Binding("l", "toggle_log", "Log scale", id="metrics.log"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        """Start with no metrics."""
        super().__init__(id=id)
        self.metrics = RunMetrics()
        self.chosen: str | None = None
        self.log_scale = False
        self._names: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        """The title line, the plot, the table."""
        yield Static(Text(_EMPTY, style="dim"), id="metrics-title")
        yield Sparkline(summary_function=_summary, id="metrics-plot")
        table = MeasuredTable(id="metrics-table", cursor_type="row")
        table.add_columns("metric", "latest", "step", "min", "max", "points")
        yield table

    def show(self, metrics: RunMetrics) -> None:
        """Show the run's metrics as last read (nothing is redrawn when they did not change)."""
        if metrics == self.metrics and self._names == tuple(metrics.series):
            return
        self.metrics = metrics
        self._show()

    def _show(self) -> None:
        metrics = self.metrics
        names = tuple(metrics.series)
        if self.chosen not in names:
            self.chosen = names[0] if names else None
        table = self.query_one("#metrics-table", DataTable)
        if names != self._names:
            table.clear()
            for name in names:
                table.add_row(*self._cells(name), key=name)
            self._names = names
        else:
            for name in names:
                for column, cell in zip(table.columns, self._cells(name), strict=True):
                    table.update_cell(name, column, cell)
        self._plot()

    def _cells(self, name: str) -> list[Text]:
        points = self.metrics.series[name]
        values = [value for _step, value in points]
        step, latest = points[-1]
        return [
            safe_text(name, "bold" if name == self.chosen else ""),
            Text(_value(latest)),
            Text(f"{step:g}"),
            Text(_value(min(values))),
            Text(_value(max(values))),
            Text(str(len(points))),
        ]

    def _plot(self) -> None:
        title = self.query_one("#metrics-title", Static)
        plot = self.query_one("#metrics-plot", Sparkline)
        if self.chosen is None:
            title.update(Text(_EMPTY, style="dim"))
            plot.data = []
            return
        points = self.metrics.series[self.chosen]
        values = [value for _step, value in points]
        line = safe_text(self.chosen, "bold")
        line.append(f" · steps {points[0][0]:g} to {points[-1][0]:g}")
        line.append(f" · {_value(min(values))} to {_value(max(values))}")
        if self.log_scale:
            line.append(" · log scale", style="bold")
        line.append("   m next · l log", style="dim")
        title.update(line)
        plot.data = scaled(values, log=self.log_scale)

    def action_next_metric(self) -> None:
        """Plot the next metric."""
        if not self._names:
            return
        index = self._names.index(self.chosen) if self.chosen in self._names else -1
        self.chosen = self._names[(index + 1) % len(self._names)]
        self._show()
        self.query_one("#metrics-table", DataTable).move_cursor(row=self._names.index(self.chosen))

    def action_toggle_log(self) -> None:
        """Plot on a log scale, or back."""
        self.log_scale = not self.log_scale
        self._plot()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Plot the metric of the highlighted row."""
        key = event.row_key.value
        if key is not None and key in self._names and key != self.chosen:
            self.chosen = key
            self._show()
