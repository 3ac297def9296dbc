"""The worker's device and process samples, in ``telemetry.jsonl`` beside the manifest.

While a run's tasks run, :class:`TelemetrySampler` (a thread of the worker) appends a sample
every few seconds (:data:`DEFAULT_SECONDS`, a job setting): each GPU's utilisation, memory,
power and temperature, read from ONE long-lived ``nvidia-smi --query-gpu=... -l N`` process
(without it, from ``rocm-smi --json`` asked once a sample, for AMD GPUs), and the CPU use and
resident memory of the worker's descendants (the run's own processes) from ``/proc``. Neither
tool means no GPU figures, never an error; any other error stops the sampling with one note in
the combined log, and the task goes on.

The file is JSON lines (``docs/telemetry.md`` describes them):

- a header, ``{"x_tui_telemetry": 1, "interval": 5.0, "stall_seconds": 600.0, "started": T,
  "memory_limit_mib": M}``;
- the devices once ``nvidia-smi`` named them, ``{"devices": [[index, name], ...]}``;
- one line per sample, ``{"t": T, "gpus": [[index, util %, memory used MiB, memory total MiB,
  power W, temperature C], ...], "cpu": %, "rss_mib": MiB, "procs": N, "last_output": T}``
  (a figure the tool did not give is ``null``; ``last_output`` is when a task last wrote).

It stays small however long the run: samples are appended, and once an hour's worth has been
appended the file is rewritten (a new file renamed over it, so a reader never sees half of it):
the last hour in full, every other one of the older samples once they outnumber an hour's worth.
An 8-GPU day stays near a megabyte.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.worker.run_processes import descendants, spare

TELEMETRY_NAME = "telemetry.jsonl"
"""The samples' file, in the run's outputs beside ``manifest.json``."""
FORMAT_VERSION = 1
"""The value of the header's ``x_tui_telemetry`` key."""
DEFAULT_SECONDS = 5.0
"""Seconds between samples unless the job sets ``telemetry_seconds``."""
DEFAULT_STALL_SECONDS = 600.0
"""How long a silent log with idle GPUs takes to be flagged, unless the job sets it."""
FULL_WINDOW_SECONDS = 3600.0
"""The most recent samples kept at full resolution."""
NVIDIA_QUERY = "index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu"
"""The fields asked of ``nvidia-smi``, in the order of a sample's GPU row (after the name)."""

_PROC = Path("/proc")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MAX_GPUS = 64
_MAX_LINE = 4096


def _number(text: str) -> float | int | None:
    """A figure from ``nvidia-smi``'s CSV, ``None`` for ``[N/A]``, ``[Not Supported]``..."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if math.isnan(value) or abs(value) >= 1e12:
        return None
    return int(value) if value.is_integer() else value


def parse_gpu_line(line: str) -> tuple[int, str, list[float | int | None]] | None:
    """One line of ``nvidia-smi --query-gpu=<NVIDIA_QUERY> --format=csv,noheader,nounits``.

    Returns:
        The GPU's index, name and its five figures (utilisation, memory used, memory total,
        power, temperature); ``None`` for a line that is not one.
    """
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != 7:
        return None
    try:
        index = int(fields[0])
    except ValueError:
        return None
    if not 0 <= index < _MAX_GPUS:
        return None
    return index, fields[1][:64], [_number(field) for field in fields[2:]]


class _GpuReader:
    """The latest row a GPU tool gave for each GPU; with no tool, none (and no error)."""

    def __init__(self) -> None:
        self.latest: dict[int, list[float | int | None]] = {}
        self.names: dict[int, str] = {}
        self._lock = threading.Lock()
        self._starting = threading.Lock()

    @contextmanager
    def steady(self) -> Iterator[set[int]]:
        """The reader's own processes, with none being started until the block ends.

        A tool is started while this is held only after the block, and one being started now is
        waited for, so a walk of the run's processes inside the block never meets a tool of the
        reader's whose pid it was not given (``Popen`` returns after the child already exists)."""
        with self._starting:
            yield self.own_pids()

    @property
    def found(self) -> bool:
        """Whether the tool was found and started."""
        return False

    def own_pids(self) -> set[int]:
        """The reader's own processes, left out of the run's."""
        return set()

    def keep(self, index: int, name: str, figures: list[float | int | None]) -> None:
        """Hold one GPU's latest name and figures."""
        with self._lock:
            self.names[index] = name
            self.latest[index] = figures

    def snapshot(self) -> tuple[dict[int, str], list[list[float | int | None]]]:
        """The GPUs' names and their latest rows, ``[index, five figures...]``, by index."""
        with self._lock:
            names = dict(self.names)
            rows = [[index, *self.latest[index]] for index in sorted(self.latest)]
        return names, rows

    def stop(self) -> None:
        """Stop asking the tool."""


class _NvidiaReader(_GpuReader):
    """The long-lived ``nvidia-smi -l N`` process and the latest row it gave for each GPU."""

    def __init__(self, seconds: float, tool: str) -> None:
        super().__init__()
        self._process: subprocess.Popen[bytes] | None = None
        try:
            self._process = subprocess.Popen(
                [
                    tool,
                    f"--query-gpu={NVIDIA_QUERY}",
                    "--format=csv,noheader,nounits",
                    "-l",
                    str(max(1, round(seconds))),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            self._process = None
            return
        spare(self._process.pid)  # the worker ends what a task left, never this
        threading.Thread(target=self._read, name="x-tui-gpu-reader", daemon=True).start()

    @property
    def found(self) -> bool:
        """Whether ``nvidia-smi`` started."""
        return self._process is not None

    def own_pids(self) -> set[int]:
        """The long-lived ``nvidia-smi``."""
        return {self._process.pid} if self._process is not None else set()

    def _read(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            return
        try:
            while True:
                raw = process.stdout.readline(_MAX_LINE)
                if not raw:
                    return
                row = parse_gpu_line(raw.decode("utf-8", "replace"))
                if row is not None:
                    self.keep(*row)
        except (OSError, ValueError):
            return

    def stop(self) -> None:
        """Stop ``nvidia-smi``."""
        process = self._process
        if process is None:
            return
        try:
            process.kill()
            process.wait(timeout=2)
        except (OSError, subprocess.SubprocessError):
            pass
        spare(process.pid, spared=False)
        if process.stdout is not None:
            process.stdout.close()


ROCM_ARGUMENTS = (
    "--showuse",
    "--showmeminfo",
    "vram",
    "--showpower",
    "--showtemp",
    "--showproductname",
    "--json",
)
"""What ``rocm-smi`` is asked, once a sample (it has no loop mode that prints JSON)."""
_ROCM_OUTPUT_LIMIT = 1 << 20
_ROCM_TIMEOUT = 10.0


def _rocm_figure(card: dict[str, object], *keys: str) -> float | int | None:
    """The first of ``keys`` (exact, else a key starting with it) that ``card`` holds a figure
    for; ``rocm-smi`` names some fields differently from one version to the next."""
    for key in keys:
        value = card.get(key)
        if value is None:
            value = next((v for k, v in card.items() if k.startswith(key)), None)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            number = _number(str(value))
            if number is not None:
                return number
    return None


def parse_rocm_json(text: str) -> list[tuple[int, str, list[float | int | None]]]:
    """The GPUs in one ``rocm-smi <ROCM_ARGUMENTS>`` answer, as :func:`parse_gpu_line` gives them.

    Each ``"cardN"`` object gives GPU ``N``: its use (%), VRAM used and total (bytes, turned into
    MiB), power (W) and edge (else junction) temperature (C), and its series or model as its
    name. Anything else, or a figure missing or not a number, is left out or ``None``.

    Returns:
        ``(index, name, [utilisation, memory used, memory total, power, temperature])`` per
        GPU, by index; empty for text that is not such an answer.
    """
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(document, dict):
        return []
    rows: list[tuple[int, str, list[float | int | None]]] = []
    for key, card in document.items():
        if not (isinstance(key, str) and key.startswith("card") and key[4:].isdigit()):
            continue
        index = int(key[4:])
        if not isinstance(card, dict) or not 0 <= index < _MAX_GPUS:
            continue
        used = _rocm_figure(card, "VRAM Total Used Memory (B)")
        total = _rocm_figure(card, "VRAM Total Memory (B)")
        name = next(
            (
                str(card[field])
                for field in ("Card Series", "Card series", "Card Model", "Card model")
                if isinstance(card.get(field), str) and card[field].strip()
            ),
            "AMD GPU",
        )
        rows.append(
            (
                index,
                name.strip()[:64],
                [
                    _rocm_figure(card, "GPU use (%)"),
                    round(used / 1048576) if used is not None else None,
                    round(total / 1048576) if total is not None else None,
                    _rocm_figure(
                        card,
                        "Average Graphics Package Power (W)",
                        "Current Socket Graphics Package Power (W)",
                    ),
                    _rocm_figure(
                        card, "Temperature (Sensor edge) (C)", "Temperature (Sensor junction) (C)"
                    ),
                ],
            )
        )
    return sorted(rows)[:_MAX_GPUS]


class _RocmReader(_GpuReader):
    """``rocm-smi --json``, asked once every ``seconds`` (at least 1) by a thread, for AMD GPUs."""

    def __init__(self, seconds: float, tool: str) -> None:
        super().__init__()
        self._tool = tool
        self._seconds = max(1.0, seconds)
        self._stopped = threading.Event()
        self._asking: int | None = None
        threading.Thread(target=self._poll, name="x-tui-rocm-reader", daemon=True).start()

    @property
    def found(self) -> bool:
        """Always: the tool was on ``PATH`` (an answer it does not give means no rows)."""
        return True

    def own_pids(self) -> set[int]:
        """The ``rocm-smi`` being asked right now, if any."""
        asking = self._asking
        return {asking} if asking is not None else set()

    def _poll(self) -> None:
        while not self._stopped.is_set():
            for row in self._ask():
                self.keep(*row)
            self._stopped.wait(self._seconds)

    def _ask(self) -> list[tuple[int, str, list[float | int | None]]]:
        with self._starting:
            try:
                process = subprocess.Popen(
                    [self._tool, *ROCM_ARGUMENTS],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except (OSError, ValueError, subprocess.SubprocessError):
                self._stopped.set()  # it cannot be started: no GPU samples, as without the tool
                return []
            self._asking = process.pid
        spare(process.pid)
        timer = threading.Timer(_ROCM_TIMEOUT, process.kill)  # a hung tool is ended
        timer.start()
        output = b""
        try:
            if process.stdout is not None:
                output = process.stdout.read(_ROCM_OUTPUT_LIMIT)
        except (OSError, ValueError):
            output = b""
        finally:
            timer.cancel()
            process.kill()  # it answered (or said too much): done either way
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
            spare(process.pid, spared=False)
            self._asking = None
        return parse_rocm_json(output.decode("utf-8", "replace"))

    def stop(self) -> None:
        """Ask no more."""
        self._stopped.set()


def gpu_reader(seconds: float) -> _GpuReader:
    """The run's GPU reader: ``nvidia-smi`` where present, else ``rocm-smi``, else none (which
    gives no rows, never an error)."""
    nvidia = shutil.which("nvidia-smi")
    if nvidia is not None:
        reader = _NvidiaReader(seconds, nvidia)
        if reader.found:
            return reader
    rocm = shutil.which("rocm-smi")
    return _RocmReader(seconds, rocm) if rocm is not None else _GpuReader()


def _tree_usage(root: int, skip: set[int]) -> tuple[int, int, int]:
    """The CPU ticks, resident bytes and count of ``root``'s descendants, less ``skip``."""
    ticks = rss = count = 0
    for pid in descendants(root):
        if pid in skip:
            continue
        try:
            record = (_PROC / str(pid) / "stat").read_bytes()
        except OSError:
            continue
        fields = record[record.rfind(b")") + 2 :].split()
        if len(fields) < 22:
            continue
        try:
            ticks += int(fields[11]) + int(fields[12])
            rss += int(fields[21]) * _PAGE_BYTES
        except ValueError:
            continue
        count += 1
    return ticks, rss, count


def memory_limit_mib() -> float | None:
    """The memory this machine (or its cgroup, when lower) gives, in MiB."""
    limits: list[float] = []
    try:
        text = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if text.isdigit():
            limits.append(int(text) / 1048576)
    except OSError:
        pass
    try:
        for line in (_PROC / "meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                limits.append(int(line.split()[1]) / 1024)
                break
    except (OSError, ValueError, IndexError):
        pass
    return round(min(limits), 1) if limits else None


class TelemetryFile:
    """The samples' file: appended to, and rewritten smaller once an hour's worth came."""

    def __init__(self, path: Path, header: dict[str, object], *, full_window: float) -> None:
        self._path = path
        self._header = json.dumps(header, separators=(",", ":"))
        self._devices: str | None = None
        self._old: list[tuple[float, str]] = []  # older than the full window, thinned
        self._recent: list[tuple[float, str]] = []
        self._full_window = full_window
        self._appended = 0
        self._per_window = 1
        interval = header.get("interval")
        if isinstance(interval, (int, float)) and interval > 0:
            self._per_window = max(1, int(full_window / interval))
        self._rewrite()

    def set_devices(self, names: dict[int, str]) -> None:
        """Record the GPUs' names (rewrites the file once)."""
        self._devices = json.dumps(
            {"devices": [[index, names[index]] for index in sorted(names)]},
            separators=(",", ":"),
        )
        self._rewrite()

    def add(self, when: float, sample: dict[str, object]) -> None:
        """Append one sample; thin and rewrite the file once an hour's worth was appended."""
        line = json.dumps(sample, separators=(",", ":"))
        self._recent.append((when, line))
        self._appended += 1
        if self._appended >= self._per_window:
            self._compact(when)
            return
        with open(self._path, "a", encoding="utf-8") as file:
            file.write(line + "\n")

    def _compact(self, now: float) -> None:
        cut = now - self._full_window
        aged = [item for item in self._recent if item[0] < cut]
        self._recent = [item for item in self._recent if item[0] >= cut]
        self._old.extend(aged)
        while len(self._old) > self._per_window:
            self._old = self._old[::2]  # the run's first sample stays
        self._appended = 0
        self._rewrite()

    def _rewrite(self) -> None:
        lines = [self._header]
        if self._devices is not None:
            lines.append(self._devices)
        lines.extend(line for _when, line in self._old)
        lines.extend(line for _when, line in self._recent)
        temporary = self._path.with_name(self._path.name + ".tmp")
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(temporary, self._path)


@dataclass(frozen=True)
class WatchSettings:
    """How the worker watches a run: its samples' pace, the stall time, the job's patterns."""

    seconds: float = DEFAULT_SECONDS
    """Seconds between samples; 0 takes none."""
    stall_seconds: float = DEFAULT_STALL_SECONDS
    """How long silence with idle GPUs takes to be flagged (recorded for the readers)."""
    patterns: tuple[str, ...] = ()
    """The job's own metric patterns (``log_metrics``)."""
    paced_by_job: bool = False
    """Whether the job set ``seconds`` itself (``telemetry_seconds``)."""

    def for_low_bandwidth(self, slowdown: float) -> WatchSettings:
        """The settings a run submitted under the low-bandwidth profile gets: ``slowdown`` times
        fewer samples (a smaller file for each peek of a remote run), unless the job set its own
        pace, which is kept."""
        if self.paced_by_job or self.seconds <= 0:
            return self
        return WatchSettings(
            seconds=min(3600.0, self.seconds * slowdown),
            stall_seconds=self.stall_seconds,
            patterns=self.patterns,
        )

    def worker_arguments(self) -> list[str]:
        """The worker's command-line arguments for the settings that are not its defaults."""
        arguments: list[str] = []
        if self.seconds != DEFAULT_SECONDS:
            arguments += ["--telemetry-seconds", f"{self.seconds:g}"]
        if self.stall_seconds != DEFAULT_STALL_SECONDS:
            arguments += ["--stall-seconds", f"{self.stall_seconds:g}"]
        for pattern in self.patterns:
            arguments += ["--metric-pattern", pattern]
        return arguments


class TelemetrySampler:
    """A thread that samples the run's devices and processes until stopped (module docs)."""

    def __init__(
        self,
        outputs: Path,
        *,
        seconds: float = DEFAULT_SECONDS,
        stall_seconds: float = DEFAULT_STALL_SECONDS,
        clock: Callable[[], float] = time.time,
        full_window: float = FULL_WINDOW_SECONDS,
    ) -> None:
        """Prepare the sampler; :meth:`start` starts it.

        Args:
            outputs: The run's outputs, where :data:`TELEMETRY_NAME` goes.
            seconds: Seconds between samples (at least 0.2).
            stall_seconds: Recorded in the header for the readers' stall flags.
            clock: The wall clock samples are stamped with.
            full_window: Seconds of recent samples kept at full resolution.
        """
        self._path = Path(outputs) / TELEMETRY_NAME
        self._seconds = max(0.2, float(seconds))
        self._stall = float(stall_seconds)
        self.last_output: float | None = None
        """When a task last wrote a byte (the wall clock); the worker sets it."""
        self.failure: str | None = None
        """Why sampling stopped early, for one note in the combined log; ``None`` if it did not."""
        self._clock = clock
        self._full_window = full_window
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gpus: _GpuReader | None = None

    def start(self) -> None:
        """Start sampling in a daemon thread; an error here only means no samples."""
        self._thread = threading.Thread(target=self._run, name="x-tui-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and ``nvidia-smi``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            self._sample_until_stopped()
        except Exception as error:
            self.failure = f"x-tui worker: telemetry stopped ({type(error).__name__}: {error})"
        finally:
            if self._gpus is not None:
                self._gpus.stop()

    def _sample_until_stopped(self) -> None:
        started = self._clock()
        header: dict[str, object] = {
            "x_tui_telemetry": FORMAT_VERSION,
            "interval": self._seconds,
            "stall_seconds": self._stall,
            "started": round(started, 3),
            "memory_limit_mib": memory_limit_mib(),
        }
        file = TelemetryFile(self._path, header, full_window=self._full_window)
        self._gpus = gpu_reader(self._seconds)
        root = os.getpid()
        named: dict[int, str] = {}
        with self._gpus.steady() as own:
            before_ticks, _rss, _count = _tree_usage(root, own)
        before_at = time.monotonic()
        while not self._stop.wait(self._seconds):
            names, rows = self._gpus.snapshot()
            if names != named and names:
                named = names
                file.set_devices(names)
            with self._gpus.steady() as own:
                ticks, rss, count = _tree_usage(root, own)
            now_at = time.monotonic()
            elapsed = max(now_at - before_at, 1e-6)
            cpu = max(0.0, (ticks - before_ticks) / _CLOCK_TICKS / elapsed * 100)
            before_ticks, before_at = ticks, now_at
            now = round(self._clock(), 3)
            sample: dict[str, object] = {
                "t": now,
                "gpus": rows,
                "cpu": round(cpu, 1),
                "rss_mib": round(rss / 1048576, 1),
                "procs": count,
                "last_output": self.last_output,
            }
            file.add(now, sample)
