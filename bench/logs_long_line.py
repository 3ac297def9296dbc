"""``x-tui logs`` on a run whose log is one line of 100 MB, against ``cat`` of the same file.

A real local run is made first (a one-task job that prints a line), then its ``worker.log`` is
replaced by ``[big] `` and ``--mib`` MiB of text on one line. Each command runs in a child process
writing to a file (piped: the line is written as it is) and, for ``x-tui logs``, also on a
pseudo-terminal (the line is cleaned and cut to its start and its last ``\\r`` state, as on a
screen), read to its end. Time is wall-clock from start to exit; peak memory is the child's own
resident peak, as GNU ``time`` reports it (``%M``; without ``/usr/bin/time``, ``wait4``'s
``ru_maxrss``, which counts this script's own memory at the fork as a floor). Each command is
also timed on a log a tenth the size, so the ratio of the two times shows how the cost grows with
the line's length (10 is linear).

    uv run python bench/logs_long_line.py [--mib 100] [--dir /tmp/x-tui-bench-long-line]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

JOB = """
[project]
name = "long-line"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = {python}

[tool.substrax.compute.jobs.big]
timeout_seconds = 120

[tool.substrax.compute.jobs.big.commands]
big = ["python", "-c", "print('short')"]
"""


def _env(state: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SUBSTRAX_")}
    env["SUBSTRAX_STATE_DIR"] = str(state)
    return env


def make_run(root: Path) -> tuple[str, Path, dict[str, str]]:
    """A finished local run in ``root``: its id, its ``worker.log`` and the CLI's environment."""
    project = root / "project"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text(JOB.format(python=json.dumps(sys.executable)))
    env = _env(root / "state")
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", "run", "big"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    run_id = done.stdout.split()[1]
    logs = list((root / "state").rglob("worker.log"))
    if len(logs) != 1:
        raise SystemExit(f"expected one worker.log under {root / 'state'}, found {logs}")
    return run_id, logs[0], env


def write_line(path: Path, mib: float) -> int:
    """Replace ``path`` by ``[big] `` and ``mib`` MiB of text on one line; its size in bytes."""
    block = (b"0123456789abcdef" * 4096)[: 1 << 16]
    total = int(mib * (1 << 20))
    with path.open("wb") as out:
        out.write(b"[big] ")
        written = 0
        while written < total:
            piece = block[: total - written]
            out.write(piece)
            written += len(piece)
        out.write(b"\n")
    return path.stat().st_size


GNU_TIME = Path("/usr/bin/time")


def _spawn(
    argv: list[str], env: dict[str, str], stdout: int
) -> tuple[subprocess.Popen[bytes], Path]:
    peak = Path(tempfile.mkstemp(prefix="x-tui-bench-peak-")[1])
    if GNU_TIME.exists():
        argv = [str(GNU_TIME), "-f", "%M", "-o", str(peak), *argv]
    process = subprocess.Popen(
        argv, env=env, cwd=tempfile.gettempdir(), stdout=stdout, stderr=subprocess.DEVNULL
    )
    return process, peak


def _measure(process: subprocess.Popen[bytes], peak: Path, started: float) -> tuple[float, float]:
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{process.args} exited {process.returncode}")
    reported = peak.read_text().strip().splitlines()
    peak.unlink()
    kib = int(reported[-1]) if reported else usage.ru_maxrss
    return seconds, kib / 1024


def timed_to_file(argv: list[str], env: dict[str, str], out: Path) -> tuple[float, float, int]:
    """Run ``argv`` with stdout to ``out``: seconds, peak MiB, bytes written."""
    with out.open("wb") as sink:
        started = time.perf_counter()
        process, peak_file = _spawn(argv, env, sink.fileno())
        seconds, peak = _measure(process, peak_file, started)
    return seconds, peak, out.stat().st_size


def timed_on_terminal(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Run ``argv`` with stdout on a pseudo-terminal read to its end: seconds, peak MiB, bytes."""
    leader, follower = pty.openpty()
    received = [0]

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            received[0] += len(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    started = time.perf_counter()
    process, peak_file = _spawn(argv, env, follower)
    os.close(follower)
    seconds, peak = _measure(process, peak_file, started)
    reader.join(timeout=10)
    os.close(leader)
    return seconds, peak, received[0]


def main() -> int:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=100.0, help="length of the line, in MiB")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the run (a temp dir)")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="x-tui-bench-long-line-"))
    if root.exists() and args.dir is not None:
        shutil.rmtree(root)
    try:
        run_id, log, env = make_run(root)
        logs_argv = [sys.executable, "-m", "x_tui", "logs", run_id]
        cat_argv = ["cat", str(log)]
        rows = []
        for mib in (args.mib / 10, args.mib):
            size = write_line(log, mib)
            cat = timed_to_file(cat_argv, env, root / "cat.out")
            piped = timed_to_file(logs_argv, env, root / "logs.out")
            if not filecmp.cmp(root / "logs.out", log, shallow=False):
                raise SystemExit("x-tui logs (piped) did not write the log as it is")
            shown = timed_on_terminal(logs_argv, env)
            rows.append((size, cat, piped, shown))
        print(
            f"x-tui logs on one line, against cat of the same worker.log ({sys.version.split()[0]})"
        )
        print(f"{'line':>10}  {'command':<22}  {'seconds':>8}  {'peak MiB':>8}  {'bytes out':>11}")
        for size, cat, piped, shown in rows:
            for name, (seconds, peak, out) in (
                ("cat > file", cat),
                ("x-tui logs > file", piped),
                ("x-tui logs on a pty", shown),
            ):
                mib = size / 2**20
                print(f"{mib:>6.1f} MiB  {name:<22}  {seconds:>8.3f}  {peak:>8.1f}  {out:>11}")
        (_, small_cat, small_piped, small_shown), (_, cat, piped, shown) = rows
        print(
            f"ratio to cat at {args.mib:g} MiB: time {piped[0] / cat[0]:.1f}x piped,"
            f" {shown[0] / cat[0]:.1f}x on a pty; peak memory {piped[1] / cat[1]:.1f}x piped,"
            f" {shown[1] / cat[1]:.1f}x on a pty"
        )
        print(
            f"growth from {args.mib / 10:g} to {args.mib:g} MiB (10 is linear): cat"
            f" {cat[0] / small_cat[0]:.1f}x, x-tui logs {piped[0] / small_piped[0]:.1f}x piped,"
            f" {shown[0] / small_shown[0]:.1f}x on a pty"
        )
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
