"""The local backend: the contract, plus what only a run on this machine can show."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support import wait_for_worker_arguments
from x_tui.backends.local import process as local_process
from x_tui.backends.local.backend import LocalBackend
from x_tui.compute.backend import Capability, ComputeBackend, RunState, capabilities_of
from x_tui.compute.outputs import OutsideOutputsError, UnsafeOutputsError
from x_tui.compute.registry import load_backend
from x_tui.compute.store import RunHandle, new_run_id, read_handle
from x_tui.compute.worker import run_processes
from x_tui.compute.worker.errors import BadRecordError, ConfigError
from x_tui.compute.worker.manifest import (
    JobManifest,
    TaskOutcome,
    TaskStatus,
    load_manifest,
    write_manifest,
)
from x_tui.compute.worker.records import dumps_compact
from x_tui.compute.worker.spec import Accelerator, JobSpec, Mount, MountAccess, Resources, Task
from x_tui.compute.worker_bundle import WORKER_NAME
from x_tui.testing.contract import BackendContract, wait_for_line, wait_until_final


def local_backend(state_dir: Path, *, grace: float = 5.0) -> LocalBackend:
    return LocalBackend(
        {"python": sys.executable, "state_dir": str(state_dir)}, cancel_grace_seconds=grace
    )


class TestLocalBackend(BackendContract):
    def make_backend(self, state_dir: Path) -> ComputeBackend:
        return local_backend(state_dir)


def job(name: str, *tasks: tuple[str, tuple[str, ...]]) -> JobSpec:
    return JobSpec(
        name=name,
        tasks=tuple(Task(name=task, argv=argv, timeout_seconds=120.0) for task, argv in tasks),
        timeout_seconds=180.0,
    )


def script_job(name: str, script: str) -> JobSpec:
    """A job of one task, named like its script, that runs ``scripts/<script>.py``."""
    return job(name, (script, ("python", f"scripts/{script}.py")))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "scripts").mkdir(parents=True)
    return root


# --- settings -------------------------------------------------------------------------------


def test_an_unknown_setting_is_refused_naming_it_and_the_accepted_ones() -> None:
    with pytest.raises(ConfigError) as refused:
        LocalBackend({"gpu": "L4"})
    message = str(refused.value)
    assert "[tool.substrax.compute.backends.local]" in message
    assert "'gpu'" in message
    assert "python, state_dir" in message


def test_a_python_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"python: expected a non-empty string or nothing, got 3"):
        LocalBackend({"python": 3})


def test_the_settings_are_frozen_into_the_handle(project: Path, tmp_path: Path) -> None:
    (project / "scripts" / "quick.py").write_text("print('quick')\n")
    backend = local_backend(tmp_path / "state")
    handle = backend.submit(script_job("quick", "quick"), project=project)
    wait_until_final(backend, handle)
    assert handle.settings == {"python": sys.executable, "state_dir": str(tmp_path / "state")}
    assert set(handle.details) == {"pid", "run_dir", "start_time"}
    assert all(isinstance(value, str) for value in handle.details.values())
    assert Path(handle.details["run_dir"]).parent == tmp_path / "state" / "compute" / "local"


def test_the_local_backend_is_registered_and_declares_its_abilities(tmp_path: Path) -> None:
    backend = load_backend("local", {"state_dir": str(tmp_path)})
    assert isinstance(backend, LocalBackend)
    assert capabilities_of(backend) == {
        Capability.LOCAL_FILES,
        Capability.PEEK,
        Capability.PLAN,
        Capability.REQUEST,
        Capability.EXTENSIONS,
        Capability.ACCELERATORS,
        Capability.LAUNCH,
        Capability.LOG_PIECES,
        Capability.STATUSES,
    }


def test_an_interpreter_that_cannot_start_is_named(project: Path, tmp_path: Path) -> None:
    backend = LocalBackend({"python": str(tmp_path / "no-such-python"), "state_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="no-such-python") as refused:
        backend.submit(job("quick", ("quick", ("python", "-c", "pass"))), project=project)
    assert "python = " in str(refused.value)
    assert not any((tmp_path / "compute" / "local").iterdir())


# --- the interpreter ------------------------------------------------------------------------


def test_the_projects_venv_interpreter_runs_the_worker_and_its_tasks(
    project: Path, tmp_path: Path
) -> None:
    venv_python = project / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    backend = LocalBackend({"state_dir": str(tmp_path / "state")})
    spec = job("venv", ("which", ("python", "-c", "import sys; print(sys.executable)")))
    assert backend.plan(spec, project=project)["interpreter"] == [str(venv_python)]
    handle = backend.submit(spec, project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    manifest = load_manifest(backend.run_files(handle).outputs / "manifest.json")
    assert manifest is not None
    assert manifest.tasks[0].argv[0] == str(venv_python)
    # The worker it started came with this Python's bytecode (it compiles nothing at start).
    worker = (Path(handle.details["run_dir"]) / WORKER_NAME).read_bytes()
    archive = zipfile.ZipFile(io.BytesIO(worker[worker.index(b"PK") :]))
    assert "x_tui/compute/worker/main.pyc" in archive.namelist()


def test_the_plan_says_what_runs_and_that_nothing_is_provisioned(
    project: Path, tmp_path: Path
) -> None:
    backend = local_backend(tmp_path / "state")
    spec = JobSpec(
        name="big",
        tasks=(Task(name="train", argv=("python", "train.py"), timeout_seconds=60.0),),
        timeout_seconds=60.0,
        resources=Resources(
            accelerator=Accelerator(kind="H100", count=8), cpu=8.0, memory_mib=1024
        ),
        extras=("cuda12",),
        mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),),
    )
    plan = backend.plan(spec, project=project)
    assert plan["interpreter"] == [sys.executable]
    command = plan["command"]
    assert isinstance(command, list)
    assert command[0] == sys.executable
    assert command[-6:] == [
        "--spec",
        str(tmp_path / "state" / "compute" / "local" / "<run_id>" / "spec.json"),
        "--project",
        str(project.resolve()),
        "--outputs",
        str(tmp_path / "state" / "compute" / "local" / "<run_id>" / "outputs"),
    ]
    assert "not provisioned" in str(plan["provisions"])
    assert plan["not_provisioned"] == {
        "extras": ["cuda12"],
        "accelerator": "H100:8",
        "cpu": 8.0,
        "memory_mib": 1024,
        "mounts": ["datasets"],
    }
    machine = plan["machine"]
    assert isinstance(machine, dict)
    assert machine["cpus"] == os.cpu_count()
    assert isinstance(machine["gpus"], list)
    json.dumps(plan)


# --- liveness ------------------------------------------------------------------------------


def test_a_manifest_written_while_liveness_is_checked_reads_as_succeeded(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker writes its last manifest and exits between the two checks of ``status``."""
    (project / "scripts" / "sleeps.py").write_text("import time\ntime.sleep(600)\n")
    backend = local_backend(tmp_path / "state")
    handle = backend.submit(script_job("race", "sleeps"), project=project)
    outputs = backend.run_files(handle).outputs
    real_is_worker = local_process.is_worker

    def worker_finishes_during_the_check(run: local_process.RunProcesses) -> bool:
        write_manifest(outputs, finished_manifest("race", "sleeps"))
        local_process.kill_session(run.pid)  # returns once no process of the session is left
        return real_is_worker(run)

    monkeypatch.setattr(local_process, "is_worker", worker_finishes_during_the_check)
    assert backend.status(handle) is RunState.SUCCEEDED


def worker_like(run_dir: Path) -> list[str]:
    """A process whose arguments are those of ``run_dir``'s worker, as substrax starts it."""
    return [
        sys.executable,
        "-c",
        "import time; time.sleep(600)",
        "--spec",
        str(run_dir / "spec.json"),
        "--outputs",
        str(run_dir / "outputs"),
    ]


def test_a_reused_pid_does_not_read_as_the_worker(tmp_path: Path) -> None:
    run_id = new_run_id("reused")
    run_dir = tmp_path / run_id
    run_dir.mkdir()
    worker = subprocess.Popen(worker_like(run_dir), start_new_session=True)
    try:
        info = wait_for_worker_arguments(worker.pid)
        backend = LocalBackend({"state_dir": str(tmp_path)})
        same_start = local_handle(run_id, run_dir, worker.pid, start_time=info.start_time)
        other_start = local_handle(run_id, run_dir, worker.pid, start_time="1")
        assert backend.status(same_start) is RunState.RUNNING
        assert backend.status(other_start) is RunState.FAILED
        other_dir = tmp_path / new_run_id("other")
        other_dir.mkdir()
        unrelated = local_handle(other_dir.name, other_dir, worker.pid, start_time=None)
        assert backend.status(unrelated) is RunState.FAILED
    finally:
        worker.kill()
        worker.wait()


def test_without_proc_the_worker_is_recognised_and_cancelled_through_ps(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What macOS and the BSDs get: start times, liveness and cancel from ``ps`` alone."""
    monkeypatch.setattr(run_processes, "_PROC", tmp_path / "no-proc")
    (project / "scripts" / "sleeps.py").write_text(
        "import time\nprint('sleeping', flush=True)\ntime.sleep(600)\n"
    )
    backend = local_backend(tmp_path / "state", grace=1.0)
    handle = backend.submit(script_job("ps", "sleeps"), project=project)
    assert handle.details["start_time"].count(":") == 2  # ps's lstart, such as 'Sat Sep 19 ...'
    wait_for_line(backend, handle, "[sleeps] sleeping")
    assert backend.status(handle) is RunState.RUNNING
    moved = local_handle(
        handle.run_id, Path(handle.details["run_dir"]), int(handle.details["pid"]), start_time="x"
    )
    assert backend.status(moved) is RunState.FAILED
    backend.cancel(handle)
    assert not is_running(int(handle.details["pid"]))
    assert backend.status(handle) is RunState.CANCELLED


# --- detached runs and cancel ----------------------------------------------------------------

SUBMITTER = """
import json, sys
from pathlib import Path
from x_tui.backends.local.backend import LocalBackend
from x_tui.compute.worker.records import dumps_pretty
from x_tui.compute.worker.spec import JobSpec, Task

spec = JobSpec(
    name="detached",
    tasks=(Task(name="waits", argv=("python", "scripts/waits.py"), timeout_seconds=120.0),),
    timeout_seconds=180.0,
)
backend = LocalBackend({"python": sys.executable, "state_dir": sys.argv[2]})
print(dumps_pretty(backend.submit(spec, project=Path(sys.argv[1]))), flush=True)
sys.stdin.read()
"""


def test_a_detached_run_survives_the_hangup_of_the_process_that_submitted_it(
    project: Path, tmp_path: Path
) -> None:
    (project / "scripts" / "waits.py").write_text(
        "import pathlib, time\n"
        "while not pathlib.Path('go').exists():\n"
        "    time.sleep(0.05)\n"
        "print('went', flush=True)\n"
    )
    state = tmp_path / "state"
    submitter = subprocess.Popen(
        [sys.executable, "-c", SUBMITTER, str(project), str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert submitter.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "}\n":
        lines.append(submitter.stdout.readline())
        assert lines[-1], "the submitter exited without printing a handle"
    # What a closing terminal or SSH connection does to its session's foreground group.
    os.killpg(submitter.pid, signal.SIGHUP)
    assert submitter.wait() == -signal.SIGHUP
    handle = read_handle(json.loads("".join(lines)))
    backend = local_backend(state)
    assert backend.status(handle) is RunState.RUNNING
    (project / "go").touch()
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    assert "[waits] went" in list(backend.logs(handle, follow=False))


GRANDPARENT = """
import os, pathlib, signal, subprocess, sys, time
child = subprocess.Popen(
    [sys.executable, "-c",
     "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    process_group=0,
)
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
(out / "grandchild.pid").write_text(str(child.pid))
print("spawned", flush=True)
time.sleep(600)
"""


def test_cancel_kills_a_tasks_grandchildren_even_in_their_own_process_group(
    project: Path, tmp_path: Path
) -> None:
    (project / "scripts" / "family.py").write_text(GRANDPARENT)
    backend = local_backend(tmp_path / "state", grace=1.0)
    handle = backend.submit(script_job("family", "family"), project=project)
    wait_for_line(backend, handle, "[family] spawned")
    grandchild = int((backend.run_files(handle).outputs / "family" / "grandchild.pid").read_text())
    assert is_running(grandchild)
    backend.cancel(handle)
    assert not is_running(grandchild)
    assert not is_running(int(handle.details["pid"]))
    assert backend.status(handle) is RunState.CANCELLED


# --- outputs ---------------------------------------------------------------------------------


def test_fetch_copies_everything_but_a_link_and_names_the_link(
    project: Path, tmp_path: Path
) -> None:
    (project / "scripts" / "links.py").write_text(
        "import os, pathlib\n"
        "out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'])\n"
        "(out / 'kept.txt').write_text('kept')\n"
        "os.symlink('/etc', out / 'escape')\n"
    )
    backend = local_backend(tmp_path / "state")
    handle = backend.submit(script_job("links", "links"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    with pytest.raises(UnsafeOutputsError) as refused:
        backend.fetch(handle, tmp_path / "fetched")
    copy = tmp_path / "fetched" / handle.run_id
    assert refused.value.copy == copy
    assert refused.value.refused == ("links/escape (a symbolic link to /etc)",)
    assert "links/escape" in str(refused.value)
    assert (copy / "links" / "kept.txt").read_text() == "kept"
    assert (copy / "manifest.json").is_file()
    assert not (copy / "links" / "escape").exists()
    assert not (copy / "links" / "escape").is_symlink()


def test_peek_reads_a_file_of_the_outputs_and_refuses_paths_that_leave_them(
    project: Path, tmp_path: Path
) -> None:
    (project / "scripts" / "links.py").write_text(
        "import os, pathlib\n"
        "out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'])\n"
        "(out / 'kept.txt').write_text('kept')\n"
        "os.symlink('/etc', out / 'escape')\n"
        "os.symlink('/etc/hostname', out / 'host')\n"
    )
    backend = local_backend(tmp_path / "state")
    handle = backend.submit(script_job("peek", "links"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    assert backend.peek(handle, "links/kept.txt") == b"kept"
    assert backend.peek(handle, "links/missing.txt") is None
    assert backend.peek(handle, "manifest.json") is not None
    for path in ("../spec.json", "/etc/hostname", "links/../../spec.json", ""):
        with pytest.raises(OutsideOutputsError):
            backend.peek(handle, path)
    for path in ("links/escape/hostname", "links/host"):
        with pytest.raises(OutsideOutputsError, match="symbolic link"):
            backend.peek(handle, path)


def test_a_damaged_manifest_is_named(project: Path, tmp_path: Path) -> None:
    backend = local_backend(tmp_path / "state")
    handle = backend.submit(job("damaged", ("quick", ("python", "-c", "pass"))), project=project)
    wait_until_final(backend, handle)
    manifest = backend.run_files(handle).outputs / "manifest.json"
    manifest.write_text('{"schema_version": 2, "job": ')
    with pytest.raises(BadRecordError, match=str(manifest)):
        backend.status(handle)


# --- a run directory laid out by substrax ----------------------------------------------------


def substrax_run_dir(state: Path, run_id: str) -> Path:
    """A run directory as substrax's local backend leaves it (notes §2.1, §3)."""
    run_dir = state / "compute" / "local" / run_id
    (run_dir / "outputs" / "hello" / "figure").mkdir(parents=True)
    spec = job("hello", ("hello", ("python", "examples/hello.py")))
    (run_dir / "spec.json").write_text(dumps_compact(spec))
    (run_dir / "outputs" / "hello" / "stdout.log").write_text("hello from the example\n")
    (run_dir / "outputs" / "hello" / "stderr.log").write_text("")
    (run_dir / "outputs" / "hello" / "figure" / "plot.png").write_bytes(b"\x89PNG")
    (run_dir / "worker.log").write_bytes(
        b"[hello] hello from the example\n[hello] caf\xc3\xa9 \xff\n[hello] no newline"
    )
    return run_dir


def test_a_finished_substrax_run_is_read_followed_and_fetched(tmp_path: Path) -> None:
    run_id = new_run_id("hello")
    run_dir = substrax_run_dir(tmp_path / "state", run_id)
    write_manifest(run_dir / "outputs", finished_manifest("hello", "hello"))
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    handle = local_handle(run_id, run_dir, exited.pid, start_time=None)
    backend = LocalBackend({})
    assert backend.status(handle) is RunState.SUCCEEDED
    expected = ["[hello] hello from the example", "[hello] café \ufffd", "[hello] no newline"]
    assert list(backend.logs(handle, follow=False)) == expected
    assert list(backend.logs(handle, follow=True)) == expected
    copy = backend.fetch(handle, tmp_path / "fetched")
    assert copy == tmp_path / "fetched" / run_id
    assert (copy / "hello" / "figure" / "plot.png").read_bytes() == b"\x89PNG"
    assert (copy / "hello" / "stdout.log").read_text() == "hello from the example\n"
    assert load_manifest(copy / "manifest.json") == finished_manifest("hello", "hello")
    backend.cancel(handle)
    assert backend.status(handle) is RunState.SUCCEEDED
    assert not (run_dir / "cancelled").exists()


SUBSTRAX_WORKER = """
import signal, sys, time
with open(sys.argv[1], "ab") as log:
    log.write(b"[hello] started\\n")
time.sleep(600)
"""


def test_a_running_substrax_run_is_followed_and_cancelled(tmp_path: Path) -> None:
    run_id = new_run_id("hello")
    run_dir = substrax_run_dir(tmp_path / "state", run_id)
    (run_dir / "worker.log").write_bytes(b"")
    # substrax starts `python -m substrax.compute.worker ...` leading its own process group only.
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SUBSTRAX_WORKER,
            str(run_dir / "worker.log"),
            "-m",
            "substrax.compute.worker",
            "--spec",
            str(run_dir / "spec.json"),
            "--project",
            str(tmp_path),
            "--outputs",
            str(run_dir / "outputs"),
        ],
        process_group=0,
    )
    try:
        handle = local_handle(run_id, run_dir, worker.pid, start_time=None)
        backend = LocalBackend({}, cancel_grace_seconds=1.0)
        wait_for_line(backend, handle, "[hello] started")
        assert backend.status(handle) is RunState.RUNNING
        backend.cancel(handle)
        assert worker.wait() == -signal.SIGTERM
        assert (run_dir / "cancelled").exists()
        assert backend.status(handle) is RunState.CANCELLED
        assert list(backend.logs(handle, follow=True)) == ["[hello] started"]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_many_runs_are_read_in_one_call_and_a_broken_one_hides_none_of_the_others(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    done, damaged, going = (new_run_id(name) for name in ("done", "damaged", "going"))
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    done_dir = substrax_run_dir(state, done)
    write_manifest(done_dir / "outputs", finished_manifest("hello", "hello"))
    damaged_dir = substrax_run_dir(state, damaged)
    (damaged_dir / "outputs" / "manifest.json").write_text('{"schema_version": 2, "job": ')
    going_dir = substrax_run_dir(state, going)
    worker = subprocess.Popen(worker_like(going_dir), process_group=0)
    try:
        wait_for_worker_arguments(worker.pid)
        handles = [
            local_handle(done, done_dir, exited.pid, start_time=None),
            local_handle(damaged, damaged_dir, exited.pid, start_time=None),
            local_handle(going, going_dir, worker.pid, start_time=None),
            RunHandle(
                run_id=new_run_id("broken"),
                backend="local",
                job="broken",
                project=str(tmp_path),
                submitted_at=SUBMITTED_AT,
                details={"run_dir": str(tmp_path)},
            ),
        ]
        states = LocalBackend({}).statuses(handles)
    finally:
        worker.kill()
        worker.wait()
    assert list(states) == [handle.run_id for handle in handles]
    assert states[done] is RunState.SUCCEEDED
    assert states[going] is RunState.RUNNING
    assert isinstance(states[damaged], BadRecordError)
    assert str(damaged_dir / "outputs" / "manifest.json") in str(states[damaged])
    broken = states[handles[3].run_id]
    assert isinstance(broken, BadRecordError)
    assert handles[3].run_id in str(broken)


def test_a_handle_without_a_pid_is_named(tmp_path: Path) -> None:
    run_id = new_run_id("broken")
    handle = RunHandle(
        run_id=run_id,
        backend="local",
        job="broken",
        project=str(tmp_path),
        submitted_at=SUBMITTED_AT,
        details={"run_dir": str(tmp_path)},
    )
    with pytest.raises(BadRecordError, match=run_id):
        LocalBackend({}).status(handle)


def test_importing_the_contract_imports_no_textual() -> None:
    program = (
        "import sys, x_tui.testing.contract; "
        "print(any(m.startswith('textual') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# --- helpers ---------------------------------------------------------------------------------


def finished_manifest(job_name: str, task: str) -> JobManifest:
    return JobManifest(
        job=job_name,
        tasks=(
            TaskOutcome(
                name=task,
                argv=(sys.executable, f"scripts/{task}.py"),
                status=TaskStatus.SUCCEEDED,
                returncode=0,
                seconds=0.5,
                outputs=(),
            ),
        ),
        finished=True,
    )


def local_handle(run_id: str, run_dir: Path, pid: int, *, start_time: str | None) -> RunHandle:
    details = {"pid": str(pid), "run_dir": str(run_dir)}
    if start_time is not None:
        details["start_time"] = start_time
    return RunHandle(
        run_id=run_id,
        backend="local",
        job=run_id.rsplit("-", 2)[0],
        project=str(run_dir),
        submitted_at=SUBMITTED_AT,
        details=details,
    )


SUBMITTED_AT = dt.datetime(2026, 9, 19, 12, 0, 0, 123456, tzinfo=dt.UTC)


def is_running(pid: int) -> bool:
    info = local_process.process_info(pid)
    return info is not None and not info.zombie
