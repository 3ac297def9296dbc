"""Where the test suite's CPU goes: one whole run, every Python interpreter and every test counted.

    uv run python scripts/suite_cpu.py [PYTEST ARGUMENTS...]

On a two-core machine the suite is CPU-bound from start to end, so its wall time is its CPU
seconds over two, and making it faster means finding CPU seconds to save. A profiler attached to
pytest sees its workers but not the ~2,000 short processes the tests start (``x-tui`` verbs,
workers, fake clusters, servers), nor the detached ones. This runs the suite once with:

- a ``sitecustomize`` on ``PYTHONPATH`` that has every Python interpreter the suite starts write
  its command line and CPU seconds when it exits (an interpreter started with ``-I`` or ``-E``,
  with an environment of its own, or killed by a signal, is not counted: its CPU is in "not
  counted" below);
- a pytest plugin that writes each test's own CPU seconds (in the worker) and those of the
  children it waited for;
- the machine's CPU seconds (``/proc/stat``) before and after: everything, the rest of the
  machine's load included.

It prints the machine's CPU seconds, the pytest workers', the other interpreters' grouped by
command line, and the tests and test files that cost most. Nothing is timed against a threshold;
run it on a machine doing nothing else.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SITECUSTOMIZE = """\
import atexit, json, os, sys

def _command_line():
    # The command line as started: with -c's code, which sys.argv leaves out.
    try:
        with open("/proc/self/cmdline", "rb") as file:
            words = file.read(4096).decode("utf-8", "replace").split("\\0")
    except OSError:
        words = [sys.executable, *sys.argv]
    return [" ".join(word.split())[:80] for word in words if word][:5]

def _write_cpu():
    try:
        times = os.times()
        record = {
            "ppid": os.getppid(),
            "argv": _command_line(),
            "cpu": times.user + times.system,
        }
        path = os.path.join(os.environ["X_TUI_SUITE_CPU_DIR"], "procs", f"{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(record, file)
    except Exception:
        pass

if os.environ.get("X_TUI_SUITE_CPU_DIR"):
    atexit.register(_write_cpu)
"""

PLUGIN = """\
import os, resource, time
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own = time.process_time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    yield
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    path = os.path.join(os.environ["X_TUI_SUITE_CPU_DIR"], "tests", f"{os.getpid()}.txt")
    with open(path, "a", encoding="utf-8") as file:
        file.write(f"{time.process_time() - own:.3f} {children:.3f} {item.nodeid}\\n")
"""

_TICKS = os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (user, nice, system, irq)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = stat.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = (int(value) for value in fields[1:8])
    return (user + nice + system + irq + softirq) / _TICKS


def label(argv: list[str]) -> str:
    """A command line with its temporary paths, run ids and long arguments made alike."""
    if not argv:
        return "(no argv)"
    words = [Path(argv[0]).name, *argv[1:4]]
    text = " ".join(words)
    text = re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+/\S*", "TMP", text)
    text = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]+", "RUN_ID", text)
    text = re.sub(r"[0-9a-f]{32}", "ID", text)
    return text[:90]


@dataclass
class SuiteRun:
    """What one run of the suite left: its figures, the tests' and the interpreters' records."""

    returncode: int
    summary: str
    wall: float
    busy: float
    main_cpu: float = 0.0
    worker_cpu: float = 0.0
    workers: set[int] = field(default_factory=set)
    tests: list[tuple[float, float, str]] = field(default_factory=list)
    groups: dict[str, tuple[int, float]] = field(default_factory=dict)


def run_suite(pytest_args: list[str]) -> SuiteRun:
    """Run pytest with the probe and the plugin; what they and ``/proc/stat`` recorded."""
    scratch = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
    probe = scratch / "probe"
    for name in ("probe", "procs", "tests"):
        (scratch / name).mkdir()
    (probe / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    (probe / "suite_cpu_plugin.py").write_text(PLUGIN, encoding="utf-8")
    env = dict(os.environ, X_TUI_SUITE_CPU_DIR=str(scratch))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe), env.get("PYTHONPATH", "")]))

    command = [sys.executable, "-m", "pytest", "-q", "-p", "suite_cpu_plugin", *pytest_args]
    busy_before, started = machine_cpu_seconds(), time.monotonic()
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as pytest:
        output, _ = pytest.communicate()
    summary = [line for line in output.splitlines() if " in " in line and "passed" in line]
    run = SuiteRun(
        returncode=pytest.returncode,
        summary=summary[-1] if summary else "no summary",
        wall=time.monotonic() - started,
        busy=machine_cpu_seconds() - busy_before,
    )
    for path in (scratch / "tests").iterdir():
        run.workers.add(int(path.stem))
        for line in path.read_text(encoding="utf-8").splitlines():
            own, children, nodeid = line.split(" ", 2)
            run.tests.append((float(own), float(children), nodeid))
    for path in (scratch / "procs").iterdir():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        pid, cpu = int(path.stem), float(record["cpu"])
        if pid in run.workers:
            run.worker_cpu += cpu
        elif pid == pytest.pid:  # with -n 0 it is the one worker, counted above
            run.main_cpu = cpu
        else:
            count, total = run.groups.get(label(record["argv"]), (0, 0.0))
            run.groups[label(record["argv"])] = (count + 1, total + cpu)
    print(f"(records kept in {scratch})")
    return run


def report(run: SuiteRun, pytest_args: list[str], top: int) -> None:
    """Print the run's CPU seconds: by kind of process, by command line, by test and by file."""
    others = sum(cpu for _count, cpu in run.groups.values())
    processes = sum(count for count, _cpu in run.groups.values())
    print(f"pytest {' '.join(pytest_args)}: {run.summary}")
    print(f"  exit status {run.returncode}; wall {run.wall:.1f} s; CPU seconds:")
    rows = [
        ("the machine, while it ran", run.busy),
        ("pytest's main process", run.main_cpu),
        (f"pytest's {len(run.workers)} worker(s)", run.worker_cpu),
        (f"{processes} other interpreters", others),
        ("not counted (other programs...)", run.busy - run.main_cpu - run.worker_cpu - others),
    ]
    for name, seconds in rows:
        print(f"  {name:<34} {seconds:8.1f}")
    print("\nInterpreters by command line (CPU s, count, each):")
    for name, (count, cpu) in sorted(run.groups.items(), key=lambda item: -item[1][1])[:top]:
        print(f"  {cpu:7.1f} {count:5d} {cpu / count:6.3f}  {name}")
    own = {nodeid: seconds for seconds, _children, nodeid in run.tests}
    waited = {nodeid: seconds for _own, seconds, nodeid in run.tests}
    for title, seconds_of in (("in the worker", own), ("in children it waited for", waited)):
        print(f"\nTests by CPU s {title}:")
        for nodeid, seconds in sorted(seconds_of.items(), key=lambda item: -item[1])[:top]:
            print(f"  {seconds:7.2f}  {nodeid}")
    files: dict[str, float] = collections.defaultdict(float)
    for nodeid, seconds in own.items():
        files[nodeid.split("::", 1)[0]] += seconds + waited[nodeid]
    print("\nTest files by CPU s (worker and waited children):")
    for name, seconds in sorted(files.items(), key=lambda item: -item[1])[:top]:
        print(f"  {seconds:7.1f}  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--top", type=int, default=15, help="rows in each table (default 15)")
    options, pytest_args = parser.parse_known_args()
    run = run_suite(pytest_args)
    report(run, pytest_args, options.top)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
