"""A SkyPilot status answer's cost, one-shot bridge against long-lived, and an open TUI's CPU.

Part 1: the answer ``status`` needs (one ``poll`` of one cluster) asked of SkyPilot's interpreter
``--answers`` times: the way x-tui asked before (``<sky python> -I sky_sdk.py``, one interpreter
per answer) and through the long-lived bridge (one interpreter, started by the first answer).
Wall time per answer, and CPU per answer (the bridge's and this process's, user + system), first
and later, on the fake SkyPilot of the tests and, where it is installed (``--real``, by default
where the conformance tests install SkyPilot 0.14.1), on the real one offline: its own API server
in a scratch HOME, started before anything is measured, answering for clusters that do not exist.

Part 2: x-tui opened in a 120x40 pseudo-terminal on a store holding ``--runs`` SkyPilot runs
whose launches stay pending (the fake SkyPilot's requests), left to settle for ``--warmup``
seconds, then its CPU (its own, its bridge's, and its waited-for children's) over ``--seconds``;
the reference is the same x-tui asking the way it did before (one interpreter per status, one
status call per run), measured the same way in the same run.

    uv run python bench/sky_bridge.py [--answers 5] [--runs 20] [--warmup 10] [--seconds 60]
        [--real PYTHON | --no-real] [--no-tui]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import os
import pty
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from x_tui.backends.skypilot.bridge import SCRIPT, Bridge, bridge_pids, close_bridges  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
REAL = ROOT / ".pytest_cache" / "d" / "skypilot-0.14.1" / "tools" / "skypilot" / "bin" / "python"
COLUMNS, LINES = 120, 40


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def proc_cpu(pid: int, *, children: bool = True) -> float:
    """User and system time of ``pid`` (and its waited-for children), 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11 : 15 if children else 13]) / TICKS


def tree_cpu(pid: int) -> float:
    """CPU of ``pid`` and every live descendant (a bridge is a child never waited for)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(stat[1])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(proc_cpu(member) for member in tree)


def poll_args(cluster: str) -> dict[str, Any]:
    return {"runs": [{"cluster": cluster, "request_id": None, "launched": False}]}


def one_shot_answer(python: str, op: str, args: Mapping[str, Any]) -> Any:
    """Ask SkyPilot's interpreter one question the way x-tui did before: one process for it."""
    done = subprocess.run(
        [python, "-I", str(SCRIPT)],
        input=json.dumps({"op": op, "args": dict(args)}) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    for line in reversed(done.stdout.splitlines()):
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("event") == "done":
                return event.get("value")
            if event.get("event") == "error":
                raise RuntimeError(event.get("message"))
    raise RuntimeError(f"no answer: {done.stderr[-400:]}")


def timed(call: Callable[[], object], cpu: Callable[[], float]) -> tuple[float, float]:
    before_cpu, start = cpu(), time.monotonic()
    call()
    return time.monotonic() - start, cpu() - before_cpu


def answers(python: str, count: int) -> dict[str, list[tuple[float, float]]]:
    """Wall and CPU of ``count`` status answers, each way."""
    found: dict[str, list[tuple[float, float]]] = {"one-shot": [], "long-lived": []}

    def whole_cpu() -> float:
        return children_cpu() + own_cpu()

    for index in range(count):
        args = poll_args(f"sx-b-{index}")
        found["one-shot"].append(
            timed(functools.partial(one_shot_answer, python, "poll", args), whole_cpu)
        )
    close_bridges()
    bridge = Bridge(sky="sky", sky_python=python)

    def bridge_cpu() -> float:
        return sum(proc_cpu(pid) for pid in bridge_pids()) + own_cpu()

    for index in range(count):
        ask = functools.partial(bridge.call, "poll", poll_args(f"sx-b-{index}"), what="bench")
        found["long-lived"].append(timed(ask, bridge_cpu))
    close_bridges()
    return found


def print_answers(title: str, found: dict[str, list[tuple[float, float]]]) -> None:
    print(title)
    later: dict[str, tuple[float, float]] = {}
    for way, figures in found.items():
        rest = figures[1:] or figures
        wall = sum(w for w, _ in rest) / len(rest)
        cpu = sum(c for _, c in rest) / len(rest)
        later[way] = (wall, cpu)
        first_wall, first_cpu = figures[0]
        print(
            f"  {way:11}  first: {first_wall:6.3f} s wall, {first_cpu:6.3f} s CPU;"
            f"  later (mean of {len(rest)}): {wall:6.3f} s wall, {cpu:6.3f} s CPU"
        )
    (one_wall, one_cpu), (long_wall, long_cpu) = later["one-shot"], later["long-lived"]
    print(
        f"  later answer, long-lived / one-shot: wall {long_wall / one_wall:.3f},"
        f" CPU {long_cpu / max(one_cpu, 1e-9):.3f}"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# The open TUI -----------------------------------------------------------------------------------


def _child_xtui(project: Path, one_shot: bool) -> None:
    from x_tui.app.app import XTuiApp
    from x_tui.app.service import Service

    if one_shot:  # x-tui as it asked before: one interpreter per call, one status per run
        from x_tui.backends.skypilot import backend as sky_backend
        from x_tui.compute.backend import Capability

        def call(self: Bridge, op: str, args: Mapping[str, Any], **_: object) -> Any:
            return one_shot_answer(self.interpreter()[0], op, args)

        Bridge.call = call  # type: ignore[method-assign]
        built = sky_backend.SkyPilotBackend.__init__

        def init(self: Any, settings: Any = None) -> None:
            built(self, settings)
            self.capabilities = self.capabilities - {Capability.STATUSES}

        sky_backend.SkyPilotBackend.__init__ = init  # type: ignore[method-assign]
    XTuiApp(project, service=Service()).run()


def measure_tui(argv: list[str], env: dict[str, str], *, warmup: float, seconds: float) -> float:
    """Run ``argv`` in a pseudo-terminal; its tree's CPU use over ``seconds``, in % of a core."""
    import fcntl
    import struct
    import termios

    pid, master = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))

    def drain(until: float) -> None:
        while time.monotonic() < until:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    os.read(master, 65536)
                except OSError:
                    return

    try:
        drain(time.monotonic() + warmup)
        before, start = tree_cpu(pid), time.monotonic()
        drain(start + seconds)
        after, end = tree_cpu(pid), time.monotonic()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(master)
    return 100.0 * (after - before) / (end - start)


def pending_store(scratch: Path, link: Path, fake_python: Path, runs: int) -> Path:
    """A project dir, and ``runs`` SkyPilot handles whose launches the fake holds pending."""
    from x_tui.backends.skypilot.backend import SkyPilotBackend
    from x_tui.backends.skypilot.task import cluster_name
    from x_tui.compute.store import RunHandle, RunStore, new_run_id

    project = scratch / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
    state = scratch / "state"
    settings = {"sky": str(link), "bucket": {"outputs_bucket": "s3://bench"}}
    table = SkyPilotBackend(settings).settings.table()
    store = RunStore(state / "compute" / "runs")
    for index in range(runs):
        run_id = new_run_id(f"pending{index}")
        cluster = cluster_name(run_id)
        made = subprocess.run(
            [
                str(fake_python),
                "-c",
                f"from sky._fake import state; print(state.new_request('launch', {cluster!r}))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        store.save(
            RunHandle(
                run_id=run_id,
                backend="skypilot",
                job=f"pending{index}",
                project=str(project),
                submitted_at=dt.datetime.now(dt.UTC),
                settings=dict(table),
                details={
                    "cluster": cluster,
                    "request_id": made.stdout.strip(),
                    "transport": "bucket",
                },
            )
        )
    return project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--real", type=Path, default=REAL)
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--no-tui", action="store_true")
    parser.add_argument("--child", choices=("long-lived", "one-shot"))
    parser.add_argument("--project", type=Path)
    args = parser.parse_args()
    if args.child:
        _child_xtui(args.project, args.child == "one-shot")
        return 0

    from tests.backends.fake_sky.harness import make_sky_tool

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        tool = make_sky_tool(scratch / "sky-tool")
        os.environ["FAKE_SKY_ROOT"] = str(scratch / "fake-sky")
        print_answers(
            f"status answers ({args.answers} each), fake SkyPilot",
            answers(str(tool.python), args.answers),
        )
        if not args.no_real and args.real.exists():
            home = scratch / "home"
            home.mkdir()
            saved = dict(os.environ)
            os.environ.update(
                HOME=str(home),
                SKYPILOT_DISABLE_USAGE_COLLECTION="1",
                SKYPILOT_API_SERVER_LOCAL_PORT=str(free_port()),
            )
            try:
                start = time.monotonic()
                one_shot_answer(str(args.real), "poll", poll_args("sx-bench-start"))
                print(f"(real SkyPilot's API server started in {time.monotonic() - start:.1f} s)")
                print_answers(
                    f"status answers ({args.answers} each), real SkyPilot 0.14.1, offline",
                    answers(str(args.real), args.answers),
                )
            finally:
                subprocess.run(
                    [str(args.real.parent / "sky"), "api", "stop"],
                    capture_output=True,
                    timeout=120,
                    check=False,
                )
                os.environ.clear()
                os.environ.update(saved)
        elif not args.no_real:
            print(f"(real SkyPilot not measured: {args.real} does not exist)")
        if args.no_tui:
            return 0
        env = dict(os.environ)
        env.update(
            SUBSTRAX_STATE_DIR=str(scratch / "state"),
            X_TUI_CONFIG=str(scratch / "no-settings.toml"),
            TERM="xterm-256color",
        )
        os.environ["SUBSTRAX_STATE_DIR"] = env["SUBSTRAX_STATE_DIR"]
        project = pending_store(scratch, tool.link, tool.python, args.runs)
        figures = {}
        for way in ("one-shot", "long-lived"):
            figures[way] = measure_tui(
                [sys.executable, __file__, "--child", way, "--project", str(project)],
                env,
                warmup=args.warmup,
                seconds=args.seconds,
            )
        print(
            f"open TUI, {args.runs} pending SkyPilot runs (fake), {args.seconds:g} s after"
            f" {args.warmup:g} s warm-up, CPU of x-tui and its bridge"
        )
        for way, label in (
            ("one-shot", "one-shot bridge, one status per run (before)"),
            ("long-lived", "long-lived bridge, one poll per round      "),
        ):
            print(f"  {label}  {figures[way]:6.2f}% of a core")
        ratio = figures["long-lived"] / max(figures["one-shot"], 1e-9)
        print(f"  long-lived / one-shot: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
