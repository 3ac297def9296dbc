"""The long-lived bridge: one SkyPilot interpreter per x-tui process, answering many requests,
restarted after a crash (a read asked again, a change never), and never outliving x-tui, even
one killed with SIGKILL. Real processes throughout: the fake SkyPilot's interpreter, or a small
scripted bridge where a test needs one that dies at a chosen moment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.bridge import Bridge, bridge_pids, close_bridges
from x_tui.compute.backend import RunState
from x_tui.compute.worker.errors import ProviderError
from x_tui.compute.worker.spec import JobSpec, Task

from .fake_sky.harness import FakeSky, make_locked_project

pytestmark = pytest.mark.slow  # a fake SkyPilot and its bridge processes per test


GONE_SECONDS = 5.0

HOLDER = """
import os, sys, time
from x_tui.backends.skypilot.bridge import Bridge, bridge_pids
bridge = Bridge(sky=sys.argv[1], sky_python=None)
bridge.call("launch_state", {"cluster": "sx-none", "request_id": None}, what="asking")
child = 0
if sys.argv[2] == "fork":  # a child that holds the bridge's pipe open after x-tui dies
    child = os.fork()
    if child == 0:
        time.sleep(120)
        os._exit(0)
print(bridge_pids()[0], child, flush=True)
time.sleep(600)
"""

SCRIPTED = """#!{python}
import json, os, sys
log = os.environ["SCRIPTED_BRIDGE_LOG"]
first = not os.path.exists(log)
for line in sys.stdin:
    request = json.loads(line)
    with open(log, "a") as stream:
        stream.write(f"{{os.getpid()}} {{request['op']}}\\n")
    if first:
        os.kill(os.getpid(), 9)  # dies with the request in hand
    answer = {{"id": request["id"], "event": "done", "value": os.getpid()}}
    print(json.dumps(answer), flush=True)
"""


@pytest.fixture(autouse=True)
def no_bridge_left() -> Iterator[None]:
    close_bridges()  # each test counts the bridges it started
    yield
    close_bridges()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def eventually(check: Callable[[], bool], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds:g} s")
        time.sleep(0.05)


def test_many_requests_are_answered_by_one_interpreter(fake_sky: FakeSky) -> None:
    first = Bridge(sky=str(fake_sky.tool.link), sky_python=None)
    second = Bridge(sky=str(fake_sky.tool.link), sky_python=None)
    for bridge in (first, second, first):
        answer = bridge.call(
            "launch_state", {"cluster": "sx-none", "request_id": None}, what="asking"
        )
        assert answer == {"state": "unknown", "request_id": None, "cluster_exists": False}
    [pid] = bridge_pids()
    assert alive(pid)
    close_bridges()
    eventually(lambda: not alive(pid), "the bridge's end at exit", GONE_SECONDS)


@pytest.mark.parametrize("holder", ["alone", "fork"])
def test_the_bridge_of_an_xtui_killed_with_sigkill_is_gone_within_seconds(
    fake_sky: FakeSky, holder: str
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(fake_sky.tool.link), holder],
        stdout=subprocess.PIPE,
        text=True,
    )
    child = 0
    try:
        assert process.stdout is not None
        bridge, child = (int(word) for word in process.stdout.readline().split())
        assert alive(bridge)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if child:  # the pipe is still open in the child: the bridge sees its parent go
            assert alive(child)
        eventually(lambda: not alive(bridge), "the bridge's end", GONE_SECONDS)
    finally:
        process.kill()
        process.wait()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Bridge, Path]:
    """A bridge whose first interpreter dies with its first request in hand."""
    python = tmp_path / "python"
    python.write_text(SCRIPTED.format(python=sys.executable))
    python.chmod(0o755)
    log = tmp_path / "requests.log"
    monkeypatch.setenv("SCRIPTED_BRIDGE_LOG", str(log))
    return Bridge(sky="sky", sky_python=str(python)), log


def test_a_read_whose_bridge_died_is_answered_by_a_fresh_one(
    scripted: tuple[Bridge, Path],
) -> None:
    bridge, log = scripted
    answer = bridge.call("queue", {"cluster": "c"}, what="reading the queue of c")
    [died, fresh] = log.read_text().splitlines()
    assert died.split()[1] == fresh.split()[1] == "queue"
    assert answer == int(fresh.split()[0]) != int(died.split()[0])
    assert bridge_pids() == [answer]


@pytest.mark.parametrize("op", ["down", "cancel_job", "cancel_request"])
def test_a_change_whose_bridge_died_is_never_sent_again(
    scripted: tuple[Bridge, Path], op: str
) -> None:
    bridge, log = scripted
    with pytest.raises(ProviderError, match=r"ended without an answer while tearing down"):
        bridge.call(op, {"cluster": "c"}, what="tearing down c")
    assert [line.split()[1] for line in log.read_text().splitlines()] == [op]
    answer = bridge.call("queue", {"cluster": "c"}, what="reading the queue of c")
    assert [line.split()[1] for line in log.read_text().splitlines()] == [op, "queue"]
    assert bridge_pids() == [answer]


def test_a_bridge_killed_mid_request_is_replaced_and_the_launch_is_never_repeated(
    fake_sky: FakeSky, tmp_path: Path
) -> None:
    project = make_locked_project(tmp_path / "project", {})
    backend = SkyPilotBackend(
        {
            "sky": str(fake_sky.tool.link),
            "state_dir": str(tmp_path / "state"),
            "bucket": {"outputs_bucket": "s3://runs"},
        }
    )
    spec = JobSpec(
        name="hello",
        tasks=(Task(name="hi", argv=("python", "-c", "print(1)"), timeout_seconds=60.0),),
        timeout_seconds=60.0,
    )
    fake_sky.hold("hold-launch")  # SkyPilot has the request; provisioning never answers
    handle = backend.submit(spec, project=project)
    assert backend.status(handle) is RunState.PENDING
    [old] = bridge_pids()
    ended: list[BaseException] = []

    def follow() -> None:  # the launch's log, followed: a request the bridge holds
        try:
            for _ in backend.logs(handle, follow=True):
                pass
        except BaseException as error:
            ended.append(error)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    time.sleep(1.0)
    os.kill(old, signal.SIGKILL)
    assert backend.status(handle) is RunState.PENDING
    [new] = bridge_pids()
    assert new != old
    assert not alive(old)
    assert len(fake_sky.requests("launch")) == 1
    close_bridges()
    reader.join(GONE_SECONDS)
    assert not reader.is_alive()
    assert len(fake_sky.requests("launch")) == 1


def test_the_serving_bridge_refuses_a_launch(fake_sky: FakeSky) -> None:
    bridge = Bridge(sky=str(fake_sky.tool.link), sky_python=None)
    with pytest.raises(ProviderError, match=r"a launch runs one-shot"):
        bridge.call("launch", {"cluster": "sx-x"}, what="launching sx-x")
    assert fake_sky.requests("launch") == []


HANGS_FIRST = """#!{python}
import json, os, sys, time
log = os.environ["SCRIPTED_BRIDGE_LOG"]
first = not os.path.exists(log)
with open(log, "a") as stream:
    stream.write(f"{{os.getpid()}}\\n")
for line in sys.stdin:
    request = json.loads(line)
    if first:
        time.sleep(600)  # hangs with the request in hand
    print(json.dumps({{"id": request["id"], "event": "done", "value": os.getpid()}}), flush=True)
"""


def test_a_bridge_that_hangs_past_a_deadline_is_replaced_for_the_next_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    close_bridges()  # the bridges an earlier test of this worker left are not this test's
    python = tmp_path / "python"
    python.write_text(HANGS_FIRST.format(python=sys.executable))
    python.chmod(0o755)
    started = tmp_path / "started"
    monkeypatch.setenv("SCRIPTED_BRIDGE_LOG", str(started))
    bridge = Bridge(sky="sky", sky_python=str(python))
    with pytest.raises(ProviderError, match=r"did not answer within 0.5 s"):
        bridge.call("queue", {"cluster": "c"}, what="reading the queue of c", seconds=0.5)
    [hung] = (int(pid) for pid in started.read_text().split())
    answer = bridge.call("queue", {"cluster": "c"}, what="reading the queue of c", seconds=30)
    assert isinstance(answer, int)
    assert answer != hung
    eventually(lambda: not alive(hung), "the hung bridge's end", GONE_SECONDS)
    # Only this test's two bridges are looked at: on a loaded machine an earlier test's thread
    # may still start a bridge of its own in this worker.
    eventually(
        lambda: [pid for pid in bridge_pids() if pid in (hung, answer)] == [answer],
        "only the new bridge serving",
        GONE_SECONDS,
    )
    assert [int(pid) for pid in started.read_text().split()] == [hung, answer]
