"""Metrics read from a task's plain output, in ``metrics.jsonl`` beside the manifest.

The worker hands :class:`MetricsExtractor` every piece its line assembly cuts from a task's
streams, so metrics are found where the log is written and a remote run's are read without its
log. Without any library in the user's code it recognises:

- a JSON object on a line of its own: each finite number in it is a metric (``{"step": 3,
  "loss": 0.5}``);
- ``key=value`` and ``key: value`` pairs on a line that carries a step-like key (``step``,
  ``global_step``, ``iter``, ``iteration``, ``epoch``): ``step=10 loss=0.31 lr: 3e-4``;
- a tqdm-style bar (``45/100 [00:04<00:05, 10.00it/s]``), most often redrawn with ``\\r``:
  the run's progress, its rate and ETA;
- a job's own regular expressions: each named group holding a number is a metric, a group named
  ``step`` is the step.

A metric's step is the line's step-like value, else one past its own last step. The file is JSON
lines (``docs/telemetry.md``): a header ``{"x_tui_metrics": 1}``, points ``{"t": T, "task":
NAME, "step": S, "values": {NAME: V, ...}}`` and progress ``{"t": T, "task": NAME, "progress":
{"n": N, "total": T, "percent": P, "rate": R, "eta_seconds": E}}`` (at most one a second). It
stays small: at most :data:`MAX_SERIES` metrics, and once it holds :data:`MAX_LINES` lines (or twice
what the last rewrite left) it is rewritten (renamed over), each metric thinned to every other point
while it has more than :data:`MAX_POINTS`.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. Any error
stops the extraction with one note in the combined log; the task goes on.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from x_tui.compute.worker.line_assembly import Piece, PieceKind

METRICS_NAME = "metrics.jsonl"
"""The metrics' file, in the run's outputs beside ``manifest.json``."""
FORMAT_VERSION = 1
"""The value of the header's ``x_tui_metrics`` key."""
STEP_KEYS = ("step", "global_step", "iter", "iteration", "epoch")
"""Keys that make a line of ``key=value`` pairs a metrics line, and give its step, in order."""
MAX_SERIES = 32
"""Metrics kept at most; more names are ignored."""
MAX_POINTS = 1000
"""Points per metric kept at full resolution when the file is rewritten."""
MAX_LINES = 20000
"""Lines the file may reach before it is rewritten smaller."""
PROGRESS_SECONDS = 1.0
"""Least time between two progress lines."""

_MAX_TEXT = 8192
_NAME = re.compile(r"[A-Za-z_][\w./-]{0,63}$")
_STEP_WORDS = (b"step", b"epoch", b"iter")
_PAIR = re.compile(
    r"(?<![\w./-])([A-Za-z_][\w./-]{0,63})\s*[=:]\s*"
    r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?![\w.])"
)
_BAR = re.compile(
    r"(\d+)/(\d+)\s*\[(?:(\d+:)?(\d+):(\d+))<(?:(\d+:)?(\d+):(\d+)|\?)"
    r"(?:,\s*([\d.]+)\s*(s/[A-Za-z]+|[A-Za-z]+/s))?"
)


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _clock_seconds(hours: str | None, minutes: str, seconds: str) -> int:
    return int((hours or "0:")[:-1]) * 3600 + int(minutes) * 60 + int(seconds)


def parse_progress(text: str) -> dict[str, float | None] | None:
    """A tqdm-style bar's progress: ``n``, ``total``, ``percent``, ``rate``, ``eta_seconds``.

    Returns:
        The figures of the last bar on the line; ``None`` when it holds none.
    """
    found = None
    for match in _BAR.finditer(text):
        found = match
    if found is None:
        return None
    n, total = int(found.group(1)), int(found.group(2))
    if total <= 0 or n > total:
        return None
    eta = (
        float(_clock_seconds(found.group(6), found.group(7), found.group(8)))
        if found.group(7) is not None
        else None
    )
    rate = None
    if found.group(9) is not None:
        try:
            value = float(found.group(9))
        except ValueError:
            value = 0.0
        if value > 0:
            rate = 1 / value if found.group(10).startswith("s/") else value
    return {
        "n": n,
        "total": total,
        "percent": round(100 * n / total, 2),
        "rate": round(rate, 4) if rate is not None else None,
        "eta_seconds": eta,
    }


def parse_json_metrics(text: str) -> tuple[float | None, dict[str, float]] | None:
    """A JSON-object line's step (if it has a step-like key) and its other numeric fields."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    step: float | None = None
    for key in STEP_KEYS:
        step = _finite(data.get(key))
        if step is not None:
            break
    values = {
        key: number
        for key, value in data.items()
        if key not in STEP_KEYS and _NAME.match(key) and (number := _finite(value)) is not None
    }
    return (step, values) if values else None


def parse_pairs(text: str) -> tuple[float, dict[str, float]] | None:
    """A line's ``key=value`` / ``key: value`` pairs, when one key is step-like."""
    pairs: dict[str, float] = {}
    for match in _PAIR.finditer(text):
        number = float(match.group(2))
        if math.isfinite(number):
            pairs[match.group(1)] = number
    step = None
    for key in STEP_KEYS:
        if key in pairs:
            step = pairs[key]
            break
    if step is None:
        return None
    values = {key: value for key, value in pairs.items() if key not in STEP_KEYS}
    return (step, values) if values else None


def compile_patterns(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    """The job's own patterns, compiled.

    Raises:
        ValueError: If one is not a regular expression or has no named group.
    """
    compiled = []
    for pattern in patterns:
        try:
            regex = re.compile(pattern)
        except re.error as error:
            raise ValueError(
                f"metric pattern {pattern!r} is not a regular expression: {error}"
            ) from None
        if not regex.groupindex:
            raise ValueError(f"metric pattern {pattern!r} has no named group, (?P<name>...)")
        compiled.append(regex)
    return compiled


class MetricsExtractor:
    """Finds metrics and progress in a task's pieces and keeps them in the metrics file."""

    def __init__(
        self,
        outputs: Path,
        *,
        patterns: Sequence[str] = (),
        note: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Start an empty metrics file in ``outputs``.

        Args:
            outputs: The run's outputs.
            patterns: The job's own regular expressions (named groups).
            note: Writes one line to the combined log, when extraction stops on an error.
            clock: The wall clock lines are stamped with.

        Raises:
            ValueError: If a pattern is refused (:func:`compile_patterns`).
            OSError: If the file cannot be written.
        """
        self._path = Path(outputs) / METRICS_NAME
        self._patterns = compile_patterns(patterns)
        self._note = note
        self._clock = clock
        self._series: dict[str, list[list[float]]] = {}
        self._lines = 0
        self._limit = MAX_LINES
        self._progress: dict[str, object] | None = None  # held back by the one-a-second rule
        self._latest: dict[str, object] | None = None
        self._progress_at = -math.inf
        self._failed = False
        self._pending: list[str] = []
        self._rewrite()

    def observe(self, task: str, pieces: Iterable[Piece]) -> None:
        """Read one stream's pieces (never raises: an error stops extraction, with a note)."""
        if self._failed:
            return
        try:
            for piece in pieces:
                text = piece.text
                if piece.kind is PieceKind.CLOSE or not text:
                    continue
                if not self._patterns and not _worth_reading(text):
                    continue  # most output: one scan of the whole piece, no line looked at
                lines = text.split(b"\n") if piece.kind is PieceKind.LINE else [text]
                for raw in lines:
                    self._line(task, raw[:_MAX_TEXT])
            self._flush()
        except Exception as error:
            self._failed = True
            if self._note is not None:
                self._note(f"x-tui worker: metrics stopped ({type(error).__name__}: {error})")

    def close(self) -> None:
        """Write the latest progress held back by the one-a-second rule."""
        if self._failed:
            return
        with contextlib.suppress(OSError):
            if self._progress is not None:
                self._append(self._progress)
                self._progress = None
            self._flush()

    def _line(self, task: str, raw: bytes) -> None:
        text: str | None = None
        if b"/" in raw and b"[" in raw:
            text = raw.decode("utf-8", "replace")
            progress = parse_progress(text)
            if progress is not None:
                self._set_progress(task, progress)
        for regex in self._patterns:
            text = text if text is not None else raw.decode("utf-8", "replace")
            for match in regex.finditer(text):
                values = {
                    name: number
                    for name, value in match.groupdict().items()
                    if value is not None and (number := _to_float(value)) is not None
                }
                step = values.pop("step", None)
                if values:
                    self._add(task, step, values)
        first = raw.lstrip()[:1]
        if first == b"{":
            text = text if text is not None else raw.decode("utf-8", "replace")
            parsed = parse_json_metrics(text)
            if parsed is not None:
                self._add(task, *parsed)
                return
        if any(word in raw.lower() for word in _STEP_WORDS):
            text = text if text is not None else raw.decode("utf-8", "replace")
            pairs = parse_pairs(text)
            if pairs is not None:
                self._add(task, *pairs)

    def _set_progress(self, task: str, progress: dict[str, float | None]) -> None:
        now = self._clock()
        self._progress = self._latest = {"t": round(now, 3), "task": task, "progress": progress}
        if now - self._progress_at >= PROGRESS_SECONDS:
            self._progress_at = now
            self._append(self._progress)
            self._progress = None

    def _add(self, task: str, step: float | None, values: dict[str, float]) -> None:
        kept: dict[str, float] = {}
        for name, value in values.items():
            series = self._series.get(name)
            if series is None:
                if len(self._series) >= MAX_SERIES:
                    continue
                series = self._series[name] = []
            at = step if step is not None else (series[-1][0] + 1 if series else 0.0)
            series.append([at, value])
            kept[name] = value
        if not kept:
            return
        record: dict[str, object] = {"t": round(self._clock(), 3), "task": task}
        at = step if step is not None else self._series[next(iter(kept))][-1][0]
        record["step"] = int(at) if at.is_integer() else at
        record["values"] = kept
        self._append(record)

    def _append(self, record: dict[str, object]) -> None:
        self._lines += 1
        if self._lines >= self._limit:
            self._rewrite()
            return
        self._pending.append(json.dumps(record, separators=(",", ":")))

    def _flush(self) -> None:
        """Append the lines found in the pieces read last, with one write."""
        if not self._pending:
            return
        text = "\n".join(self._pending) + "\n"
        self._pending.clear()
        with open(self._path, "a", encoding="utf-8") as file:
            file.write(text)

    def _rewrite(self) -> None:
        self._pending.clear()  # every point is in the series the file is rewritten from
        lines = [json.dumps({"x_tui_metrics": FORMAT_VERSION})]
        for name, series in self._series.items():
            while len(series) > MAX_POINTS:
                series[:] = [*series[:-1:2], series[-1]]  # the first and the latest stay
            lines.extend(
                json.dumps({"step": step, "values": {name: value}}, separators=(",", ":"))
                for step, value in series
            )
        if self._latest is not None:
            lines.append(json.dumps(self._latest, separators=(",", ":")))
        self._progress = None
        self._lines = len(lines)
        self._limit = max(MAX_LINES, 2 * len(lines))
        temporary = self._path.with_name(self._path.name + ".tmp")
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(temporary, self._path)


def _worth_reading(text: bytes) -> bool:
    """Whether a piece may hold metrics or a bar: a step-like word, a ``{``, or ``/`` and ``[``."""
    if b"{" in text or (b"/" in text and b"[" in text):
        return True
    lowered = text.lower()
    return any(word in lowered for word in _STEP_WORDS)


def _to_float(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
