"""What every test may share: the deadline a test waits for something, the one way to wait, a
lock for the rare test that must use a fixed path, and the port a test's server listens on.

A test waits for a condition, never for a measured time: :func:`wait_for` polls a condition in
plain code, :func:`wait_until` lets a Textual app run (through its ``Pilot``) until a condition
holds. Both fail naming what they waited for once :data:`DEADLINE` has passed; the deadline is
generous (the machine may be busy) and is a failure, never a timing threshold.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fcntl
import functools
import io
import itertools
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from textual.app import App
from textual.css.query import NoMatches
from textual.pilot import Pilot

from x_tui.app.run_follower import PollIntervals
from x_tui.backends.local.process import ProcessInfo, process_info
from x_tui.compute.backend import Capability, RunState
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import ProviderError

T = TypeVar("T")
P = ParamSpec("P")

DEADLINE = 60.0
"""Seconds a test waits for something before it fails (runs take about one second here)."""

EVERY = 0.02
"""Seconds between two looks at a condition."""

QUICK_POLLS = PollIntervals(first=0.1, max=0.4)
"""How often a test's app polls unfinished runs (``XTuiApp(poll_intervals=QUICK_POLLS)``): a
test's run ends in about a second, and the app's own intervals would wait up to two more."""


def oldest_python() -> str | None:
    """A Python 3.10 (the oldest the worker promises), from pyenv or ``PATH``; ``None`` without."""
    found = sorted(Path.home().glob(".pyenv/versions/3.10.*/bin/python3"))
    return str(found[-1]) if found else shutil.which("python3.10")


def run_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (dedented) in a fresh interpreter with ``args``, its output captured, for
    what only a whole process shows (how, and how soon, it exits); at most :data:`DEADLINE`."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def local_handle(run_id: str, submitted_at: dt.datetime) -> RunHandle:
    """A local run's handle, of the job its id names, whose worker is long gone (no such pid or
    run directory): what a table lists, never a process a test could touch."""
    return RunHandle(
        run_id=run_id,
        backend="local",
        job=run_id.rsplit("-", 2)[0],
        project="/home/user/sample",
        submitted_at=submitted_at,
        settings={"python": None, "state_dir": None},
        details={"pid": "999999999", "run_dir": f"/nonexistent/{run_id}"},
    )


def wait_for(
    condition: Callable[[], T], what: str, *, deadline: float = DEADLINE, every: float = EVERY
) -> T:
    """Look at ``condition()`` until it is truthy and return it; fail naming ``what``."""
    give_up = time.monotonic() + deadline
    while not (found := condition()):
        if time.monotonic() > give_up:
            raise AssertionError(f"gave up waiting for {what} after {deadline:g} s")
        time.sleep(every)
    return found


def deal_to_workers(
    items: Sequence[T], workers: int, *, file_of: Callable[[T], str], is_slow: Callable[[T], bool]
) -> list[T]:
    """The tests in the order that starts each of ``workers`` parallel workers on slow ones.

    pytest-xdist's ``worksteal`` schedule gives each worker one contiguous slice of the collection
    and lets an idle worker take the far end of a busy one's. Left in collection order, the slow
    tests (tens of seconds of waiting on real processes) bunch in a few slices, and one of them,
    reached last, keeps its worker busy after the others are done.

    Here each test file with a slow test goes whole to the start of one worker's slice, the file
    with the most slow tests first, each to the slice with the fewest slow tests so far. A file
    stays in one worker, so its module fixtures (a real SkyPilot API server, an inspected
    SkyPilot) are made once. The other files keep their order and fill the slices after. With
    fewer than two workers, or no slow test, the order is left as it is.

    Args:
        items: The tests, in collection order.
        workers: How many workers share them.
        file_of: A test's file.
        is_slow: Whether a test is slow.

    Returns:
        Every test of ``items``, each once.
    """
    files: dict[str, list[T]] = {}
    for item in items:
        files.setdefault(file_of(item), []).append(item)
    slow_in = {name: sum(map(is_slow, tests)) for name, tests in files.items()}
    if workers < 2 or not any(slow_in.values()):
        return list(items)
    fronts: list[list[T]] = [[] for _ in range(workers)]
    weights = [0] * workers
    for name in sorted((name for name in files if slow_in[name]), key=lambda n: -slow_in[n]):
        lightest = weights.index(min(weights))
        fronts[lightest] += files[name]
        weights[lightest] += slow_in[name]
    rest = iter([item for name, tests in files.items() if not slow_in[name] for item in tests])
    ordered: list[T] = []
    for worker, front in enumerate(fronts):  # the slices' sizes as worksteal cuts them
        size = (len(items) - len(ordered)) // (workers - worker)
        ordered += front + list(itertools.islice(rest, max(size - len(front), 0)))
    return ordered  # the last slice took what the others left


def wait_for_worker_arguments(pid: int) -> ProcessInfo:
    """Wait until process ``pid`` shows a worker's arguments (``--spec``); what the system says
    of it then.

    Until the kernel has set up a process's new program, its command line reads empty or as its
    parent's, and a local run's status asked then finds no worker and says failed. x-tui waits
    for this before it writes a run's handle; a test that starts a worker-like process by hand
    waits here.
    """

    def shown() -> ProcessInfo | None:
        info = process_info(pid)
        return info if info is not None and "--spec" in (info.argv or ()) else None

    return wait_for(shown, f"process {pid} to show its own arguments")


class FlakyBackend:
    """A backend whose runs are all ``answer`` (``running`` unless a test moves it on); while
    ``down`` is set, asking raises a provider error instead (an API unreachable for a while)."""

    name = "flaky"
    capabilities: frozenset[Capability] = frozenset()

    def __init__(self) -> None:
        self.down = threading.Event()
        self.answer = RunState.RUNNING

    def status(self, handle: RunHandle) -> RunState:
        """:attr:`answer`, or the provider's error while it is down."""
        if self.down.is_set():
            raise ProviderError("the provider's API is unreachable")
        return self.answer

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        """No output yet."""
        return iter(())


def asynchronous(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """Run an ``async def`` test in a fresh event loop (pytest itself runs only plain tests)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def wait_until(
    pilot: Pilot[Any], condition: Callable[[], bool], what: str, *, deadline: float = DEADLINE
) -> None:
    """Let the app run until ``condition()`` holds; fail naming ``what`` after the deadline.

    A condition that queries a widget the screen has not composed yet counts as not holding. The
    failure shows the screen as it was then, so a test that fails only on a loaded machine says
    what it saw.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + deadline
    while not _holds(condition):
        if loop.time() > give_up:
            raise AssertionError(
                f"gave up waiting for {what} after {deadline:g} s; {_shown(pilot.app)}"
            )
        await pilot.pause(EVERY * 2.5)
    await pilot.pause()


def _shown(app: App[Any]) -> str:
    """What ``app``'s screen in front shows, line by line, for a failure's message."""
    try:
        screen = app.screen
        lines = [strip.text.rstrip() for strip in screen._compositor.render_strips()]
    except Exception as error:  # the app may be gone: the failure says so instead
        return f"its screen could not be read ({type(error).__name__}: {error})"
    shown = "\n".join(f"  |{line}" for line in lines)
    return f"the {type(screen).__name__} in front showed:\n{shown}"


def _holds(condition: Callable[[], bool]) -> bool:
    try:
        return condition()
    except NoMatches:  # the screen has not composed its widgets yet
        return False


@contextlib.contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the machine-wide lock ``name`` (a ``flock`` on ``<tmp>/<name>.lock``) inside the block.

    For what cannot be made private to one test (a fixed path that shows on screen, a one-time
    install): tests in other workers, or in another checkout's run, wait their turn.
    """
    path = Path(tempfile.gettempdir()) / f"{name}.lock"
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def listenable(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` now (bound as servers bind it, with
    ``SO_REUSEADDR``: a port left in ``TIME_WAIT`` will do)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(accept: Callable[[int], bool] = listenable) -> int:
    """A port of 127.0.0.1 for a test's server: below the kernel's ephemeral range, and free now.

    A port the kernel hands out (``bind`` to port 0) comes from the ephemeral range, which every
    outgoing connection of the machine draws from too: between the probe and the server's own
    bind, a connection of another test (an ``ssh`` to a fake cluster, a request to moto) can take
    it, and the server fails to start. Below that range only another listener can take it, and
    the port is drawn at random from thousands; a server that loses it anyway is started again
    on another (see ``tests.backends.fake_sky.harness``).

    Args:
        accept: Whether a drawn port will do; by default, whether it is free (a server that also
            takes a second port, derived from the first, checks both).

    Raises:
        RuntimeError: If a thousand draws found none.
    """
    ranges = Path("/proc/sys/net/ipv4/ip_local_port_range")
    lowest = int(ranges.read_text().split()[0]) if ranges.exists() else 32768
    draw = random.SystemRandom()  # not the generator a test may have seeded
    for _ in range(1000):
        port = draw.randrange(min(20000, lowest // 2), lowest)
        if accept(port):
            return port
    raise RuntimeError(f"no free port of 127.0.0.1 below {lowest} in a thousand draws")


def run_x_tui(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``x-tui ARGS`` to its end in this process, as ``python -m x_tui ARGS`` would run.

    For a test of what a verb does, not of the process around it (what Ctrl-C, a kill or a
    terminal do to it keeps a real process): each ``python -m x_tui`` costs an interpreter's
    start and its imports, many times the work of a short verb. ``cwd``, the whole environment
    (``env`` replaces it), stdin (empty, not a terminal), stdout and stderr are the verb's for
    the call and restored after it. An exception the verb lets out is printed as Python would
    print it, with exit status 1. ``watch``, which forks, is refused.
    """
    from x_tui.cli import main

    if list(args[:1]) == ["watch"]:
        raise ValueError("x-tui watch forks its watcher: run it in a process of its own")
    out, err = io.BytesIO(), io.BytesIO()
    out_text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    err_text = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    streams = sys.stdin, sys.stdout, sys.stderr
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), out_text, err_text
    os.environ.clear()
    os.environ.update(env)
    try:
        os.chdir(cwd)
        try:
            code: object = main(list(args))
        except SystemExit as stop:
            code = stop.code
        except Exception:  # the uncaught error a real process would print
            traceback.print_exc()
            code = 1
        if isinstance(code, str):  # sys.exit("message")
            print(code, file=sys.stderr)
        out_text.flush()
        err_text.flush()
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.stdin, sys.stdout, sys.stderr = streams
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    return subprocess.CompletedProcess(
        ["x-tui", *args], returncode, _text_mode(out.getvalue()), _text_mode(err.getvalue())
    )


def _text_mode(data: bytes) -> str:
    """What ``subprocess.run(..., text=True)`` makes of a process's output (newlines too)."""
    return data.decode().replace("\r\n", "\n").replace("\r", "\n")


def read_index_document(path: Path) -> dict[str, Any]:
    """A store index (or head) file's fields and columns as one document, to look at or damage
    (written back with :func:`x_tui.compute.store_index.index_text`)."""
    from x_tui.compute.store_index import joined_document

    document = joined_document([json.loads(line) for line in path.read_text().splitlines()])
    assert document is not None, f"{path} is no index"
    return document
