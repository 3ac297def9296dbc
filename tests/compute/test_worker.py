"""The worker, run for real: in-process through ``run_job`` and as the zipapp in a subprocess.

Every task is a real ``python -c`` process. JAX is not installed here, so the tests of what the
probe does with JAX use a stand-in ``jax`` package put on the probe's ``PYTHONPATH`` (the real
one is imported the same way, by name), and a stand-in ``nvidia-smi`` put on its ``PATH``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests import support
from x_tui.compute.worker.children import Cancellation, WorkerCancelled
from x_tui.compute.worker.environment import child_environment
from x_tui.compute.worker.log_times import LogTimes
from x_tui.compute.worker.main import main, run_job
from x_tui.compute.worker.manifest import (
    JobManifest,
    RunDevices,
    TaskStatus,
    load_manifest,
    read_manifest,
)
from x_tui.compute.worker.records import RecordError, dump_record, dumps_compact
from x_tui.compute.worker.spec import JaxRuntime, JobSpec, Task
from x_tui.compute.worker_bundle import write_worker_zipapp

pytestmark = pytest.mark.timeout(120)


def task(name: str, code: str, *, timeout: float = 60.0) -> Task:
    """A task running ``code`` with the project's ``python``."""
    return Task(name=name, argv=("python", "-c", textwrap.dedent(code)), timeout_seconds=timeout)


def job(
    *tasks: Task,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
    runtime: JaxRuntime | None = None,
) -> JobSpec:
    return JobSpec(
        name="job",
        tasks=tasks,
        timeout_seconds=timeout,
        env=dict(env or {}),
        runtime=runtime or JaxRuntime(),
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "marker.txt").write_text("the project root\n")
    return root


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    return tmp_path / "outputs"


def wait_for(path: Path, what: str) -> None:
    """Wait for a file a task writes; a generous bound only keeps a broken run from hanging."""
    support.wait_for(path.exists, f"{what} at {path}")


def running(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def read_pid(path: Path) -> int:
    """The pid a task writes to ``path``, once it is all there (the file is made empty first)."""

    def written() -> bool:
        with contextlib.suppress(FileNotFoundError):
            return path.read_text().strip().isdigit()
        return False

    support.wait_for(written, f"a pid in {path}")
    return int(path.read_text())


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test must not leave running, whatever it asserts."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# --- tasks, logs and the manifest ------------------------------------------------------------


def test_streams_are_logged_and_files_land_in_the_task_directory(
    project: Path, outputs: Path
) -> None:
    spec = job(
        task(
            "plot",
            """
            import os, pathlib, sys
            print("to stdout")
            print("to stderr", file=sys.stderr)
            figure = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / "figure"
            figure.mkdir()
            (figure / "plot.png").write_bytes(b"png")
            """,
        )
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    (outcome,) = manifest.tasks
    assert outcome.status is TaskStatus.SUCCEEDED
    assert outcome.returncode == 0
    assert outcome.outputs == ("figure/plot.png",)
    assert (outputs / "plot" / "stdout.log").read_bytes() == b"to stdout\n"
    assert (outputs / "plot" / "stderr.log").read_bytes() == b"to stderr\n"
    assert manifest.finished
    assert load_manifest(outputs / "manifest.json") == manifest


def test_outputs_are_every_file_sorted_component_wise_without_the_top_level_logs(
    project: Path, outputs: Path
) -> None:
    spec = job(
        task(
            "files",
            """
            import os, pathlib
            root = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
            for name in ["b.txt", "a/z.txt", "a-b/c.txt", "a/stdout.log"]:
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(name)
            """,
        )
    )

    (outcome,) = run_job(spec, project=project, outputs=outputs, echo=False).tasks

    assert outcome.outputs == ("a/stdout.log", "a/z.txt", "a-b/c.txt", "b.txt")


def test_the_first_task_sees_a_manifest_with_the_devices_and_no_tasks_and_the_next_sees_it(
    project: Path, outputs: Path
) -> None:
    spec = job(
        task(
            "first",
            """
            import os, pathlib, shutil
            here = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
            shutil.copy(here.parent / "manifest.json", here / "seen.json")
            """,
        ),
        task(
            "second",
            """
            import os, pathlib, shutil
            here = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
            shutil.copy(here.parent / "manifest.json", here / "seen.json")
            """,
        ),
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    early = json.loads((outputs / "first" / "seen.json").read_text())
    assert early["tasks"] == []
    first = read_manifest(early)  # a valid manifest as substrax reads it
    assert not first.finished
    assert first.devices == manifest.devices
    assert first.devices is not None
    seen = read_manifest(json.loads((outputs / "second" / "seen.json").read_text()))
    assert not seen.finished
    assert [outcome.name for outcome in seen.tasks] == ["first"]
    assert manifest.finished
    assert [outcome.name for outcome in manifest.tasks] == ["first", "second"]


def test_a_failed_task_does_not_stop_the_next(project: Path, outputs: Path) -> None:
    spec = job(task("fails", "raise SystemExit(3)"), task("runs", "print('still here')"))

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert [(t.status, t.returncode) for t in manifest.tasks] == [
        (TaskStatus.FAILED, 3),
        (TaskStatus.SUCCEEDED, 0),
    ]
    assert not manifest.succeeded
    assert (outputs / "runs" / "stdout.log").read_text() == "still here\n"


def test_a_command_that_cannot_start_fails_with_the_reason_in_its_stderr_log(
    project: Path, outputs: Path
) -> None:
    spec = job(Task(name="missing", argv=("no-such-command-x-tui",), timeout_seconds=5))

    (outcome,) = run_job(spec, project=project, outputs=outputs, echo=False).tasks

    assert outcome.status is TaskStatus.FAILED
    assert outcome.returncode is None
    assert outcome.argv == ("no-such-command-x-tui",)
    reason = (outputs / "missing" / "stderr.log").read_text()
    assert reason.startswith("no-such-command-x-tui could not start: ")
    assert "No such file or directory" in reason


def test_python_is_the_worker_interpreter_and_the_task_gets_its_environment_and_cwd(
    project: Path, outputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAX_ENABLE_X64", "true")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    monkeypatch.setenv("KEPT_FROM_THE_WORKER", "yes")
    spec = job(
        task(
            "env",
            """
            import json, os, sys
            names = ["JAX_PLATFORMS", "XLA_FLAGS", "JAX_ENABLE_X64", "AVITAI_OUTPUT_DIR",
                     "XLA_PYTHON_CLIENT_PREALLOCATE", "KEPT_FROM_THE_WORKER", "FROM_THE_JOB"]
            seen = {name: os.environ.get(name) for name in names}
            seen["executable"] = sys.executable
            seen["cwd"] = os.getcwd()
            print(json.dumps(seen))
            """,
        ),
        env={"XLA_FLAGS": "--xla_a=1", "FROM_THE_JOB": "job", "AVITAI_OUTPUT_DIR": "/ignored"},
        runtime=JaxRuntime(platforms=("cpu",), xla_flags=("--xla_b=2", "--xla_a=1")),
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    seen = json.loads((outputs / "env" / "stdout.log").read_text())
    assert seen == {
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_a=1 --xla_b=2",
        "JAX_ENABLE_X64": None,
        "AVITAI_OUTPUT_DIR": str((outputs / "env").resolve()),
        "XLA_PYTHON_CLIENT_PREALLOCATE": None,
        "KEPT_FROM_THE_WORKER": "yes",
        "FROM_THE_JOB": "job",
        "executable": sys.executable,
        "cwd": str(project.resolve()),
    }
    assert manifest.tasks[0].argv[0] == sys.executable


def test_an_xla_flag_conflict_fails_each_task_with_the_reason_and_the_worker_goes_on(
    project: Path, outputs: Path
) -> None:
    spec = job(
        task("one", "print('never')"),
        task("two", "print('never')"),
        env={"XLA_FLAGS": "--xla_a=1"},
        runtime=JaxRuntime(xla_flags=("--xla_a=2",)),
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert [(t.status, t.returncode) for t in manifest.tasks] == [
        (TaskStatus.FAILED, None),
        (TaskStatus.FAILED, None),
    ]
    reason = (outputs / "one" / "stderr.log").read_text()
    assert "XLA flag --xla_a is set to two different values" in reason
    assert "'--xla_a=1'" in reason
    assert manifest.finished
    assert manifest.devices is None
    assert "--xla_a" in (outputs / "devices.log").read_text()


def test_a_memory_fraction_beside_the_env_one_is_a_conflict() -> None:
    runtime = JaxRuntime(memory_fraction=0.5)

    with pytest.raises(ValueError, match=r"XLA_PYTHON_CLIENT_MEM_FRACTION='0\.9'"):
        child_environment(runtime, {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"}, base={})


def test_echo_prefixes_each_line_with_the_task_on_the_matching_stream(
    project: Path, outputs: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = job(
        task(
            "talk",
            """
            import sys
            print("out")
            print("err", file=sys.stderr)
            print("two\\nlines")
            """,
        )
    )

    run_job(spec, project=project, outputs=outputs)

    captured = capfd.readouterr()
    assert "[talk] out\n" in captured.out
    assert "[talk] two\n[talk] lines\n" in captured.out
    assert "[talk] err\n" in captured.err
    assert "err" not in captured.out


def test_a_progress_line_reaches_the_log_before_its_line_ends(
    project: Path, outputs: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # The task itself waits until its own stdout.log holds the unfinished line.
    spec = job(
        task(
            "bar",
            """
            import os, pathlib, sys, time
            log = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / "stdout.log"
            sys.stdout.write("10%\\r20%\\r")
            sys.stdout.flush()
            for _ in range(3000):
                if log.read_bytes() == b"10%\\r20%\\r":
                    break
                time.sleep(0.01)
            else:
                raise SystemExit("the log never showed the progress line")
            print("done")
            """,
        )
    )

    (outcome,) = run_job(spec, project=project, outputs=outputs).tasks

    assert outcome.status is TaskStatus.SUCCEEDED
    assert (outputs / "bar" / "stdout.log").read_bytes() == b"10%\r20%\rdone\n"
    assert "[bar] 10%\r[bar] 20%\r[bar] done\n" in capfd.readouterr().out


# --- budgets -----------------------------------------------------------------------------------


def test_a_timed_out_task_is_killed_and_keeps_its_partial_output(
    project: Path, outputs: Path
) -> None:
    spec = job(
        task("slow", "import time; print('started', flush=True); time.sleep(600)", timeout=1),
        task("after", "print('after')"),
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    slow, after = manifest.tasks
    assert slow.status is TaskStatus.TIMED_OUT
    assert slow.returncode == -9
    assert (outputs / "slow" / "stdout.log").read_text() == "started\n"
    assert after.status is TaskStatus.SUCCEEDED


def test_a_timeout_kills_the_whole_process_group(
    project: Path, outputs: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    spec = job(
        task(
            "spawns",
            f"""
            import subprocess, sys, time
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            open({str(pid_file)!r}, "w").write(str(child.pid))
            time.sleep(600)
            """,
            timeout=1,
        )
    )

    (outcome,) = run_job(spec, project=project, outputs=outputs, echo=False).tasks

    grandchild = read_pid(pid_file)
    leftovers.append(grandchild)
    assert outcome.status is TaskStatus.TIMED_OUT
    assert not running(grandchild)


def test_a_grandchild_that_escaped_the_group_and_holds_the_pipes_does_not_hang_the_worker(
    project: Path, outputs: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    pid_file = tmp_path / "escaped.pid"
    spec = job(
        task(
            "escapes",
            f"""
            import subprocess, sys, time
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
            )
            open({str(pid_file)!r}, "w").write(str(child.pid))
            print("spawned", flush=True)
            time.sleep(600)
            """,
            timeout=1,
        ),
        task("next", "print('next ran')"),
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    leftovers.append(read_pid(pid_file))
    assert [t.status for t in manifest.tasks] == [TaskStatus.TIMED_OUT, TaskStatus.SUCCEEDED]
    assert (outputs / "escapes" / "stdout.log").read_text() == "spawned\n"
    assert manifest.finished


def test_what_a_task_leaves_running_in_its_group_ends_with_it(
    project: Path, outputs: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    pid_file = tmp_path / "background.pid"
    spec = job(
        task(
            "leaves",
            f"""
            import subprocess, sys
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            open({str(pid_file)!r}, "w").write(str(child.pid))
            """,
        )
    )

    (outcome,) = run_job(spec, project=project, outputs=outputs, echo=False).tasks

    background = read_pid(pid_file)
    leftovers.append(background)
    assert outcome.status is TaskStatus.SUCCEEDED
    # SIGKILL went to the group when the task exited; dying takes the kernel a moment.
    support.wait_for(lambda: not running(background), "the group's end", deadline=10, every=0.01)


def test_the_job_budget_caps_tasks_and_a_task_with_no_time_left_never_starts(
    project: Path, outputs: Path
) -> None:
    spec = job(
        task("long", "import time; time.sleep(600)", timeout=600),
        task("starved", "print('never')", timeout=600),
        timeout=3,
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    long, starved = manifest.tasks
    assert long.status is TaskStatus.TIMED_OUT
    assert long.returncode == -9
    assert starved.status is TaskStatus.TIMED_OUT
    assert starved.returncode is None
    assert starved.seconds == 0.0
    assert starved.outputs == ()
    assert starved.argv == (sys.executable, "-c", "print('never')")
    assert (outputs / "starved" / "stdout.log").read_bytes() == b""
    assert (outputs / "starved" / "stderr.log").read_bytes() == b""
    assert manifest.finished


# --- the device probe --------------------------------------------------------------------------


def stand_in_jax(root: Path) -> Path:
    """A ``jax`` package that behaves as JAX does for the probe, chosen by ``STAND_IN_JAX``."""
    package = root / "site" / "jax"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import os, time
            mode = os.environ.get("STAND_IN_JAX", "gpu")
            if os.environ.get("JAX_PLATFORMS") == "tpu":
                raise RuntimeError("Unable to initialize backend 'tpu': no TPU found")
            if mode == "slow":
                time.sleep(600)

            class Device:
                device_kind = "NVIDIA H100 80GB HBM3"

            def default_backend():
                return "gpu"

            def devices():
                return [Device(), Device()]
            """
        )
    )
    return package.parent


def fake_tool(directory: Path, name: str, script: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return directory


def probe_path(*directories: Path) -> str:
    """A PATH with these directories and nothing that could hold a real ``nvidia-smi``."""
    return os.pathsep.join([*map(str, directories), str(Path(sys.executable).parent)])


def test_without_jax_or_gpus_the_probe_reports_cpu(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    spec = job(task("t", "pass"), env={"PATH": probe_path(tmp_path / "empty")})

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert manifest.devices == RunDevices(platform="cpu", kinds=("cpu",))
    assert not (outputs / "devices.log").exists()


def test_without_jax_the_probe_reports_the_gpus_nvidia_smi_lists(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    tools = fake_tool(
        tmp_path / "bin",
        "nvidia-smi",
        '[ "$*" = "--query-gpu=name --format=csv,noheader" ] || exit 9\n'
        'printf "NVIDIA H200\\nNVIDIA H200\\n"',
    )
    spec = job(task("t", "pass"), env={"PATH": probe_path(tools)})

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert manifest.devices == RunDevices(platform="gpu", kinds=("NVIDIA H200", "NVIDIA H200"))


def test_a_failing_nvidia_smi_is_a_probe_failure_kept_in_devices_log(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    tools = fake_tool(
        tmp_path / "bin",
        "nvidia-smi",
        'echo "NVIDIA-SMI has failed because it could not communicate with the driver"; exit 9',
    )
    spec = job(task("t", "pass"), env={"PATH": probe_path(tools)})

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert manifest.devices is None
    assert "could not communicate with the driver" in (outputs / "devices.log").read_text()
    assert manifest.tasks[0].status is TaskStatus.SUCCEEDED


def test_with_jax_the_probe_reports_its_backend_and_device_kinds(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    site = stand_in_jax(tmp_path)
    spec = job(task("t", "pass"), env={"PYTHONPATH": str(site)})

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    kind = "NVIDIA H100 80GB HBM3"
    assert manifest.devices == RunDevices(platform="gpu", kinds=(kind, kind))


def test_a_jax_that_cannot_start_its_platform_fails_the_probe_and_the_task_still_runs(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    site = stand_in_jax(tmp_path)
    spec = job(
        task("t", "print('ran')"),
        env={"PYTHONPATH": str(site)},
        runtime=JaxRuntime(platforms=("tpu",)),
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert manifest.devices is None
    assert "Unable to initialize backend 'tpu'" in (outputs / "devices.log").read_text()
    assert manifest.tasks[0].status is TaskStatus.SUCCEEDED
    assert (outputs / "t" / "stdout.log").read_text() == "ran\n"


def test_the_probe_time_counts_against_the_job_budget(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    site = stand_in_jax(tmp_path)
    spec = job(
        task("t", "print('never')"),
        env={"PYTHONPATH": str(site), "STAND_IN_JAX": "slow"},
        timeout=0.01,
    )

    manifest = run_job(spec, project=project, outputs=outputs, echo=False)

    assert (outputs / "devices.log").read_text() == "the device probe ran past 0.01 s\n"
    assert manifest.devices is None
    (outcome,) = manifest.tasks
    assert (outcome.status, outcome.returncode, outcome.seconds) == (
        TaskStatus.TIMED_OUT,
        None,
        0.0,
    )
    assert manifest.finished


def test_a_manifest_of_another_version_is_refused_naming_both() -> None:
    data = dump_record(JobManifest(job="job"))
    data["schema_version"] = 1

    with pytest.raises(RecordError, match=r"manifest version 1 .*\(2\)"):
        read_manifest(data)


# --- retries -----------------------------------------------------------------------------------

FLAKY = """
import pathlib, sys
counter = pathlib.Path({counter!r})
attempt = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(attempt))
print("attempt", attempt)
print("error", attempt, file=sys.stderr)
raise SystemExit(0 if attempt >= {succeeds_at} else 4)
"""


def test_a_task_that_fails_twice_then_succeeds_keeps_every_attempt(
    project: Path, outputs: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = FLAKY.format(counter=str(tmp_path / "count"), succeeds_at=3)
    spec = job(task("flaky", code), task("steady", "print('ok')"))

    manifest = run_job(spec, project=project, outputs=outputs, retries={"flaky": 5})

    flaky = manifest.tasks[0]
    assert (flaky.status, flaky.returncode) == (TaskStatus.SUCCEEDED, 0)
    attempts = json.loads((outputs / "attempts.json").read_text())
    assert [(a["task"], a["attempt"], a["status"], a["returncode"]) for a in attempts] == [
        ("flaky", 1, "failed", 4),
        ("flaky", 2, "failed", 4),
        ("flaky", 3, "succeeded", 0),
        ("steady", 1, "succeeded", 0),
    ]
    for number in (1, 2):
        kept = outputs / "attempts" / "flaky" / str(number)
        assert (kept / "stdout.log").read_text() == f"attempt {number}\n"
        assert (kept / "stderr.log").read_text() == f"error {number}\n"
    assert (outputs / "flaky" / "stdout.log").read_text() == "attempt 3\n"
    assert flaky.outputs == ()
    out = capfd.readouterr().out
    assert "[flaky] x-tui: attempt 2 of 6\n" in out
    assert "[flaky] x-tui: attempt 3 of 6\n" in out
    assert "attempt 4 of 6" not in out


def test_a_task_out_of_retries_ends_with_its_last_attempt(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    code = FLAKY.format(counter=str(tmp_path / "count"), succeeds_at=99)
    spec = job(task("flaky", code))

    manifest = run_job(spec, project=project, outputs=outputs, echo=False, retries={"flaky": 1})

    assert (manifest.tasks[0].status, manifest.tasks[0].returncode) == (TaskStatus.FAILED, 4)
    assert (outputs / "flaky" / "stdout.log").read_text() == "attempt 2\n"
    assert len(json.loads((outputs / "attempts.json").read_text())) == 2
    assert manifest.finished


def test_a_timed_out_task_is_retried_within_the_job_budget(project: Path, outputs: Path) -> None:
    spec = job(task("hangs", "import time; time.sleep(600)", timeout=1))

    manifest = run_job(spec, project=project, outputs=outputs, echo=False, retries={"hangs": 1})

    attempts = json.loads((outputs / "attempts.json").read_text())
    assert [(a["status"], a["returncode"]) for a in attempts] == [
        ("timed-out", -9),
        ("timed-out", -9),
    ]
    assert manifest.tasks[0].status is TaskStatus.TIMED_OUT


def test_without_retries_no_attempts_file_is_written(project: Path, outputs: Path) -> None:
    run_job(job(task("fails", "raise SystemExit(1)")), project=project, outputs=outputs, echo=False)

    assert not (outputs / "attempts.json").exists()
    assert not (outputs / "attempts").exists()


def test_retries_for_a_task_the_job_lacks_are_refused(project: Path, outputs: Path) -> None:
    with pytest.raises(ValueError, match="'nope', which job 'job' does not have"):
        run_job(job(task("t", "pass")), project=project, outputs=outputs, retries={"nope": 1})


# --- cancel ------------------------------------------------------------------------------------


def stop_once_written(path: Path, cancel: Cancellation) -> threading.Thread:
    """Request a stop, as a signal handler would, once the running task has written ``path``."""

    def stop() -> None:
        wait_for(path, "the running task's mark")
        cancel.request(signal.SIGTERM)

    stopper = threading.Thread(target=stop)
    stopper.start()
    return stopper


def test_a_stop_request_ends_the_running_task_and_leaves_the_manifest_unfinished(
    project: Path, outputs: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    spec = job(
        task("done", "print('done')"),
        task(
            "stopped",
            f"""
            import pathlib, time
            pathlib.Path({str(ready)!r}).touch()
            time.sleep(600)
            """,
        ),
        task("never", "print('never')"),
    )
    cancel = Cancellation()
    stopper = stop_once_written(ready, cancel)
    try:
        with pytest.raises(WorkerCancelled) as stopped:
            run_job(spec, project=project, outputs=outputs, echo=False, cancel=cancel)
    finally:
        stopper.join()
        cancel.close()

    assert stopped.value.signum == signal.SIGTERM
    manifest = load_manifest(outputs / "manifest.json")
    assert manifest is not None
    assert not manifest.finished
    assert [t.name for t in manifest.tasks] == ["done"]
    assert not (outputs / "never").exists()


def test_a_task_that_ignores_sigterm_is_killed_after_the_grace(
    project: Path, outputs: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    pid_file = tmp_path / "stubborn.pid"
    spec = job(
        task(
            "stubborn",
            f"""
            import os, signal, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            open({str(pid_file)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
            """,
        )
    )
    cancel = Cancellation()
    stopper = stop_once_written(pid_file, cancel)
    try:
        with pytest.raises(WorkerCancelled):
            run_job(spec, project=project, outputs=outputs, echo=False, cancel=cancel)
    finally:
        stopper.join()
        cancel.close()

    stubborn = read_pid(pid_file)
    leftovers.append(stubborn)
    assert not running(stubborn)
    manifest = load_manifest(outputs / "manifest.json")
    assert manifest is not None
    assert not manifest.finished
    assert manifest.tasks == ()


# --- the command line and the zipapp -----------------------------------------------------------


def write_spec(directory: Path, spec: JobSpec) -> Path:
    path = directory / "spec.json"
    path.write_text(dumps_compact(spec))
    return path


def test_main_returns_0_when_every_task_succeeded_and_1_otherwise(
    project: Path, tmp_path: Path
) -> None:
    good = write_spec(tmp_path, job(task("ok", "pass")))
    assert (
        main(["--spec", str(good), "--project", str(project), "--outputs", str(tmp_path / "a")])
        == 0
    )

    bad = write_spec(tmp_path, job(task("ok", "pass"), task("no", "raise SystemExit(2)")))
    assert (
        main(["--spec", str(bad), "--project", str(project), "--outputs", str(tmp_path / "b")]) == 1
    )


@pytest.fixture(scope="module")
def zipapp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_worker_zipapp(tmp_path_factory.mktemp("zipapp"))


def isolated_python(*args: str, python: str = sys.executable) -> list[str]:
    """``python`` without site-packages, user site or ``PYTHONPATH``: no x-tui on it."""
    return [python, "-I", "-S", *args]


OLDEST_PYTHON = support.oldest_python()

WORKER_PYTHONS = [
    pytest.param(sys.executable, id="this-python"),
    pytest.param(
        OLDEST_PYTHON,
        id="python3.10",
        marks=pytest.mark.skipif(
            OLDEST_PYTHON is None, reason="no Python 3.10 here (pyenv's or python3.10 on PATH)"
        ),
    ),
]


def isolated_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


@pytest.mark.parametrize("python", WORKER_PYTHONS)
def test_the_zipapp_runs_where_x_tui_is_not_importable(
    zipapp: Path, project: Path, tmp_path: Path, python: str
) -> None:
    probe = subprocess.run(
        isolated_python("-c", "import sys, x_tui", python=python),
        capture_output=True,
        env=isolated_env(),
        check=False,
    )
    assert probe.returncode != 0, "x_tui must not be importable for this test to mean anything"
    if python != sys.executable:
        version = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert version.stdout.split() == ["3", "10"]
    spec = write_spec(
        tmp_path,
        job(task("hello", "print('hello from the task')"), task("fails", "raise SystemExit(5)")),
    )

    result = subprocess.run(
        isolated_python(
            str(zipapp),
            "--spec",
            str(spec),
            "--project",
            str(project),
            "--outputs",
            str(tmp_path / "out"),
            python=python,
        ),
        cwd=tmp_path,
        env=isolated_env(),
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 1, result.stderr
    assert "[hello] hello from the task\n" in result.stdout
    manifest = load_manifest(tmp_path / "out" / "manifest.json")
    assert manifest is not None
    assert manifest.finished
    assert [t.status for t in manifest.tasks] == [TaskStatus.SUCCEEDED, TaskStatus.FAILED]


def test_an_unfinished_line_reaches_worker_log_marked_while_the_task_still_runs(
    zipapp: Path, project: Path, tmp_path: Path
) -> None:
    # The task waits until the worker's own log (its stdout, a file) holds its unfinished line.
    spec = write_spec(
        tmp_path,
        job(
            task(
                "wait",
                """
                import pathlib, sys, time
                sys.stdout.write("loading...")
                sys.stdout.flush()
                log = pathlib.Path("worker.log")
                for _ in range(3000):
                    if b"[wait] loading... \\xe2\\x86\\xb5\\n" in log.read_bytes():
                        break
                    time.sleep(0.01)
                else:
                    raise SystemExit("the unfinished line never reached worker.log")
                print("done")
                """,
            )
        ),
    )
    log = project / "worker.log"
    with log.open("wb") as out:
        result = subprocess.run(
            isolated_python(
                str(zipapp),
                "--log-times",
                str(project / "worker.log.times"),
                "--spec",
                str(spec),
                "--project",
                str(project),
                "--outputs",
                str(tmp_path / "out"),
            ),
            cwd=tmp_path,
            env=isolated_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )

    data = log.read_bytes()
    assert result.returncode == 0, data
    assert data.endswith("[wait] loading... ↵\n[wait] done\n".encode())
    assert (tmp_path / "out" / "wait" / "stdout.log").read_bytes() == b"loading...done\n"
    with LogTimes(project / "worker.log.times") as times:
        early = times.time_at(data.index(b"[wait] loading"))
        late = times.time_at(data.index(b"[wait] done"))
    assert early is not None
    assert late is not None
    assert late >= early


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not JSON"),
        ('{"schema_version": 1, "name": "job"}', "job spec version 1 is not the version"),
        ('{"schema_version": 2, "name": "job", "tasks": [], "timeout_seconds": 1}', "task"),
    ],
)
def test_a_bad_spec_exits_2_with_one_line_and_no_manifest(
    zipapp: Path, project: Path, tmp_path: Path, content: str, expected: str
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(content)

    result = subprocess.run(
        isolated_python(
            str(zipapp),
            "--spec",
            str(spec),
            "--project",
            str(project),
            "--outputs",
            str(tmp_path / "out"),
        ),
        env=isolated_env(),
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert str(spec) in result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_a_retries_file_naming_an_unknown_task_exits_2_with_one_line(
    zipapp: Path, project: Path, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path, job(task("t", "pass")))
    retries = tmp_path / "retries.json"
    retries.write_text('{"other": 1}')

    result = subprocess.run(
        isolated_python(
            str(zipapp),
            "--spec",
            str(spec),
            "--project",
            str(project),
            "--outputs",
            str(tmp_path / "out"),
            "--retries",
            str(retries),
        ),
        env=isolated_env(),
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "'other'" in result.stderr


def test_sigterm_to_the_worker_ends_the_running_tasks_group_and_leaves_the_manifest_unfinished(
    zipapp: Path, project: Path, tmp_path: Path, leftovers: list[int]
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    spec = write_spec(
        tmp_path,
        job(
            task("first", "print('first done')"),
            task(
                "second",
                f"""
                import os, pathlib, signal, subprocess, sys, time
                marks = pathlib.Path({str(marks)!r})
                def stop(signum, frame):
                    (marks / "task.term").write_text("SIGTERM")
                    raise SystemExit(0)
                signal.signal(signal.SIGTERM, stop)
                child = subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(600)"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                (marks / "grandchild.pid").write_text(str(child.pid))
                (marks / "task.pid").write_text(str(os.getpid()))
                time.sleep(600)
                """,
            ),
            task("third", "print('never')"),
        ),
    )
    worker = subprocess.Popen(
        isolated_python(
            str(zipapp),
            "--spec",
            str(spec),
            "--project",
            str(project),
            "--outputs",
            str(tmp_path / "out"),
        ),
        env=isolated_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    leftovers.append(worker.pid)
    task_pid = read_pid(marks / "task.pid")
    grandchild = read_pid(marks / "grandchild.pid")
    leftovers.extend([task_pid, grandchild])

    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=60)

    assert worker.returncode == 143, err
    assert (marks / "task.term").read_text() == "SIGTERM"
    assert not running(task_pid)
    assert not running(grandchild)
    manifest = load_manifest(tmp_path / "out" / "manifest.json")
    assert manifest is not None
    assert not manifest.finished
    assert [t.name for t in manifest.tasks] == ["first"]
    assert b"[first] first done\n" in out
    assert b"SIGTERM" in err
