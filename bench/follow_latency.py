"""Follow a log written at 10,000 lines/s: write-to-screen latency, and key presses meanwhile.

A writer process appends lines to a log at a steady rate; each line carries its sequence number
and the monotonic time it was written. Two readers follow the same file at the same time:

- x-tui's ``LogView`` in a Textual app on a pseudo-terminal of 80x24 (Textual's real driver, as
  over SSH), following the end;
- ``tail -n 0 -F`` (the reference), on a pseudo-terminal too (so its output is line-buffered).

A reader thread in this process timestamps everything each one outputs, finds the sequence
numbers in it, and takes, for each line, the first time it was drawn (x-tui draws only the lines
on screen; tail prints every line). Latency is that time minus the line's write time. Meanwhile
``w`` (wrap) is pressed once a second in the app and the time until its status line says "wrap"
is the key-press answer time. The app runs twice: as it ships (appends batched every 50 ms) and
with ``low_bandwidth`` (every 500 ms); the bytes it sent to the terminal per second are noted.

    uv run python bench/follow_latency.py [--rate 10000] [--seconds 8]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pty
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

COLUMNS, LINES = 80, 24
BATCHES_PER_SECOND = 100
SEQUENCE = re.compile(rb"seq=(\d{9}) t=(\d{1,20}) epoch")
"""A whole line's stamp (the word after it proves the number was not cut by a read)."""
WRAP_ON = re.compile(rb"wrap")
STARTED = re.compile(rb"the log starts")


# The child sides --------------------------------------------------------------------------------


def child_writer(path: Path, rate: int, seconds: float) -> None:
    """Append ``rate`` lines a second, in ``BATCHES_PER_SECOND`` batches, for ``seconds``."""
    per_batch = max(1, rate // BATCHES_PER_SECOND)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    start = time.monotonic()
    sequence = 0
    batch = 0
    while time.monotonic() - start < seconds:
        now = time.monotonic_ns()
        lines = []
        for _ in range(per_batch):
            lines.append(f"seq={sequence:09d} t={now} epoch 3 step {sequence} loss 0.1234\n")
            sequence += 1
        os.write(fd, "".join(lines).encode())
        batch += 1
        pause = start + batch / BATCHES_PER_SECOND - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    os.close(fd)


def child_app(path: Path, low_bandwidth: bool) -> None:
    """The log view following ``path``, full screen; ``q`` quits."""
    from x_tui.app import hold_garbage_until_listed

    hold_garbage_until_listed()  # first, as ``x-tui`` itself starts (``run_app``)
    from textual.app import App, ComposeResult
    from textual.binding import Binding

    from x_tui.widgets.log_view import LogView

    class Follow(App[None]):
        BINDINGS = [Binding("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield LogView(path, low_bandwidth=low_bandwidth)

        def on_mount(self) -> None:
            self.query_one(LogView).focus()

    Follow().run()


# The parent side --------------------------------------------------------------------------------


@dataclass
class Seen:
    """What one reader showed: first-drawn time per sequence number, and bytes over time."""

    first: dict[int, int] = field(default_factory=dict)
    written: dict[int, int] = field(default_factory=dict)
    chunks: list[tuple[int, bytes]] = field(default_factory=list)
    total_bytes: int = 0
    carry: bytes = b""

    def take(self, data: bytes) -> None:
        now = time.monotonic_ns()
        self.total_bytes += len(data)
        self.chunks.append((now, data))
        text = self.carry + data
        self.carry = text[-128:]
        for match in SEQUENCE.finditer(text):
            number = int(match.group(1))
            if number not in self.first:
                self.first[number] = now
                self.written[number] = int(match.group(2))

    def latencies_ms(self) -> list[float]:
        return [(self.first[n] - self.written[n]) / 1e6 for n in self.first if self.written[n]]


def read_into(fd: int, seen: Seen, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            return
        if not data:
            return
        seen.take(data)


def start_app(path: Path, low_bandwidth: bool) -> tuple[subprocess.Popen[bytes], int]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
    command = [sys.executable, __file__, "--child-app", str(path)]
    if low_bandwidth:
        command.append("--low-bandwidth")
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    return process, master


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a live process has used (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_text(seen: Seen, pattern: re.Pattern[bytes], after_ns: int, timeout: float) -> int:
    """The time of the first output chunk after ``after_ns`` that matches, or -1."""
    deadline = time.monotonic() + timeout
    checked = 0
    while time.monotonic() < deadline:
        chunks = seen.chunks
        for at, data in chunks[checked:]:
            if at >= after_ns and pattern.search(data):
                return at
        checked = len(chunks)
        time.sleep(0.002)
    return -1


def press_keys(master: int, seen: Seen, stop: threading.Event, answers: list[float]) -> None:
    """Press ``w`` (wrap on), time the answer, press ``w`` again (off); once a second."""
    while not stop.wait(0.5):
        pressed = time.monotonic_ns()
        os.write(master, b"w")
        shown = wait_for_text(seen, WRAP_ON, pressed, timeout=5.0)
        if shown >= 0:
            answers.append((shown - pressed) / 1e6)
        if stop.wait(0.5):
            return
        os.write(master, b"w")


def one_run(rate: int, seconds: float, low_bandwidth: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "follow.log"
        path.write_text("seq=000000000 t=0000000000000000 the log starts\n", encoding="ascii")
        app, master = start_app(path, low_bandwidth)
        tail_master, tail_slave = pty.openpty()
        tail = subprocess.Popen(["tail", "-n", "0", "-F", str(path)], stdout=tail_slave)
        os.close(tail_slave)
        app_seen, tail_seen = Seen(), Seen()
        stop = threading.Event()
        readers = [
            threading.Thread(target=read_into, args=(master, app_seen, stop), daemon=True),
            threading.Thread(target=read_into, args=(tail_master, tail_seen, stop), daemon=True),
        ]
        for reader in readers:
            reader.start()
        if wait_for_text(app_seen, STARTED, 0, timeout=60) < 0:
            os.killpg(app.pid, signal.SIGTERM)
            tail.terminate()
            raise SystemExit("the app never showed the log")
        answers: list[float] = []
        keys = threading.Thread(target=press_keys, args=(master, app_seen, stop, answers))
        keys.start()
        begin_bytes, begin = app_seen.total_bytes, time.monotonic()
        begin_cpu = {"app": cpu_seconds(app.pid), "tail": cpu_seconds(tail.pid)}
        writer = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child-writer",
                str(path),
                "--rate",
                str(rate),
                "--seconds",
                str(seconds),
            ],
            check=True,
        )
        del writer
        elapsed = time.monotonic() - begin
        sent = app_seen.total_bytes - begin_bytes
        cpu = {
            "app": (cpu_seconds(app.pid) - begin_cpu["app"]) / elapsed,
            "tail": (cpu_seconds(tail.pid) - begin_cpu["tail"]) / elapsed,
        }
        time.sleep(1.0)  # let both readers show the last lines
        stop.set()
        keys.join()
        os.write(master, b"q")
        try:
            app.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(app.pid, signal.SIGTERM)
            app.wait()
        tail.terminate()
        tail.wait()
        for fd in (master, tail_master):
            with contextlib.suppress(OSError):
                os.close(fd)
        return {
            "app": app_seen.latencies_ms(),
            "tail": tail_seen.latencies_ms(),
            "tail_lines": len(tail_seen.first),
            "keys": answers,
            "bytes_per_second": sent / elapsed,
            "cpu": cpu,
        }


def describe(values: list[float]) -> str:
    if not values:
        return "none seen"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"median {statistics.median(ordered):7.1f} ms  p99 {p99:7.1f} ms  "
        f"worst {ordered[-1]:7.1f} ms  ({len(ordered):,} lines)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--child-app", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--low-bandwidth", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_app:
        child_app(args.child_app, args.low_bandwidth)
        return
    if args.child_writer:
        child_writer(args.child_writer, args.rate, args.seconds)
        return

    print(f"writer: {args.rate:,} lines/s for {args.seconds:.0f} s; app on a pty at 80x24")
    for low_bandwidth in (False, True):
        result = one_run(args.rate, args.seconds, low_bandwidth)
        mode = "low bandwidth (500 ms)" if low_bandwidth else "default (50 ms)"
        app_lat = result["app"]
        tail_lat = result["tail"]
        keys = result["keys"]
        assert isinstance(app_lat, list)
        assert isinstance(tail_lat, list)
        assert isinstance(keys, list)
        print()
        print(f"x-tui LogView, {mode}:")
        print(f"  on screen      {describe(app_lat)}")
        print(f"  tail -F        {describe(tail_lat)}")
        if app_lat and tail_lat:
            ratio = statistics.median(app_lat) / max(statistics.median(tail_lat), 1e-3)
            print(f"  median latency x-tui / tail -F = {ratio:.1f}")
        print(f"  key press answered: {describe(keys).replace(' lines', ' presses')}")
        print(f"  sent to the terminal: {result['bytes_per_second'] / 1024:.0f} KiB/s")
        cpu = result["cpu"]
        assert isinstance(cpu, dict)
        times = cpu["app"] / max(cpu["tail"], 1e-4)
        print(
            f"  CPU while following: x-tui {cpu['app']:.1%} of a core, "
            f"tail -F {cpu['tail']:.1%}, x-tui / tail -F = {times:.1f}x"
            f" (aim: x-tui under 10%: {'met' if cpu['app'] < 0.10 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
