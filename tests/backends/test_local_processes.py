"""Every process a local run starts can be stopped, and no other process is ever touched.

Real processes throughout: a worker started by the backend, tasks that leave children ignoring
SIGTERM, grandchildren that call ``setsid`` (and lose their parent), a worker killed with SIGKILL,
and strangers that mention the run id or copy its marker's name.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from x_tui.backends.local import process as local_process
from x_tui.backends.local.backend import LocalBackend
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle, new_run_id
from x_tui.compute.worker import run_processes
from x_tui.compute.worker.spec import JobSpec, Task
from x_tui.testing.contract import wait_for_line, wait_until_final

pytestmark = pytest.mark.skipif(
    not run_processes.has_proc(), reason="finding a run's processes needs /proc"
)

IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"

FAMILY = f"""
import os, pathlib, signal, subprocess, sys, time
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
ignores = {IGNORES_TERM!r}
stubborn = subprocess.Popen([sys.executable, "-c", ignores])
escaped = subprocess.Popen([sys.executable, "-c", ignores], start_new_session=True)
# A daemon: its parent calls setsid for it and exits, so it is nobody's child but a subreaper's.
spawner = (
    "import subprocess, sys; "
    "p = subprocess.Popen([sys.executable, '-c', sys.argv[1]], start_new_session=True, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
    "print(p.pid)"
)
daemon = int(subprocess.run(
    [sys.executable, "-c", spawner, ignores], capture_output=True, text=True, check=True
).stdout)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = [os.getpid(), stubborn.pid, escaped.pid, daemon]
(out / "pids").write_text(" ".join(map(str, pids)))
print("ready", flush=True)
time.sleep(600)
"""

LEAVES_A_DAEMON = """
import os, pathlib, subprocess, sys
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
spawner = (
    "import subprocess, sys; "
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
    "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)"
)
daemon = subprocess.run([sys.executable, "-c", spawner], capture_output=True, text=True).stdout
(out / "pids").write_text(daemon.strip())
print("left a daemon", flush=True)
"""


def is_running(pid: int) -> bool:
    info = local_process.process_info(pid)
    return info is not None and not info.zombie


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while is_running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def backend_in(state: Path, *, grace: float = 1.0) -> LocalBackend:
    return LocalBackend(
        {"python": sys.executable, "state_dir": str(state)}, cancel_grace_seconds=grace
    )


def one_task(name: str, **spec: object) -> JobSpec:
    task = Task(name=name, argv=("python", f"{name}.py"), timeout_seconds=300.0)
    return JobSpec(name=name, tasks=(task,), timeout_seconds=300.0, **spec)  # type: ignore[arg-type]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "family.py").write_text(FAMILY)
    (root / "daemon.py").write_text(LEAVES_A_DAEMON)
    (root / "sleeps.py").write_text("import time\nprint('asleep', flush=True)\ntime.sleep(600)\n")
    (root / "marker.py").write_text(
        "import os\nprint('marker', os.environ['X_TUI_RUN'], flush=True)\n"
    )
    return root


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; killed at the end whatever happened, with what they started.

    A shell's command (``sh -c "sleep 1000 # ..."``) is a child of the shell: the process
    group of one started with ``start_new_session`` goes with it.
    """
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if process.returncode is None:  # not reaped yet, so its pid is still its own
            # (ProcessLookupError: it leads no group of its own)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
        process.wait()


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[list[int]]:
    """Pids a failing test could leave running; SIGKILLed at the end, with its runs' processes."""
    pids: list[int] = []
    yield pids
    for marker_file in (tmp_path / "state").glob(f"compute/local/*/{run_processes.MARKER_FILE}"):
        pids.extend(run_processes.marked_processes(marker_file.read_text()))
    for pid in pids:
        if is_running(pid):
            os.kill(pid, signal.SIGKILL)


def family_of(backend: LocalBackend, handle: RunHandle, leftovers: list[int]) -> list[int]:
    """The worker, then the task, its TERM-ignoring child, its setsid child and its daemon."""
    wait_for_line(backend, handle, "[family] ready", timeout=60)
    pids = [int(handle.details["pid"])]
    pids += [
        int(pid)
        for pid in (backend.run_files(handle).outputs / "family" / "pids").read_text().split()
    ]
    leftovers.extend(pids)
    assert all(is_running(pid) for pid in pids)
    return pids


def test_the_marker_is_inherited_unforgeable_by_the_jobs_env_and_kept_in_the_run_dir(
    project: Path, tmp_path: Path
) -> None:
    backend = backend_in(tmp_path / "state")
    spec = one_task("marker", env={"X_TUI_RUN": "forged"})
    handle = backend.submit(spec, project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    run_dir = Path(handle.details["run_dir"])
    marker = (run_dir / run_processes.MARKER_FILE).read_text()
    assert marker.startswith(f"{handle.run_id}:")
    assert len(marker) == len(handle.run_id) + 33
    assert f"[marker] marker {marker}" in list(backend.logs(handle, follow=False))
    assert (run_dir / run_processes.MARKER_FILE).stat().st_mode & 0o777 == 0o600


def test_cancel_stops_a_term_ignoring_child_a_setsid_grandchild_and_a_daemon(
    project: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    backend = backend_in(tmp_path / "state")
    handle = backend.submit(one_task("family"), project=project)
    pids = family_of(backend, handle, leftovers)
    backend.cancel(handle)
    assert [pid for pid in pids if is_running(pid)] == []
    assert backend.status(handle) is RunState.CANCELLED


def test_a_killed_workers_tasks_keep_the_run_running_until_cancel_stops_them(
    project: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    backend = backend_in(tmp_path / "state")
    handle = backend.submit(one_task("family"), project=project)
    worker, *tasks = family_of(backend, handle, leftovers)
    os.kill(worker, signal.SIGKILL)
    assert wait_gone(worker)
    assert all(is_running(pid) for pid in tasks)
    # Its processes live: the run is not over, and cancel has something to stop.
    assert backend.status(handle) is RunState.RUNNING
    backend.cancel(handle)
    assert [pid for pid in tasks if is_running(pid)] == []
    assert backend.status(handle) is RunState.CANCELLED
    backend.cancel(handle)  # again: nothing left, nothing raised
    assert backend.status(handle) is RunState.CANCELLED


def test_a_worker_ends_what_a_finished_task_left_even_in_another_session(
    project: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    backend = backend_in(tmp_path / "state")
    handle = backend.submit(one_task("daemon"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    daemon = int((backend.run_files(handle).outputs / "daemon" / "pids").read_text())
    leftovers.append(daemon)
    assert wait_gone(daemon, seconds=1.0)


def test_two_cancels_at_once_both_return_once_everything_is_stopped(
    project: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    backend = backend_in(tmp_path / "state")
    handle = backend.submit(one_task("family"), project=project)
    pids = family_of(backend, handle, leftovers)
    outcomes: list[object] = []

    def cancel() -> None:
        try:
            backend.cancel(handle)
        except BaseException as error:
            outcomes.append(error)
        else:
            outcomes.append([pid for pid in pids if is_running(pid)])

    threads = [threading.Thread(target=cancel) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # Neither said done while something of the run still ran.
    assert outcomes == [[], []]
    assert backend.status(handle) is RunState.CANCELLED


def test_what_merely_mentions_the_run_is_never_taken_for_it_nor_touched(
    project: Path, tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    backend = backend_in(tmp_path / "state")
    handle = backend.submit(one_task("sleeps"), project=project)
    wait_for_line(backend, handle, "[sleeps] asleep")
    run_id, run_dir = handle.run_id, Path(handle.details["run_dir"])
    marker = (run_dir / run_processes.MARKER_FILE).read_text()
    # A run as substrax leaves it: its handle has no start time, its directory no marker.
    other_id = new_run_id("pager")
    other_dir = tmp_path / "state" / "compute" / "local" / other_id
    other_dir.mkdir()
    (other_dir / "spec.json").write_text("{}")
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    bare = {key: value for key, value in os.environ.items() if key != "X_TUI_RUN"}
    strangers = {
        # A pager on both runs' files: its arguments hold their ids and directories.
        "pager": (
            [*sleeper, run_id, str(run_dir / "spec.json"), "--spec", str(other_dir / "spec.json")],
            bare,
        ),
        "comment": (["sh", "-c", f"sleep 1000 # {run_id} {other_id}"], bare),
        "wrong nonce": (sleeper, {**bare, "X_TUI_RUN": f"{run_id}:{secrets.token_hex(16)}"}),
        "no nonce": (sleeper, {**bare, "X_TUI_RUN": run_id}),
        "longer value": (sleeper, {**bare, "X_TUI_RUN": marker + "0"}),
        "other name": (sleeper, {**bare, "X_TUI_RUN_COPY": marker}),
    }
    for argv, env in strangers.values():
        spawned.append(subprocess.Popen(argv, env=env, start_new_session=True))
    substrax_handle = RunHandle(
        run_id=other_id,
        backend="local",
        job="pager",
        project=str(project),
        submitted_at=handle.submitted_at,
        details={"pid": str(spawned[0].pid), "run_dir": str(other_dir)},
    )
    assert backend.status(substrax_handle) is RunState.FAILED
    backend.cancel(substrax_handle)
    backend.cancel(handle)
    assert backend.status(handle) is RunState.CANCELLED
    alive = {name: process.poll() is None for name, process in zip(strangers, spawned, strict=True)}
    assert alive == dict.fromkeys(strangers, True)


def test_a_process_that_will_not_stop_is_named_and_the_run_stays_running(
    project: Path, tmp_path: Path, leftovers: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if the system would not let one process go (one stuck in the kernel, say)."""
    backend = backend_in(tmp_path / "state", grace=0.5)
    handle = backend.submit(one_task("family"), project=project)
    pids = family_of(backend, handle, leftovers)
    stuck = pids[3]  # the setsid grandchild
    real_signal = run_processes.signal_proven

    def spare_one(pid: int, signum: int, proof: object) -> bool:
        return pid != stuck and real_signal(pid, signum, proof)  # type: ignore[arg-type]

    monkeypatch.setattr(run_processes, "signal_proven", spare_one)
    with pytest.raises(ExceptionGroup) as raised:
        backend.cancel(handle)
    [failure] = raised.value.exceptions
    assert str(failure) == f"1 process of the run still runs after SIGKILL (pid {stuck})"
    assert [pid for pid in pids if is_running(pid)] == [stuck]
    assert backend.status(handle) is RunState.RUNNING
    monkeypatch.undo()
    backend.cancel(handle)
    assert not is_running(stuck)
    assert backend.status(handle) is RunState.CANCELLED


def test_a_substrax_worker_is_known_by_its_own_arguments_however_its_paths_are_spelt(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    run_id = new_run_id("spelt")
    run_dir = tmp_path / "state" / "compute" / "local" / run_id
    run_dir.mkdir(parents=True)
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    worker = [*sleeper, f"--spec={run_dir}/./spec.json", "--outputs", f"{run_dir}//outputs"]
    half = [*sleeper, "--spec", str(run_dir / "spec.json"), "--outputs", str(tmp_path)]
    spawned.extend(subprocess.Popen(argv, start_new_session=True) for argv in (worker, half))
    backend = backend_in(tmp_path / "state")

    def substrax_handle(pid: int) -> RunHandle:
        return RunHandle(
            run_id=run_id,
            backend="local",
            job="spelt",
            project=str(tmp_path),
            submitted_at=dt.datetime(2026, 9, 19, tzinfo=dt.UTC),
            details={"pid": str(pid), "run_dir": str(run_dir)},
        )

    assert backend.status(substrax_handle(spawned[0].pid)) is RunState.RUNNING
    assert backend.status(substrax_handle(spawned[1].pid)) is RunState.FAILED
    backend.cancel(substrax_handle(spawned[1].pid))
    assert spawned[1].poll() is None
    backend.cancel(substrax_handle(spawned[0].pid))
    assert spawned[0].wait(timeout=30) == -signal.SIGTERM
