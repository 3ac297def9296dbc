"""Reading ``[tool.substrax.compute]`` and resolving jobs, in substrax's forms and the grammar's."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from x_tui.compute.config import (
    ResolvedJob,
    read_compute_config,
    resolve_job,
    resolve_request,
)
from x_tui.compute.extensions import CpuRequest
from x_tui.compute.resources import ResourceError
from x_tui.compute.worker.errors import ConfigError, NoComputeTable, UnknownJobError, UserError
from x_tui.compute.worker.records import RecordError, dumps_compact, read_record
from x_tui.compute.worker.spec import Accelerator, JobSpec, Resources, read_job_spec

DOCUMENTED = """
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "demo-outputs"

[tool.substrax.compute.jobs.examples]
examples = ["examples"]
commands = { gpu-tests = ["python", "-m", "pytest", "tests/gpu"] }
extras = ["cuda12"]
resources = { accelerator = { kind = "L4", count = 1 }, cpu = 8, memory_mib = 32768 }
timeout_seconds = 1800
task_timeout_seconds = 300
runtime = { platforms = ["cuda"], xla_flags = ["--xla_gpu_deterministic_ops=true"] }
env = { TF_CPP_MIN_LOG_LEVEL = "1" }
mounts = [{ name = "datasets", path = "/data", access = "read-only" }]
"""

# The spec substrax writes for the documented job (notes section 1.2), byte for byte.
DOCUMENTED_SPEC = (
    '{"schema_version": 2, "name": "examples", "tasks": [{"name": "examples.01_first", "argv":'
    ' ["python", "examples/01_first.py"], "timeout_seconds": 300.0}, {"name": "gpu-tests", "argv":'
    ' ["python", "-m", "pytest", "tests/gpu"], "timeout_seconds": 300.0}], "timeout_seconds":'
    ' 1800.0, "resources": {"accelerator": {"kind": "L4", "count": 1}, "cpu": 8.0, "memory_mib":'
    ' 32768}, "extras": ["cuda12"], "runtime": {"platforms": ["cuda"], "cpu_devices": null,'
    ' "enable_x64": null, "matmul_precision": null, "compilation_cache_dir": null, "xla_flags":'
    ' ["--xla_gpu_deterministic_ops=true"], "preallocate": null, "memory_fraction": null}, "env":'
    ' {"TF_CPP_MIN_LOG_LEVEL": "1"}, "mounts": [{"name": "datasets", "path": "/data", "access":'
    ' "read-only"}]}'
)


def project_with(root: Path, compute: str, *, scripts: tuple[str, ...] = ()) -> Path:
    """A project directory whose pyproject.toml holds ``compute``, with empty scripts."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n' + textwrap.dedent(compute), encoding="utf-8"
    )
    for script in scripts:
        path = root / script
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("print('hello')\n", encoding="utf-8")
    return root


def job_project(root: Path, job_table: str, *, name: str = "train") -> Path:
    """A project with one job, ``name``, whose table is ``job_table`` plus one command."""
    table = textwrap.dedent(job_table).strip()
    compute = f'[tool.substrax.compute.jobs.{name}]\ncommands = {{ t = ["python", "t.py"] }}\n'
    return project_with(root, compute + table + "\n")


def resolve(root: Path, name: str = "train", accelerator: str | None = None) -> ResolvedJob:
    return resolve_request(read_compute_config(root), name, project=root, accelerator=accelerator)


def where(root: Path, job: str = "train") -> str:
    return f"{root / 'pyproject.toml'}: [tool.substrax.compute.jobs.{job}]"


# --- substrax's behaviour, kept --------------------------------------------------------------


def test_the_documented_job_writes_the_spec_substrax_writes(tmp_path: Path) -> None:
    root = project_with(tmp_path, DOCUMENTED, scripts=("examples/01_first.py",))
    config = read_compute_config(root)
    assert config.backend == "modal"
    assert config.backend_settings("modal") == {"outputs_volume": "demo-outputs"}
    spec = resolve_job(config, "examples", project=root)
    assert dumps_compact(spec) == DOCUMENTED_SPEC
    assert resolve_request(config, "examples", project=root).spec == spec


def test_examples_come_first_in_path_order_without_private_scripts_then_commands(
    tmp_path: Path,
) -> None:
    scripts = (
        "examples/b.py",
        "examples/a/z.py",
        "examples/a-c.py",
        "examples/_helpers.py",
        "examples/sub/_shared.py",
        "examples/_templates/t.py",
        "examples/notes.txt",
    )
    root = project_with(
        tmp_path,
        """
        [tool.substrax.compute.jobs.examples]
        examples = ["examples"]
        commands = { zz = ["python", "-c", "1"], aa = ["true"] }
        timeout_seconds = 60
        """,
        scripts=scripts,
    )
    spec = resolve_job(read_compute_config(root), "examples", project=root)
    assert [task.name for task in spec.tasks] == [
        "examples.a.z",
        "examples.a-c",
        "examples.b",
        "zz",
        "aa",
    ]
    assert spec.tasks[0].argv == ("python", "examples/a/z.py")


@pytest.mark.parametrize("task_timeout", ["", "task_timeout_seconds = 0"])
def test_a_task_budget_falls_back_to_the_jobs(tmp_path: Path, task_timeout: str) -> None:
    root = job_project(tmp_path, f"timeout_seconds = 120\n{task_timeout}")
    spec = resolve(root).spec
    assert spec.timeout_seconds == 120.0
    assert [task.timeout_seconds for task in spec.tasks] == [120.0]


def test_the_accelerator_override_keeps_cpu_and_memory(tmp_path: Path) -> None:
    root = job_project(
        tmp_path,
        """
        timeout_seconds = 60
        resources = { accelerator = { kind = "L4", count = 1 }, cpu = 8, memory_mib = 32768 }
        """,
    )
    config = read_compute_config(root)
    spec = resolve_job(config, "train", project=root, accelerator=Accelerator(kind="H100", count=2))
    assert spec.resources == Resources(
        accelerator=Accelerator(kind="H100", count=2), cpu=8.0, memory_mib=32768
    )
    resolved = resolve(root, accelerator="h100!:8,a100-80gb:8")
    assert resolved.spec.resources == Resources(
        accelerator=Accelerator(kind="H100", count=8), cpu=8.0, memory_mib=32768
    )
    assert str(resolved.request.accelerator) == "H100!:8,A100-80GB:8"
    assert resolved.request.cpu == CpuRequest(per_node=8.0)


def test_an_unknown_job_lists_the_configured_ones(tmp_path: Path) -> None:
    root = project_with(tmp_path, DOCUMENTED, scripts=("examples/01_first.py",))
    with pytest.raises(UnknownJobError, match=r"^no job 'nope'; configured: examples$"):
        resolve_job(read_compute_config(root), "nope", project=root)


def test_no_configured_job_says_none(tmp_path: Path) -> None:
    root = project_with(tmp_path, "[tool.substrax.compute]\n")
    with pytest.raises(UnknownJobError, match="configured: none"):
        resolve(root, "any")


def test_a_job_with_no_tasks_is_refused(tmp_path: Path) -> None:
    root = project_with(tmp_path, "[tool.substrax.compute.jobs.empty]\ntimeout_seconds = 60\n")
    with pytest.raises(ConfigError, match="job 'empty' needs at least one task"):
        resolve(root, "empty")


def test_a_missing_examples_directory_is_refused(tmp_path: Path) -> None:
    root = job_project(tmp_path, 'examples = ["missing"]\ntimeout_seconds = 60')
    with pytest.raises(ConfigError) as caught:
        resolve(root)
    assert str(caught.value) == (
        f"{where(root)} examples: directory 'missing' of job 'train' does not exist in {root}"
    )


@pytest.mark.parametrize("key", ["accelerators", "accelerator"])
def test_a_v1_accelerator_job_key_is_refused(tmp_path: Path, key: str) -> None:
    root = job_project(tmp_path, f'timeout_seconds = 60\n{key} = "L4"')
    with pytest.raises(ConfigError) as caught:
        resolve(root)
    assert str(caught.value).startswith(f"{where(root)} unknown key {key!r}")
    assert "(accepted: examples, commands, task_timeout_seconds" in str(caught.value)


def test_a_missing_timeout_is_refused(tmp_path: Path) -> None:
    root = job_project(tmp_path, "")
    with pytest.raises(ConfigError) as caught:
        resolve(root)
    assert str(caught.value) == f"{where(root)} missing required key 'timeout_seconds'"


def test_a_misspelled_top_level_key_is_refused(tmp_path: Path) -> None:
    root = project_with(tmp_path, '[tool.substrax.compute]\nbackends_default = "modal"\n')
    with pytest.raises(ConfigError, match="unknown key 'backends_default'; did you mean"):
        read_compute_config(root)


def test_the_compute_table_is_required(tmp_path: Path) -> None:
    with pytest.raises(NoComputeTable, match=r"has no pyproject\.toml"):
        read_compute_config(tmp_path)
    root = project_with(tmp_path / "p", "")
    with pytest.raises(NoComputeTable, match=r"has no \[tool.substrax.compute\] table"):
        read_compute_config(root)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[tool\n", id="an-unclosed-table"),
        # not TOML 1.0, so substrax refuses it (tomlkit, which x-tui read with, took it)
        pytest.param(
            '[tool.substrax.compute]\nbackend = "local"\n'
            '[tool.substrax.compute.jobs.train]\nenv = { A = "1", }\n',
            id="a-trailing-comma-in-an-inline-table",
        ),
        # (tomlkit raised its base error for it, not its ParseError: a traceback)
        pytest.param(
            '[tool.substrax.compute]\nbackends.local.python = "python3"\n'
            '[tool.substrax.compute.backends.local]\ncompute = "cpu"\n',
            id="a-table-defined-by-a-dotted-key-then-again",
        ),
    ],
)
def test_a_file_that_is_not_toml_is_named(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    with pytest.raises(
        ConfigError, match=re.escape(f"{tmp_path / 'pyproject.toml'}: not valid TOML")
    ):
        read_compute_config(tmp_path)


def test_a_bad_job_does_not_break_the_others(tmp_path: Path) -> None:
    root = project_with(
        tmp_path,
        """
        [tool.substrax.compute.jobs.good]
        commands = { t = ["true"] }
        timeout_seconds = 60
        [tool.substrax.compute.jobs.bad]
        commands = { t = ["true"] }
        timeout_seconds = 60
        resources = { accelerator = "h10" }
        """,
    )
    assert resolve(root, "good").spec.name == "good"
    with pytest.raises(ConfigError):
        resolve(root, "bad")


SUBSTRAX_RESOURCES = [
    '{ accelerator = { kind = "L4", count = 1 }, cpu = 8, memory_mib = 32768 }',
    '{ accelerator = { kind = "my-own-gpu" } }',
    '{ accelerator = { kind = "l4", count = 16 } }',
    "{ cpu = 0.5 }",
    "{}",
    # refused, each with substrax's own message
    '{ accelerator = { kind = "L4", count = 0 } }',
    '{ accelerator = { kind = "L4:2" } }',
    '{ accelerator = { kind = "L4", cnt = 1 } }',
    "{ accelerator = { count = 1 } }",
    "{ cpu = 0 }",
    "{ cpu = -1.5 }",
    "{ cpu = true }",
    "{ memory_mib = 0 }",
    "{ memory_mib = 1.5 }",
    '{ memory_mib = "32768" }',
    '"L4"',
]


@pytest.mark.parametrize("resources", SUBSTRAX_RESOURCES)
def test_a_substrax_resources_table_reads_exactly_as_substrax_reads_it(
    tmp_path: Path, resources: str
) -> None:
    root = job_project(tmp_path, f"timeout_seconds = 60\nresources = {resources}")
    table = dict(read_compute_config(root).jobs["train"])
    reference: dict[str, object] = {
        "name": "train",
        "tasks": [{"name": "t", "argv": ["python", "t.py"], "timeout_seconds": 60}],
        "timeout_seconds": 60,
        "resources": table["resources"],
    }
    try:
        expected: JobSpec | None = read_record(JobSpec, reference)
        refusal = ""
    except RecordError as error:
        expected, refusal = None, f"{where(root)} {error}"
    if expected is None:
        with pytest.raises(ConfigError) as caught:
            resolve(root)
        assert str(caught.value) == refusal
    else:
        resolved = resolve(root)
        assert resolved.spec == expected
        assert resolved.request.to_resources() == expected.resources


# --- the grammar's forms in job tables -------------------------------------------------------

EXTENDED = [
    (
        'resources = { accelerator = ["h100!:8", "A100-80GB:8"], cpu = "8:128", memory = "32Gi" }',
        Resources(accelerator=Accelerator(kind="H100", count=8), cpu=8.0, memory_mib=32768),
        "H100!:8,A100-80GB:8",
        1,
    ),
    (
        'resources = { accelerator = "l4", memory_bytes = 17179869184 }',
        Resources(accelerator=Accelerator(kind="L4"), memory_mib=16384),
        "L4",
        1,
    ),
    (
        'resources = { accelerator = "H100:16", cpu = 8, memory_mib = 65536 }',
        Resources(accelerator=Accelerator(kind="H100", count=16), cpu=8.0, memory_mib=65536),
        "H100:16",
        2,
    ),
    (
        'resources = { accelerator = { kind = "L4", count = 2 }, memory = "4Gi", cpu = "0.5" }',
        Resources(accelerator=Accelerator(kind="L4", count=2), cpu=0.5, memory_mib=4096),
        "L4:2",
        1,
    ),
    (
        'resources = { cpu = "8:128", memory = 2048 }',
        Resources(cpu=8.0, memory_mib=2048),
        "None",
        16,
    ),
]


@pytest.mark.parametrize(("line", "resources", "accelerator", "nodes"), EXTENDED)
def test_the_grammars_forms_read_in_a_job_table(
    tmp_path: Path, line: str, resources: Resources, accelerator: str, nodes: int
) -> None:
    root = job_project(tmp_path, f"timeout_seconds = 60\n{line}")
    resolved = resolve(root)
    assert resolved.spec.resources == resources
    assert str(resolved.request.accelerator) == accelerator
    assert resolved.request.nodes == nodes


@pytest.mark.parametrize(
    ("timeouts", "job", "task"),
    [
        ('timeout_seconds = "6h"', 21600.0, 21600.0),
        ('timeout_seconds = "1h30m"\ntask_timeout_seconds = "90s"', 5400.0, 90.0),
        ('timeout_seconds = 1800\ntask_timeout_seconds = "30m"', 1800.0, 1800.0),
        ('timeout_seconds = "2d"\ntask_timeout_seconds = 600', 172800.0, 600.0),
    ],
)
def test_timeouts_read_as_durations(tmp_path: Path, timeouts: str, job: float, task: float) -> None:
    root = job_project(tmp_path, timeouts)
    spec = resolve(root).spec
    assert spec.timeout_seconds == job
    assert spec.tasks[0].timeout_seconds == task


def test_the_spec_of_an_extended_table_holds_only_substrax_keys(tmp_path: Path) -> None:
    root = job_project(
        tmp_path,
        """
        timeout_seconds = "6h"
        resources = { accelerator = ["h100!:8", "A100-80GB:8"], cpu = "8:128", memory = "32Gi" }
        """,
    )
    written = dumps_compact(resolve(root).spec)
    assert written == (
        '{"schema_version": 2, "name": "train", "tasks": [{"name": "t", "argv": ["python",'
        ' "t.py"], "timeout_seconds": 21600.0}], "timeout_seconds": 21600.0, "resources":'
        ' {"accelerator": {"kind": "H100", "count": 8}, "cpu": 8.0, "memory_mib": 32768},'
        ' "extras": [], "runtime": {"platforms": null, "cpu_devices": null, "enable_x64": null,'
        ' "matmul_precision": null, "compilation_cache_dir": null, "xla_flags": [],'
        ' "preallocate": null, "memory_fraction": null}, "env": {}, "mounts": []}'
    )
    assert read_job_spec(json.loads(written)) == resolve(root).spec


REFUSED_TABLES = [
    (
        'timeout_seconds = 60\nresources = { accelerator = "h10:8" }',
        "resources.accelerator: accelerator 'h10:8': unknown accelerator kind 'h10'; did you"
        " mean 'H100'?",
    ),
    (
        'timeout_seconds = 60\nresources = { accelerator = ["H100:8", 8] }',
        "resources.accelerator: accelerator alternative 8 is not a string",
    ),
    (
        "timeout_seconds = 60\nresources = { accelerator = [] }",
        "resources.accelerator: accelerator [] lists no alternatives",
    ),
    (
        'timeout_seconds = 60\nresources = { accelerator = ["H100:16", "A100-80GB:8"] }',
        "resources.accelerator: accelerator ['H100:16', 'A100-80GB:8']: accelerator alternatives"
        " must span the same number of nodes",
    ),
    (
        'timeout_seconds = 60\nresources = { cpu = "8:100" }',
        "resources.cpu: cpu '8:100': a CPU total of 100 is not a whole multiple of 8 per node",
    ),
    (
        'timeout_seconds = 60\nresources = { memory = "32 gigs" }',
        "resources.memory: memory '32 gigs': unknown unit 'gigs'",
    ),
    (
        'timeout_seconds = 60\nresources = { memory_bytes = "16Gi" }',
        "resources.memory_bytes: memory_bytes '16Gi' is not a positive whole number of bytes",
    ),
    (
        'timeout_seconds = 60\nresources = { memory = "32Gi", memory_mib = 32768 }',
        "resources: memory and memory_mib both set the memory; keep one of them",
    ),
    (
        'timeout_seconds = 60\nresources = { gpu = "H100" }',
        "resources.gpu: unknown key 'gpu'; did you mean 'accelerator'? (accepted: accelerator,"
        " cpu, memory, memory_mib, memory_bytes)",
    ),
    (
        'timeout_seconds = 60\nresources = { cpus = "8" }',
        "resources.cpus: unknown key 'cpus'; did you mean 'cpu'?",
    ),
    (
        'timeout_seconds = "6 hours"',
        "timeout_seconds: duration '6 hours' is not seconds such as 1800, or a duration such as"
        " '90s', '30m', '6h' or '1h30m'",
    ),
    (
        'timeout_seconds = 60\ntask_timeout_seconds = "-1m"',
        "task_timeout_seconds: duration '-1m' is not seconds",
    ),
    (
        "timeout_seconds = true",
        "timeout_seconds: expected a number of seconds or a duration such as '6h', got True",
    ),
    (
        'timeout_seconds = "0s"',
        "timeout_seconds: duration '0s' is not positive",
    ),
]


@pytest.mark.parametrize(("table", "message"), REFUSED_TABLES)
def test_a_refused_value_names_the_file_the_table_and_the_key(
    tmp_path: Path, table: str, message: str
) -> None:
    root = job_project(tmp_path, table)
    with pytest.raises(ConfigError) as caught:
        resolve(root)
    assert str(caught.value).startswith(f"{where(root)} {message}")


def test_a_refused_accelerator_override_names_itself(tmp_path: Path) -> None:
    root = job_project(tmp_path, "timeout_seconds = 60")
    with pytest.raises(ResourceError) as caught:
        resolve(root, accelerator="H100:8,h10:8")
    assert isinstance(caught.value, UserError)
    assert str(caught.value).startswith(
        "accelerator 'h10:8': unknown accelerator kind 'h10'; did you mean 'H100'?"
    )
