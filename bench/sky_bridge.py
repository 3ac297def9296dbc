"""A SkyPilot status answer's cost, and an open TUI's CPU, before and after, on the fake and real.

Part 1: the answer ``status`` needs (one ``poll``) asked of SkyPilot's interpreter ``--answers``
times: one interpreter per answer (``<sky python> -I sky_sdk.py``, the way x-tui asked before the
long-lived bridge), the long-lived bridge as it was at ``--before`` (``sky_sdk.py`` of that
commit: a ``status`` request through SkyPilot's API server for the clusters that exist) and the
long-lived bridge now (SkyPilot's own cluster table read where its API server is this
machine's). Wall time per answer, and CPU per answer: x-tui's side (the bridge's and this
process's, user + system) and, on the real SkyPilot, its API server's (the whole process tree),
first and later.

On the fake SkyPilot of the tests the answer is one poll of one cluster. On the real one
(``--real``, by default where ``scripts/install_skypilot.sh`` installs SkyPilot 0.14.1), offline:
its own API server in a scratch HOME, started before anything is measured, with ``--runs``
launches recorded as PENDING in the API server's own request database (the state a run is in
while its cluster is provisioned; nothing picks them up offline, so they stay so), and the
answer is one poll of those runs, as the run monitor asks.

Part 2: x-tui opened in a 120x40 pseudo-terminal on a store holding ``--runs`` SkyPilot runs
whose launches stay pending, left to settle for ``--warmup`` seconds, then its CPU (its own, its
bridge's, and its waited-for children's) over ``--seconds``, and the API server's over the same
time. Real SkyPilot: the bridge at ``--before`` against now. Fake: one interpreter per status and
one status call per run (before) against the long-lived bridge and one poll per round.

    uv run python bench/sky_bridge.py [--answers 5] [--runs 20] [--warmup 10] [--seconds 60]
        [--real PYTHON | --no-real] [--before COMMIT] [--no-tui] [--no-fake-tui]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import resource
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

from pty_child import in_pty  # noqa: E402

from x_tui.backends.skypilot import bridge as bridge_module  # noqa: E402
from x_tui.backends.skypilot.bridge import SCRIPT, Bridge, bridge_pids, close_bridges  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
REAL = (
    Path(os.environ.get("X_TUI_SKYPILOT_HOME", Path.home() / ".cache" / "x-tui-tests"))
    / "skypilot-0.14.1"
    / "tools"
    / "skypilot"
    / "bin"
    / "python"
)
BEFORE = "a3c6fba"
"""The commit whose bridge asked SkyPilot's API server for the clusters that exist."""


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


def processes() -> dict[int, tuple[int, bytes]]:
    """Every process: its parent and its command line."""
    found: dict[int, tuple[int, bytes]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                found[int(entry.name)] = (int(stat[1]), (entry / "cmdline").read_bytes())
    return found


def tree_of(roots: list[int], table: dict[int, tuple[int, bytes]]) -> set[int]:
    tree, frontier = set(roots), list(roots)
    while frontier:
        parent = frontier.pop()
        for child, (its_parent, _) in table.items():
            if its_parent == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return tree


def tree_cpu(pid: int) -> float:
    """CPU of ``pid`` and every live descendant (a bridge is a child never waited for)."""
    return sum(proc_cpu(member) for member in tree_of([pid], processes()))


def server_pids(port: int | None) -> set[int]:
    """The processes of the SkyPilot API server listening on ``port`` (none without one)."""
    if port is None:
        return set()
    table = processes()
    mark = f"--port={port}".encode()
    roots = [
        pid for pid, (_, line) in table.items() if b"sky.server.server" in line and mark in line
    ]
    return tree_of(roots, table)


def server_cpu(pids: set[int]) -> float:
    return sum(proc_cpu(pid) for pid in pids)


def poll_args(cluster: str) -> dict[str, Any]:
    return {"runs": [{"cluster": cluster, "request_id": None, "launched": False}]}


def pending_poll(launches: list[tuple[str, str, str]]) -> dict[str, Any]:
    """The poll the run monitor sends for runs whose launches are pending."""
    return {
        "runs": [
            {"cluster": cluster, "request_id": request_id, "launched": False}
            for _, cluster, request_id in launches
        ]
    }


def one_shot_answer(python: str, op: str, args: Mapping[str, Any], script: Path = SCRIPT) -> Any:
    """Ask SkyPilot's interpreter one question the way x-tui did before: one process for it."""
    done = subprocess.run(
        [python, "-I", str(script)],
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


Figure = tuple[float, float, float]
"""Wall seconds, x-tui's CPU seconds, the API server's CPU seconds."""


def answers(
    python: str,
    count: int,
    question: Callable[[int], dict[str, Any]],
    *,
    before: Path,
    port: int | None = None,
) -> dict[str, list[Figure]]:
    """Wall and CPU of ``count`` status answers, each way."""
    found: dict[str, list[Figure]] = {}

    def measure(way: str, ask: Callable[[int], object], cpu: Callable[[], float]) -> None:
        found[way] = []
        for index in range(count):
            pids = server_pids(port)
            before_server, before_cpu, start = server_cpu(pids), cpu(), time.monotonic()
            ask(index)
            wall, mine = time.monotonic() - start, cpu() - before_cpu
            found[way].append((wall, mine, server_cpu(pids | server_pids(port)) - before_server))

    measure(
        "one-shot",
        lambda index: one_shot_answer(python, "poll", question(index), before),
        lambda: children_cpu() + own_cpu(),
    )
    for way, script in (("long-lived, before", before), ("long-lived, now", SCRIPT)):
        close_bridges()
        bridge_module.SCRIPT = script  # type: ignore[misc]
        bridge = Bridge(sky="sky", sky_python=python)

        def ask(index: int, bridge: Bridge = bridge) -> object:
            return bridge.call("poll", question(index), what="bench")

        measure(
            way,
            ask,
            lambda: sum(proc_cpu(pid) for pid in bridge_pids()) + own_cpu(),
        )
    close_bridges()
    bridge_module.SCRIPT = SCRIPT  # type: ignore[misc]
    return found


def print_answers(title: str, found: dict[str, list[Figure]], *, server: bool) -> None:
    print(title)
    later: dict[str, Figure] = {}
    for way, figures in found.items():
        rest = figures[1:] or figures
        means = tuple(sum(figure[i] for figure in rest) / len(rest) for i in range(3))
        later[way] = (means[0], means[1], means[2])
        first = figures[0]

        def text(figure: Figure) -> str:
            line = f"{figure[0]:6.3f} s wall, {figure[1]:6.3f} s CPU"
            return f"{line} (+ API server {figure[2]:6.3f} s)" if server else line

        print(f"  {way:18}  first: {text(first)}")
        print(f"  {'':18}  later (mean of {len(rest)}): {text(later[way])}")
    now = later["long-lived, now"]
    for reference in ("one-shot", "long-lived, before"):
        wall, cpu, api = later[reference]
        line = (
            f"  later answer, now / {reference}: wall {now[0] / wall:.3f},"
            f" CPU {now[1] / max(cpu, 1e-9):.3f}"
        )
        if server:
            line += f", CPU with the API server's {(now[1] + now[2]) / max(cpu + api, 1e-9):.3f}"
        print(line)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def before_script(scratch: Path, commit: str) -> Path:
    """``sky_sdk.py`` as it was at ``commit``."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:x_tui/backends/skypilot/sky_sdk.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = scratch / f"sky_sdk_{commit}.py"
    path.write_text(text)
    return path


# The open TUI -----------------------------------------------------------------------------------


def _child_xtui(project: Path, way: str, script: Path | None) -> None:
    from x_tui.app import hold_garbage_until_listed

    hold_garbage_until_listed()  # first, as ``x-tui`` itself starts (``run_app``)
    from x_tui.app.app import XTuiApp
    from x_tui.app.service import Service

    if script is not None:
        bridge_module.SCRIPT = script  # type: ignore[misc]
    if way == "one-shot":  # x-tui as it asked before: one interpreter per call, one status per run
        from x_tui.backends.skypilot import backend as sky_backend
        from x_tui.compute.backend import Capability

        def call(self: Bridge, op: str, args: Mapping[str, Any], **_: object) -> Any:
            return one_shot_answer(self.interpreter()[0], op, args, bridge_module.SCRIPT)

        Bridge.call = call  # type: ignore[method-assign]
        built = sky_backend.SkyPilotBackend.__init__

        def init(self: Any, settings: Any = None) -> None:
            built(self, settings)
            self.capabilities = self.capabilities - {Capability.STATUSES}

        sky_backend.SkyPilotBackend.__init__ = init  # type: ignore[method-assign]
    XTuiApp(project, service=Service()).run()


def measure_tui(
    argv: list[str], env: dict[str, str], *, warmup: float, seconds: float, port: int | None
) -> tuple[float, float]:
    """Run ``argv`` in a pseudo-terminal: its tree's CPU use over ``seconds`` and the API
    server's, in % of a core."""
    with in_pty(argv, env) as child:
        child.drain(time.monotonic() + warmup)
        pids = server_pids(port)
        before, api, start = tree_cpu(child.pid), server_cpu(pids), time.monotonic()
        child.drain(start + seconds)
        after, end = tree_cpu(child.pid), time.monotonic()
        api = server_cpu(pids | server_pids(port)) - api
    return 100.0 * (after - before) / (end - start), 100.0 * api / (end - start)


def pending_store(
    scratch: Path, settings: dict[str, Any], launches: list[tuple[str, str, str]]
) -> Path:
    """A project dir, and a SkyPilot handle for each ``(run_id, cluster, request_id)``."""
    from x_tui.backends.skypilot.backend import SkyPilotBackend
    from x_tui.compute.store import RunHandle, RunStore

    project = scratch / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
    table = SkyPilotBackend(settings).settings.table()
    store = RunStore(Path(os.environ["SUBSTRAX_STATE_DIR"]) / "compute" / "runs")
    for run_id, cluster, request_id in launches:
        store.save(
            RunHandle(
                run_id=run_id,
                backend="skypilot",
                job=run_id.rsplit("-", 2)[0],
                project=str(project),
                submitted_at=dt.datetime.now(dt.UTC),
                settings=dict(table),
                details={"cluster": cluster, "request_id": request_id, "transport": "bucket"},
            )
        )
    return project


def new_launches(runs: int) -> list[tuple[str, str]]:
    """``(run_id, cluster)`` of ``runs`` new runs."""
    from x_tui.backends.skypilot.task import cluster_name
    from x_tui.compute.store import new_run_id

    made = []
    for index in range(runs):
        run_id = new_run_id(f"pending{index}")
        made.append((run_id, cluster_name(run_id)))
    return made


def fake_pending(fake_python: Path, runs: int) -> list[tuple[str, str, str]]:
    """Launches the fake SkyPilot holds pending."""
    launches = []
    for run_id, cluster in new_launches(runs):
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
        launches.append((run_id, cluster, made.stdout.strip()))
    return launches


RECORD_PENDING = """
import asyncio, json, os, sys, time, uuid
import sky
from sky import core
from sky.server.requests import payloads, requests as api_requests

async def record(clusters):
    ids = []
    for cluster in clusters:  # the entrypoint is never run: no worker takes these from a queue
        request_id = str(uuid.uuid4())
        await api_requests.create_if_not_exists_async(api_requests.Request(
            request_id=request_id, name="launch", entrypoint=core.status,
            request_body=payloads.RequestBody(), status=api_requests.RequestStatus.PENDING,
            created_at=time.time(), user_id="bench", cluster_name=cluster,
            schedule_type=api_requests.ScheduleType.LONG))
        ids.append(request_id)
    return ids

sky.get(sky.status(cluster_names=["sx-bench-ready"]))
print(json.dumps(asyncio.run(record(sys.argv[1:]))), flush=True)
os._exit(0)  # what the request database left running holds the interpreter for minutes
"""
"""Run by SkyPilot's interpreter: PENDING launch requests in its API server's own database."""


def real_pending(python: Path, runs: int) -> list[tuple[str, str, str]]:
    """Launches the real SkyPilot's API server records as PENDING (its server already up)."""
    made = new_launches(runs)
    done = subprocess.run(
        [str(python), "-c", RECORD_PENDING, *(cluster for _, cluster in made)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"cannot record pending launches: {done.stderr[-2000:]}")
    ids = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        (run_id, cluster, request_id)
        for (run_id, cluster), request_id in zip(made, ids, strict=True)
    ]


def tui_figures(
    title: str,
    *,
    ways: list[tuple[str, str, Path | None]],
    project: Path,
    env: dict[str, str],
    args: argparse.Namespace,
    port: int | None,
) -> None:
    """Each way's open-TUI CPU, printed with the ratio of the last way to the first."""
    figures = {}
    for label, way, script in ways:
        argv = [sys.executable, __file__, "--child", way, "--project", str(project)]
        if script is not None:
            argv += ["--script", str(script)]
        figures[label] = measure_tui(argv, env, warmup=args.warmup, seconds=args.seconds, port=port)
    print(
        f"open TUI, {args.runs} pending SkyPilot runs ({title}), {args.seconds:g} s after"
        f" {args.warmup:g} s warm-up, CPU of x-tui and its bridge"
        + (" (and of SkyPilot's API server)" if port is not None else "")
    )
    for label, (mine, api) in figures.items():
        line = f"  {label:48}  {mine:6.2f}% of a core"
        print(line + (f"  (API server {api:6.2f}%)" if port is not None else ""))
    (first, _), (last, _) = figures[ways[0][0]], figures[ways[-1][0]]
    print(f"  {ways[-1][0].strip()} / {ways[0][0].strip()}: {last / max(first, 1e-9):.3f}")


def main() -> int:  # noqa: PLR0915 - the bench, read top to bottom
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--real", type=Path, default=REAL)
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--no-tui", action="store_true")
    parser.add_argument("--no-fake-tui", action="store_true")
    parser.add_argument("--child", choices=("long-lived", "one-shot"))
    parser.add_argument("--project", type=Path)
    parser.add_argument("--script", type=Path)
    args = parser.parse_args()
    if args.child:
        _child_xtui(args.project, args.child, args.script)
        return 0

    from tests.backends.fake_sky.harness import make_sky_tool

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        before = before_script(scratch, args.before)
        tool = make_sky_tool(scratch / "sky-tool")
        os.environ["FAKE_SKY_ROOT"] = str(scratch / "fake-sky")
        print_answers(
            f"status answers ({args.answers} each), fake SkyPilot, one cluster",
            answers(
                str(tool.python),
                args.answers,
                lambda index: poll_args(f"sx-b-{index}"),
                before=before,
            ),
            server=False,
        )
        base_env = dict(os.environ)
        base_env.update(X_TUI_CONFIG=str(scratch / "no-settings.toml"), TERM="xterm-256color")
        if not args.no_real and args.real.exists():
            home = scratch / "home"
            home.mkdir()
            saved = dict(os.environ)
            port = free_port()
            os.environ.update(
                HOME=str(home),
                SKYPILOT_DISABLE_USAGE_COLLECTION="1",
                SKYPILOT_API_SERVER_LOCAL_PORT=str(port),
                SUBSTRAX_STATE_DIR=str(scratch / "real-state"),
            )
            try:
                start = time.monotonic()
                one_shot_answer(str(args.real), "poll", poll_args("sx-bench-start"))
                print(f"(real SkyPilot's API server started in {time.monotonic() - start:.1f} s)")
                launches = real_pending(args.real, args.runs)
                print_answers(
                    f"status answers ({args.answers} each), real SkyPilot 0.14.1, offline,"
                    f" one poll of {args.runs} runs whose launches are pending",
                    answers(
                        str(args.real),
                        args.answers,
                        lambda index: pending_poll(launches),
                        before=before,
                        port=port,
                    ),
                    server=True,
                )
                if not args.no_tui:
                    settings = {
                        "sky": str(args.real.parent / "sky"),
                        "bucket": {"outputs_bucket": "s3://bench"},
                    }
                    project = pending_store(scratch / "real", settings, launches)
                    tui_figures(
                        "real SkyPilot 0.14.1, offline",
                        ways=[
                            (f"long-lived bridge at {args.before} (before)", "long-lived", before),
                            ("long-lived bridge now (after)", "long-lived", None),
                        ],
                        project=project,
                        env={**base_env, **os.environ},
                        args=args,
                        port=port,
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
        if args.no_tui or args.no_fake_tui:
            return 0
        os.environ["SUBSTRAX_STATE_DIR"] = str(scratch / "state")
        settings = {"sky": str(tool.link), "bucket": {"outputs_bucket": "s3://bench"}}
        project = pending_store(scratch / "fake", settings, fake_pending(tool.python, args.runs))
        tui_figures(
            "fake",
            ways=[
                ("one-shot bridge, one status per run (before)", "one-shot", None),
                ("long-lived bridge, one poll per round (after)", "long-lived", None),
            ],
            project=project,
            env={**base_env, "SUBSTRAX_STATE_DIR": os.environ["SUBSTRAX_STATE_DIR"]},
            args=args,
            port=None,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
