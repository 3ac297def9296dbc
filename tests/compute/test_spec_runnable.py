"""A spec x-tui accepts is one the worker can run; one it cannot run is recorded, never a crash.

The spec's own validation refuses what no process can be given (NUL bytes, environment names
with ``=``, text with no bytes) and budgets beyond a year. A seeded fuzz of hostile text checks
the promise both ways: whatever ``JobSpec`` accepts really starts as a process with that
environment and arguments. A spec written by another tool that breaks the rules is refused by
the real worker zipapp with the reason in ``devices.log``, the task's ``stderr.log`` and the
manifest, and exit 2 without a traceback.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from x_tui.compute.worker.children import Child, start_child
from x_tui.compute.worker.environment import child_environment
from x_tui.compute.worker.main import run_job
from x_tui.compute.worker.manifest import DEVICES_LOG, TaskStatus, load_manifest
from x_tui.compute.worker.records import RecordError, dump_record
from x_tui.compute.worker.spec import (
    MAX_TIMEOUT_SECONDS,
    JaxRuntime,
    JobSpec,
    Mount,
    MountAccess,
    Task,
    read_job_spec,
)
from x_tui.compute.worker_bundle import write_worker_zipapp

pytestmark = pytest.mark.timeout(120)

TRUE = "/bin/true"


def _job(
    *,
    argv: tuple[str, ...] = ("python", "-c", "pass"),
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    task_timeout: float = 60.0,
    runtime: JaxRuntime | None = None,
    extras: tuple[str, ...] = (),
) -> JobSpec:
    return JobSpec(
        name="job",
        tasks=(Task(name="t", argv=argv, timeout_seconds=task_timeout),),
        timeout_seconds=timeout,
        env=env or {},
        runtime=runtime or JaxRuntime(),
        extras=extras,
    )


REFUSED = [
    ("env name with =", {"env": {"A=B": "x"}}, "'A=B'"),
    ("empty env name", {"env": {"": "x"}}, "env name ''"),
    ("env name with NUL", {"env": {"A\0": "x"}}, "NUL"),
    ("env value with NUL", {"env": {"A": "x\0y"}}, "env 'A' value"),
    ("env value with a lone surrogate", {"env": {"A": "\ud800"}}, "surrogate"),
    ("argv with NUL", {"argv": ("python", "-c", "pass\0")}, "argv[2]"),
    ("program with NUL", {"argv": ("py\0thon",)}, "argv[0]"),
    ("job timeout 1e308", {"timeout": 1e308}, "1e+308"),
    ("task timeout 1e308", {"task_timeout": 1e308}, "task 't' timeout"),
    ("job timeout inf", {"timeout": float("inf")}, "inf"),
    ("job timeout nan", {"timeout": float("nan")}, "nan"),
    ("negative timeout", {"task_timeout": -1.0}, "-1"),
    ("zero timeout", {"timeout": 0.0}, "not 0"),
    ("timeout past a year", {"timeout": MAX_TIMEOUT_SECONDS + 1}, "366 days"),
    ("XLA flag with NUL", {"runtime": JaxRuntime(xla_flags=("--a=\0",))}, "XLA flag"),
    (
        "compilation cache with NUL",
        {"runtime": JaxRuntime(compilation_cache_dir="/c\0")},
        "JAX_COMPILATION_CACHE_DIR",
    ),
    ("extra with NUL", {"extras": ("cu\0da",)}, "extra"),
    ("argument past MAX_ARG_STRLEN", {"argv": ("python", "x" * 131072)}, "131071 bytes"),
    ("env value past MAX_ARG_STRLEN", {"env": {"A": "é" * 65536}}, "131072 bytes long"),
]


@pytest.mark.parametrize(("case", "fields", "says"), REFUSED, ids=[c[0] for c in REFUSED])
def test_what_no_process_can_be_given_is_refused_by_the_spec(
    case: str, fields: dict[str, object], says: str
) -> None:
    del case  # the test's id
    with pytest.raises(ValueError, match=re.escape(says)):
        _job(**fields)  # type: ignore[arg-type]


def test_a_mount_path_with_nul_and_an_overlong_name_are_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        Mount(name="data", path="/da\0ta", access=MountAccess.READ_ONLY)
    with pytest.raises(ValueError, match="201 characters long"):
        Task(name="t" * 201, argv=("true",), timeout_seconds=1)
    with pytest.raises(ValueError, match="201 characters long"):
        JobSpec(
            name="j" * 201,
            tasks=(Task(name="t", argv=("true",), timeout_seconds=1),),
            timeout_seconds=1,
        )


def test_the_reader_refuses_them_too() -> None:
    data = dump_record(_job())
    data["env"] = {"A=B": "x"}
    with pytest.raises(RecordError, match="'A=B'"):
        read_job_spec(data)


_HOSTILE = ["a", "Z", "_", "=", "\0", "\ud800", "\udcff", "é", " ", "\n", "-", "\x1b", "\u202e"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_HOSTILE) for _ in range(rng.randrange(0, 5)))


def test_fuzz_whatever_the_spec_accepts_starts_as_a_process(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    accepted = refused = 0
    for _ in range(400):
        env = {_text(rng): _text(rng) for _ in range(rng.randrange(0, 3))}
        argv = (TRUE, *(_text(rng) for _ in range(rng.randrange(0, 3))))
        timeout = rng.choice([1e-9, 0.5, 60.0, 3e6, MAX_TIMEOUT_SECONDS, 1e9, -1.0, 1e308])
        try:
            spec = _job(argv=argv, env=env, task_timeout=timeout)
        except ValueError:
            refused += 1
            continue
        accepted += 1
        process = start_child(
            spec.tasks[0].argv, cwd=tmp_path, env=child_environment(spec.runtime, spec.env)
        )
        result = Child(
            process, limit=spec.tasks[0].timeout_seconds, sinks=(len, len), cancel=None
        ).wait()
        assert result.returncode == 0 or result.timed_out, (argv, env)
    assert accepted > 50
    assert refused > 50


def test_a_budget_beyond_what_epoll_takes_in_one_wait_still_runs(tmp_path: Path) -> None:
    # 3e6 s is past epoll's INT_MAX milliseconds; the worker waits in turns instead of crashing.
    project = tmp_path / "project"
    project.mkdir()
    spec = _job(timeout=3e6, task_timeout=3e6)

    manifest = run_job(spec, project=project, outputs=tmp_path / "out", echo=False)

    assert manifest.finished
    assert [task.status for task in manifest.tasks] == [TaskStatus.SUCCEEDED]


@pytest.fixture(scope="module")
def zipapp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_worker_zipapp(tmp_path_factory.mktemp("zipapp"))


def _foreign_spec(**changes: object) -> dict[str, object]:
    """A spec as another tool might write it: valid JSON, a rule of this release broken."""
    data = dump_record(_job())
    task = dict(data["tasks"][0])  # type: ignore[index]
    for key, value in changes.items():
        if key.startswith("task_"):
            task[key.removeprefix("task_")] = value
        else:
            data[key] = value
    data["tasks"] = [task]
    return data


FOREIGN = [
    ("env name with =", {"env": {"A=B": "x"}}, "'A=B'"),
    ("argv with NUL", {"task_argv": ["python", "-c", "pass\0"]}, "argv[2]"),
    ("timeout 1e308", {"timeout_seconds": 1e308}, "1e+308"),
]


@pytest.mark.parametrize(("case", "changes", "says"), FOREIGN, ids=[c[0] for c in FOREIGN])
def test_the_worker_records_a_foreign_spec_it_cannot_run_and_exits_2_cleanly(
    zipapp: Path, tmp_path: Path, case: str, changes: dict[str, object], says: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_foreign_spec(**changes)))
    outputs = tmp_path / "out"

    result = subprocess.run(
        [
            *(sys.executable, "-I", "-S", str(zipapp)),
            *("--spec", str(spec), "--project", str(project), "--outputs", str(outputs)),
        ],
        env={name: value for name, value in os.environ.items() if name != "PYTHONPATH"},
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 2, case
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert says in result.stderr
    reason = result.stderr.strip()
    assert (outputs / DEVICES_LOG).read_text().strip() == reason
    manifest = load_manifest(outputs / "manifest.json")
    assert manifest is not None
    assert manifest.finished
    assert not manifest.succeeded
    assert [(t.name, t.status, t.returncode) for t in manifest.tasks] == [
        ("t", TaskStatus.FAILED, None)
    ]
    assert (outputs / "t" / "stderr.log").read_text().strip() == reason


def test_a_task_whose_directory_cannot_be_made_fails_and_the_worker_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    blocker = (
        "import os, pathlib;"
        " pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'], '..', 'b').write_text('')"
    )
    spec = JobSpec(
        name="job",
        tasks=(
            Task(name="a", argv=("python", "-c", blocker), timeout_seconds=60),
            Task(name="b", argv=("python", "-c", "pass"), timeout_seconds=60),
            Task(name="c", argv=("python", "-c", "pass"), timeout_seconds=60),
        ),
        timeout_seconds=120,
    )

    manifest = run_job(spec, project=project, outputs=tmp_path / "out")

    assert manifest.finished
    assert [(t.name, t.status, t.returncode) for t in manifest.tasks] == [
        ("a", TaskStatus.SUCCEEDED, 0),
        ("b", TaskStatus.FAILED, None),
        ("c", TaskStatus.SUCCEEDED, 0),
    ]
    assert "[b] x-tui worker: task 'b' cannot run: " in capsys.readouterr().err
