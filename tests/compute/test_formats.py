"""Records written by x-tui are substrax's byte for byte, and specs are refused as substrax does.

The expected texts are the examples of the reference notes (§1.2 to §1.4); the handle is the
version-2 layout of the seed, which adds ``settings`` before ``details``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from pathlib import Path

import pytest

from x_tui.compute.backend import NewRun, stage_run
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.manifest import (
    JobManifest,
    RunDevices,
    TaskOutcome,
    TaskStatus,
    parse_manifest,
    write_manifest,
)
from x_tui.compute.worker.records import RecordError, dumps_compact, dumps_pretty
from x_tui.compute.worker.spec import (
    Accelerator,
    JaxRuntime,
    JobSpec,
    Mount,
    MountAccess,
    Resources,
    Task,
    example_tasks,
    read_job_spec,
)

EXAMPLE_SPEC = (
    '{"schema_version": 2, "name": "examples", "tasks": [{"name": "examples.01_first", "argv": '
    '["python", "examples/01_first.py"], "timeout_seconds": 300.0}, {"name": "gpu-tests", "argv": '
    '["python", "-m", "pytest", "tests/gpu"], "timeout_seconds": 300.0}], "timeout_seconds": '
    '1800.0, "resources": {"accelerator": {"kind": "L4", "count": 1}, "cpu": 8.0, "memory_mib": '
    '32768}, "extras": ["cuda12"], "runtime": {"platforms": ["cuda"], "cpu_devices": null, '
    '"enable_x64": null, "matmul_precision": null, "compilation_cache_dir": null, "xla_flags": '
    '["--xla_gpu_deterministic_ops=true"], "preallocate": null, "memory_fraction": null}, "env": '
    '{"TF_CPP_MIN_LOG_LEVEL": "1"}, "mounts": [{"name": "datasets", "path": "/data", "access": '
    '"read-only"}]}'
)

CONTRACT_SPEC = (
    '{"schema_version": 2, "name": "contract", "tasks": [{"name": "writes", "argv": ["python", '
    '"scripts/writes.py"], "timeout_seconds": 120.0}], "timeout_seconds": 180.0, "resources": '
    '{"accelerator": null, "cpu": null, "memory_mib": null}, "extras": [], "runtime": '
    '{"platforms": null, "cpu_devices": null, "enable_x64": null, "matmul_precision": null, '
    '"compilation_cache_dir": null, "xla_flags": [], "preallocate": null, "memory_fraction": '
    'null}, "env": {}, "mounts": []}'
)

EXAMPLE_HANDLE = """\
{
  "schema_version": 2,
  "run_id": "contract-20260919T120000Z-3f9a1c",
  "backend": "local",
  "job": "contract",
  "project": "/home/me/project",
  "submitted_at": "2026-09-19T12:00:00.123456Z",
  "settings": {
    "python": null,
    "state_dir": null
  },
  "details": {
    "pid": "48213",
    "run_dir": "/home/me/.local/state/substrax/compute/local/contract-20260919T120000Z-3f9a1c"
  }
}
"""

EXAMPLE_MANIFEST = """\
{
  "schema_version": 2,
  "job": "contract",
  "tasks": [
    {
      "name": "fails",
      "argv": [
        "/home/me/project/.venv/bin/python",
        "scripts/fails.py"
      ],
      "status": "failed",
      "returncode": 7,
      "seconds": 0.041,
      "outputs": []
    },
    {
      "name": "writes",
      "argv": [
        "/home/me/project/.venv/bin/python",
        "scripts/writes.py"
      ],
      "status": "succeeded",
      "returncode": 0,
      "seconds": 0.038,
      "outputs": [
        "result/value.txt"
      ]
    }
  ],
  "finished": true,
  "devices": {
    "platform": "cpu",
    "kinds": [
      "cpu"
    ]
  }
}
"""


def example_spec() -> JobSpec:
    return JobSpec(
        name="examples",
        tasks=(
            Task(
                name="examples.01_first",
                argv=("python", "examples/01_first.py"),
                timeout_seconds=300,
            ),
            Task(
                name="gpu-tests",
                argv=("python", "-m", "pytest", "tests/gpu"),
                timeout_seconds=300,
            ),
        ),
        timeout_seconds=1800,
        resources=Resources(accelerator=Accelerator(kind="L4"), cpu=8, memory_mib=32768),
        extras=("cuda12",),
        runtime=JaxRuntime(platforms=("cuda",), xla_flags=("--xla_gpu_deterministic_ops=true",)),
        env={"TF_CPP_MIN_LOG_LEVEL": "1"},
        mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),),
    )


def contract_spec() -> JobSpec:
    return JobSpec(
        name="contract",
        tasks=(Task(name="writes", argv=("python", "scripts/writes.py"), timeout_seconds=120),),
        timeout_seconds=180,
    )


def example_manifest() -> JobManifest:
    python = "/home/me/project/.venv/bin/python"
    return JobManifest(
        job="contract",
        tasks=(
            TaskOutcome(
                name="fails",
                argv=(python, "scripts/fails.py"),
                status=TaskStatus.FAILED,
                returncode=7,
                seconds=0.041,
                outputs=(),
            ),
            TaskOutcome(
                name="writes",
                argv=(python, "scripts/writes.py"),
                status=TaskStatus.SUCCEEDED,
                returncode=0,
                seconds=0.038,
                outputs=("result/value.txt",),
            ),
        ),
        finished=True,
        devices=RunDevices(platform="cpu", kinds=("cpu",)),
    )


def example_handle(submitted_at: dt.datetime) -> RunHandle:
    run_id = "contract-20260919T120000Z-3f9a1c"
    return RunHandle(
        run_id=run_id,
        backend="local",
        job="contract",
        project="/home/me/project",
        submitted_at=submitted_at,
        settings={"python": None, "state_dir": None},
        details={
            "pid": "48213",
            "run_dir": f"/home/me/.local/state/substrax/compute/local/{run_id}",
        },
    )


# --- byte for byte -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "text"), [(example_spec(), EXAMPLE_SPEC), (contract_spec(), CONTRACT_SPEC)]
)
def test_a_staged_spec_is_substraxs_one_line_without_a_newline(
    tmp_path: Path, spec: JobSpec, text: str
) -> None:
    run = NewRun(run_id="examples-20260919T120000Z-3f9a1c", spec=spec, project=tmp_path)
    run_dir = stage_run(tmp_path / "runs", run)
    assert (run_dir / "spec.json").read_bytes() == text.encode("ascii")
    assert dumps_compact(spec) == text
    assert read_job_spec(json.loads(text)) == spec


def test_a_spec_escapes_text_that_is_not_ascii_as_substrax_does() -> None:
    spec = dataclasses.replace(contract_spec(), env={"GREETING": "héllo ✓"})
    assert '"env": {"GREETING": "h\\u00e9llo \\u2713"}' in dumps_compact(spec)
    assert read_job_spec(json.loads(dumps_compact(spec))) == spec


def test_a_saved_handle_is_substraxs_layout_with_settings(tmp_path: Path) -> None:
    handle = example_handle(dt.datetime(2026, 9, 19, 12, 0, 0, 123456, tzinfo=dt.UTC))
    path = RunStore(tmp_path).save(handle)
    assert path.read_bytes() == EXAMPLE_HANDLE.encode("ascii")
    assert RunStore(tmp_path).load(handle.run_id) == handle


def test_a_handle_time_without_microseconds_drops_the_fraction() -> None:
    handle = example_handle(dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC))
    assert '"submitted_at": "2026-09-19T12:00:00Z",' in dumps_pretty(handle)


@pytest.mark.parametrize(
    "written",
    [
        "2026-09-19T12:00:00.123456Z",
        "2026-09-19T12:00:00.123456+00:00",
        "2026-09-19T14:00:00.123456+02:00",
    ],
)
def test_a_handle_time_is_read_with_a_z_or_an_offset(tmp_path: Path, written: str) -> None:
    text = EXAMPLE_HANDLE.replace("2026-09-19T12:00:00.123456Z", written)
    (tmp_path / "contract-20260919T120000Z-3f9a1c.json").write_text(text)
    loaded = RunStore(tmp_path).load("contract-20260919T120000Z-3f9a1c")
    assert loaded.submitted_at == dt.datetime(2026, 9, 19, 12, 0, 0, 123456, tzinfo=dt.UTC)


def test_a_written_manifest_is_substraxs_indented_text_with_a_newline(tmp_path: Path) -> None:
    write_manifest(tmp_path, example_manifest())
    assert (tmp_path / "manifest.json").read_bytes() == EXAMPLE_MANIFEST.encode("ascii")
    assert parse_manifest(EXAMPLE_MANIFEST, source="example") == example_manifest()
    assert [path.name for path in tmp_path.iterdir()] == ["manifest.json"]


def test_a_manifest_of_version_1_is_refused_naming_both_versions() -> None:
    data = json.loads(EXAMPLE_MANIFEST)
    data["schema_version"] = 1
    del data["devices"]
    with pytest.raises(RecordError, match=r"manifest version 1 is not the version .* \(2\)"):
        parse_manifest(json.dumps(data), source="old")


# --- the spec grammar (notes §9.4, test_spec.py) ---------------------------------------------


def spec_json(**changes: object) -> dict[str, object]:
    data: dict[str, object] = json.loads(CONTRACT_SPEC)
    data.update(changes)
    return data


def task(name: str = "t", argv: tuple[str, ...] = ("python", "t.py"), seconds: float = 1.0) -> Task:
    return Task(name=name, argv=argv, timeout_seconds=seconds)


def test_a_full_spec_round_trips_and_defaults_are_written() -> None:
    spec = example_spec()
    assert read_job_spec(json.loads(dumps_compact(spec))) == spec
    minimal = read_job_spec(
        {
            "schema_version": 2,
            "name": "m",
            "tasks": [{"name": "t", "argv": ["x"], "timeout_seconds": 1}],
            "timeout_seconds": 2,
        }
    )
    assert minimal.resources == Resources()
    assert minimal.extras == ()
    assert minimal.runtime == JaxRuntime()
    assert minimal.env == {}
    assert minimal.mounts == ()


@pytest.mark.parametrize("name", ["", "has space", "slash/name", "-leading", ".."])
def test_names_that_are_not_one_path_component_are_refused(name: str) -> None:
    message = "is not one path component of letters, digits, '.', '_', '-'"
    with pytest.raises(ValueError, match=f"job name {name!r} {message}"):
        JobSpec(name=name, tasks=(task(),), timeout_seconds=1)
    with pytest.raises(ValueError, match=f"task name {name!r} {message}"):
        task(name)
    with pytest.raises(ValueError, match=f"mount name {name!r} {message}"):
        Mount(name=name, path="/data", access=MountAccess.READ_ONLY)
    with pytest.raises(RecordError, match=message):
        read_job_spec(spec_json(name=name))


def test_a_job_needs_a_task() -> None:
    with pytest.raises(ValueError, match="job 'empty' needs at least one task"):
        JobSpec(name="empty", tasks=(), timeout_seconds=1)
    with pytest.raises(RecordError, match="needs at least one task"):
        read_job_spec(spec_json(tasks=[]))


def test_two_tasks_may_not_share_a_name() -> None:
    with pytest.raises(ValueError, match="two entries share the task name 't'"):
        JobSpec(name="j", tasks=(task(), task()), timeout_seconds=1)


@pytest.mark.parametrize("seconds", [0, -1, math.inf, math.nan])
def test_a_timeout_must_be_a_positive_finite_number(seconds: float) -> None:
    message = "timeout must be a positive finite number of seconds"
    with pytest.raises(ValueError, match=f"job 'j' {message}"):
        JobSpec(name="j", tasks=(task(),), timeout_seconds=seconds)
    with pytest.raises(ValueError, match=f"task 't' {message}"):
        task(seconds=seconds)
    with pytest.raises(RecordError):
        read_job_spec(spec_json(timeout_seconds=seconds))


def test_a_timeout_written_as_text_is_refused() -> None:
    with pytest.raises(RecordError, match="timeout_seconds"):
        read_job_spec(spec_json(timeout_seconds="600"))


def test_two_mounts_may_not_share_a_name_or_a_path() -> None:
    a = Mount(name="a", path="/data", access=MountAccess.READ_ONLY)
    with pytest.raises(ValueError, match="two entries share the mount name 'a'"):
        JobSpec(
            name="j",
            tasks=(task(),),
            timeout_seconds=1,
            mounts=(a, Mount(name="a", path="/other", access=MountAccess.READ_ONLY)),
        )
    with pytest.raises(ValueError, match="two entries share the mount path '/data'"):
        JobSpec(
            name="j",
            tasks=(task(),),
            timeout_seconds=1,
            mounts=(a, Mount(name="b", path="/data", access=MountAccess.READ_WRITE)),
        )


@pytest.mark.parametrize("version", [1, 3])
def test_another_spec_version_is_refused_naming_both(version: int) -> None:
    with pytest.raises(RecordError) as refused:
        read_job_spec(spec_json(schema_version=version))
    assert f"job spec version {version} is not the version this x-tui reads (2)" in str(
        refused.value
    )
    with pytest.raises(ValueError, match=f"job spec version {version} "):
        JobSpec(schema_version=version, name="j", tasks=(task(),), timeout_seconds=1)


def test_a_missing_spec_version_is_refused() -> None:
    data = spec_json()
    del data["schema_version"]
    with pytest.raises(RecordError, match="job spec version None is not the version"):
        read_job_spec(data)


def test_resources_round_trip_and_bad_requests_are_refused() -> None:
    resources = Resources(accelerator=Accelerator(kind="A100-80GB", count=4), cpu=0.5, memory_mib=1)
    spec = dataclasses.replace(contract_spec(), resources=resources)
    assert read_job_spec(json.loads(dumps_compact(spec))).resources == resources
    for field, value in (("cpu", 0), ("cpu", -1), ("memory_mib", 0)):
        with pytest.raises(ValueError, match=f"the {field} request must be a positive finite"):
            Resources(**{field: value})  # type: ignore[arg-type]


def test_reading_json_applies_the_same_checks_as_construction() -> None:
    bad_resources = {"accelerator": None, "cpu": -1, "memory_mib": None}
    with pytest.raises(RecordError, match="the cpu request must be a positive finite number"):
        read_job_spec(spec_json(resources=bad_resources))
    with pytest.raises(RecordError, match="memory_mib"):
        read_job_spec(spec_json(resources={"memory_mib": 1.0}))
    with pytest.raises(RecordError, match="unknown key 'accelerators'"):
        read_job_spec(spec_json(accelerators=None))


def test_a_task_needs_a_command() -> None:
    with pytest.raises(ValueError, match="task 't' has an empty argv"):
        task(argv=())


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("data", "is not an absolute directory below the root"),
        ("./data", "is not an absolute directory below the root"),
        ("/data/../etc", "is not an absolute directory below the root"),
        ("/", "is not an absolute directory below the root"),
        ("/data/", "is not normalised; write '/data'"),
    ],
)
def test_a_mount_path_is_absolute_normalised_and_below_the_root(path: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"mount path {path!r} {message}"):
        Mount(name="m", path=path, access=MountAccess.READ_ONLY)


def test_an_accelerator_is_one_word_and_at_least_one() -> None:
    with pytest.raises(ValueError, match="accelerator count must be at least 1, not 0"):
        Accelerator(kind="L4", count=0)
    for kind in ("", "L4:2", "L 4"):
        with pytest.raises(ValueError, match=f"accelerator kind {kind!r} is not one word"):
            Accelerator(kind=kind)


def test_example_tasks_are_named_by_their_path_and_must_lie_in_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    script = project / "examples" / "metrics" / "01_basic.py"
    script.parent.mkdir(parents=True)
    script.write_text("")
    tasks = example_tasks([script], project=project, timeout_seconds=30)
    assert tasks == (
        Task(
            name="examples.metrics.01_basic",
            argv=("python", "examples/metrics/01_basic.py"),
            timeout_seconds=30,
        ),
    )
    outside = tmp_path / "outside.py"
    outside.write_text("")
    with pytest.raises(ValueError, match=f"example {outside} is outside the project"):
        example_tasks([outside], project=project, timeout_seconds=30)
