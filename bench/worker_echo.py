"""The worker's echo of a chatty task, in process and end to end.

In process: 300,000 lines of about 80 bytes, in 64 KiB chunks, through line assembly and the
combined log (``LineAssembler.feed`` + ``CombinedLog.write``), against the plainest prefixing
copy of the same chunks (split on newlines, join with the prefix: what an echo without line
assembly does), both into a byte counter.

End to end: a real task prints the lines as fast as it can, with a ``\\r`` progress bar on stderr
every 100 lines, through the real worker, against the same task with its output sent straight to
a file.

The task writes N lines of about 80 bytes on stdout, with a ``\\r`` progress bar on stderr every
100 lines. Measured: wall time of ``python worker.pyz ...`` (stdout and stderr on ``worker.log``,
with ``--log-times``: line assembly, prefixes, the times file) against the task alone with its
stdout and stderr on a file (the reference: no worker at all). The ratio is the worker's whole
cost for that output; the probe's and the interpreter's start-up are in both runs' difference.

    uv run python bench/worker_echo.py [--lines 500000]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from x_tui.compute.worker.echo import CombinedLog
from x_tui.compute.worker.line_assembly import LineAssembler
from x_tui.compute.worker.records import dumps_compact
from x_tui.compute.worker.spec import JobSpec, Task
from x_tui.compute.worker_bundle import write_worker_zipapp

TASK = """\
import sys
n = int(sys.argv[1])
out, err = sys.stdout, sys.stderr
for i in range(n):
    out.write(f"step {i:08d}: loss={1 / (i + 1):.6f} lr=0.000300 grad_norm=1.2345 tokens=4096\\n")
    if i % 100 == 0:
        err.write(f"\\r{i * 100 // n:3d}%|{'#' * (i * 20 // n):20s}| {i}/{n}")
err.write("\\n")
"""


def _timed(argv: list[str], cwd: Path, log: Path) -> float:
    started = time.perf_counter()
    with log.open("wb") as out:
        subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=True)
    return time.perf_counter() - started


class _Counter(io.StringIO):
    """A worker stream that only counts the bytes written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = self
        self.count = 0

    def write(self, data: object) -> int:  # type: ignore[override]
        assert isinstance(data, bytes)
        self.count += len(data)
        return len(data)


def _in_process(lines: int) -> dict[str, float]:
    data = b"".join(
        b"step %08d: loss=0.123456 lr=0.000300 grad_norm=1.2345 tokens=4096\n" % i
        for i in range(lines)
    )
    chunks = [data[at : at + 65536] for at in range(0, len(data), 65536)]
    prefix = b"[chatty] "
    sink = _Counter()
    started = time.perf_counter()
    held = b""
    for chunk in chunks:  # the reference: prefix every line, nothing more
        parts = (held + chunk).split(b"\n")
        held = parts.pop()
        sink.write(prefix + (b"\n" + prefix).join(parts) + b"\n")
    reference = time.perf_counter() - started
    out = _Counter()
    log = CombinedLog(out, _Counter())  # type: ignore[arg-type]
    assembler = LineAssembler()
    started = time.perf_counter()
    for chunk in chunks:
        log.write("chatty", 0, assembler.feed(chunk, 0.0), 0.0)
    measured = time.perf_counter() - started
    assert out.count == sink.count
    return {
        "in_process_reference_s": round(reference, 3),
        "in_process_assembly_s": round(measured, 3),
        "in_process_ratio": round(measured / reference, 2),
        "us_per_line": round(measured / lines * 1e6, 2),
    }


def main() -> None:
    """Print both wall times and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=500_000)
    args = parser.parse_args()
    print(json.dumps({"lines": 300_000, **_in_process(300_000)}))
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        (root / "task.py").write_text(TASK)
        spec = JobSpec(
            name="bench",
            tasks=(
                Task(
                    name="chatty",
                    argv=("python", "task.py", str(args.lines)),
                    timeout_seconds=600,
                ),
            ),
            timeout_seconds=600,
        )
        (root / "spec.json").write_text(dumps_compact(spec))
        worker = write_worker_zipapp(root)
        reference = _timed([sys.executable, "task.py", str(args.lines)], root, root / "ref.log")
        measured = _timed(
            [
                sys.executable,
                str(worker),
                "--log-times",
                str(root / "worker.log.times"),
                "--spec",
                str(root / "spec.json"),
                "--project",
                str(root),
                "--outputs",
                str(root / "outputs"),
            ],
            root,
            root / "worker.log",
        )
        size = (root / "worker.log").stat().st_size
        times = (root / "worker.log.times").stat().st_size
        print(
            json.dumps(
                {
                    "lines": args.lines,
                    "task_alone_s": round(reference, 3),
                    "through_worker_s": round(measured, 3),
                    "ratio": round(measured / reference, 2),
                    "worker_log_bytes": size,
                    "times_bytes": times,
                }
            )
        )


if __name__ == "__main__":
    main()
