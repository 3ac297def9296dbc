"""``x-tui metrics RUN_ID [--json] [--follow]``, and what ``status --json`` adds about a run.

A run's ``telemetry.jsonl`` and ``metrics.jsonl`` (the worker's side files, beside its manifest)
are read wherever its outputs can be read: this machine, a fetched copy, or the backend's peek
(a small read, never the whole log). ``--json`` prints :func:`~x_tui.compute.telemetry_read.
metrics_document`'s object; ``--follow`` prints one line (one compact object with ``--json``)
each time a new sample or metric came, until the run ends.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from x_tui.cli.attempt_logs import NoOutputsHere, Reader, outputs_reader
from x_tui.cli.output import print_json, say
from x_tui.compute.backend import (
    SPEC_NAME,
    Capability,
    ComputeBackend,
    RunState,
    capabilities_of,
)
from x_tui.compute.operations import backend_for
from x_tui.compute.outputs import OutputTooLargeError, OutsideOutputsError
from x_tui.compute.price_quotes import quoted_hourly_price
from x_tui.compute.run_health import cost_so_far, flags_of, hourly_price
from x_tui.compute.sanitize import escaped
from x_tui.compute.store import RunHandle, RunStore, backend_state_dir
from x_tui.compute.telemetry_read import (
    RunMetrics,
    Telemetry,
    metrics_document,
    read_metrics,
    read_telemetry,
)
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.log_metrics import METRICS_NAME
from x_tui.compute.worker.record_files import read_json_file
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import read_job_spec
from x_tui.compute.worker.telemetry import TELEMETRY_NAME

FOLLOW_SECONDS = 2.0
"""How often ``--follow`` reads the side files again."""
_SPEC_LIMIT = 1 << 20


def _read(reader: Reader, name: str) -> bytes | None:
    try:
        return reader(name)
    except (OSError, OutsideOutputsError, OutputTooLargeError, UserError):
        return None


def read_side_files(reader: Reader) -> tuple[Telemetry | None, RunMetrics]:
    """A run's samples and metrics, through a reader of its outputs (nothing when missing)."""
    return read_telemetry(_read(reader, TELEMETRY_NAME)), read_metrics(_read(reader, METRICS_NAME))


def spec_hourly_price(handle: RunHandle) -> float | None:
    """The run's hourly price (quoted at submit, else from its staged spec's resources);
    ``None`` when unknown or unbilled."""
    quoted = quoted_hourly_price(RunStore(), handle.run_id)
    if quoted is not None:
        return quoted
    candidates = []
    run_dir = handle.details.get("run_dir")
    if run_dir:
        candidates.append(Path(run_dir) / SPEC_NAME)
    state_dir = handle.settings.get("state_dir")
    root = backend_state_dir(state_dir if isinstance(state_dir, str) else None, handle.backend)
    candidates.append(root / handle.run_id / SPEC_NAME)
    for path in candidates:
        try:
            data = read_json_file(path, max_bytes=_SPEC_LIMIT)
            if not isinstance(data, dict):
                continue
            spec = read_job_spec(data)
        except (OSError, UserError, ValueError, TypeError, AttributeError):
            continue
        return hourly_price(handle.backend, spec.resources)
    return None


def watch_json(
    handle: RunHandle, backend: ComputeBackend, state: RunState | None, *, now: float
) -> dict[str, JsonValue]:
    """What ``status --json`` adds about one run: ``progress``, ``cost_so_far`` and ``flags``.

    A finished run has no flags and no cost so far (``null``); its last progress is kept where
    its outputs are on this machine (a finished remote run is not peeked at).
    """
    running = state is not None and not state.is_final
    if not running and Capability.LOCAL_FILES not in capabilities_of(backend):
        return {"progress": None, "cost_so_far": None, "flags": []}
    try:
        reader, _where = outputs_reader(backend, handle)
    except NoOutputsHere:
        return {"progress": None, "cost_so_far": None, "flags": []}
    telemetry, metrics = read_side_files(reader)
    flags = flags_of(telemetry, now=now) if running else ()
    elapsed = now - handle.submitted_at.timestamp()
    return {
        "progress": metrics.progress.describe() if metrics.progress is not None else None,
        "cost_so_far": cost_so_far(elapsed, spec_hourly_price(handle)) if running else None,
        "flags": [flag.describe() for flag in flags],
    }


def _text_lines(telemetry: Telemetry | None, metrics: RunMetrics) -> list[str]:
    lines: list[str] = []
    if metrics.progress is not None:
        lines.append(f"progress  {metrics.progress.text()}")
    latest = telemetry.latest if telemetry is not None else None
    if telemetry is not None and latest is not None:
        for index in telemetry.device_indexes():
            row = latest.gpus.get(index)
            if row is None:
                continue
            util, used, total, power, temp = row
            name = escaped(telemetry.names.get(index, ""))
            lines.append(
                f"gpu {index}  {name}  util {_num(util)}%  mem {_num(used)}/{_num(total)} MiB"
                f"  {_num(power)} W  {_num(temp)} C"
            )
        lines.append(
            f"process   cpu {_num(latest.cpu)}%  rss {_num(latest.rss_mib)} MiB"
            f"  {latest.procs if latest.procs is not None else '-'} processes"
        )
    for name, points in metrics.series.items():
        step, value = points[-1]
        lines.append(f"{escaped(name)}  {value:.6g}  (step {step:g}, {len(points)} points)")
    if not lines:
        lines.append("no samples or metrics yet")
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def metrics(args: argparse.Namespace) -> int:
    """``x-tui metrics RUN_ID [--json] [--follow]``: the run's devices, metrics and progress.

    Args:
        args: The parsed command line.

    Returns:
        0, or 130 when the user stopped following.

    Raises:
        UserError: If the run has no readable handle, its backend cannot be rebuilt, or its
            outputs cannot be read from here.
    """
    handle = RunStore().load(args.run_id)
    backend = backend_for(handle)
    reader, _where = outputs_reader(backend, handle)
    if not args.follow:
        telemetry, found = read_side_files(reader)
        if args.json:
            print_json(metrics_document(telemetry, found))
        else:
            for line in _text_lines(telemetry, found):
                say(line)
        return 0
    last: str | None = None
    try:
        while True:
            telemetry, found = read_side_files(reader)
            document = metrics_document(telemetry, found)
            text = json.dumps(document, separators=(",", ":"))
            if text != last:
                last = text
                if args.json:
                    say(text)
                else:
                    say(time.strftime("-- %H:%M:%S --"))
                    for line in _text_lines(telemetry, found):
                        say(line)
            if backend.status(handle).is_final:
                return 0
            time.sleep(FOLLOW_SECONDS)
    except KeyboardInterrupt:
        sys.stderr.write(f"\nStopped following {handle.run_id}; the run goes on.\n")
        return 130


def flags_text(flags: list[JsonValue]) -> str:
    """The flags' reasons on one line, for ``status``."""
    reasons = [str(flag.get("reason")) for flag in flags if isinstance(flag, dict)]
    return "; ".join(escaped(reason) for reason in reasons)
