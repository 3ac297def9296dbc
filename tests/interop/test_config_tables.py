"""The same ``[tool.substrax.compute]`` tables, read by substrax 0.1.22's reader and by x-tui's.

Each table gets the same verdict from both, and when both accept it, the same ``spec.json``
bytes. The documented extensions (docs/extensions.md: durations, the hardware grammar,
``retries``, ``secrets``, ``dependencies``) are the one difference: x-tui accepts them, substrax
refuses them, and ``x-tui check`` names exactly the key that stops substrax.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop.harness import Substrax, shared_project
from x_tui.compute.config import read_compute_config, resolve_request
from x_tui.compute.overlays import overlay_fix, substrax_blockers
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.records import dumps_compact

TASK = 'commands = { a = ["python", "-c", "pass"] }\n'
T = TASK + "timeout_seconds = 60\n"


@dataclass(frozen=True)
class Case:
    id: str
    job: str
    accepted: bool
    extension: str = ""  # the key substrax refuses while x-tui accepts it
    top: str = ""
    name: str = "j"


CASES = [
    Case("minimal", T, True),
    Case("float timeout", TASK + "timeout_seconds = 60.5", True),
    Case("no timeout", TASK, False),
    Case("zero timeout", TASK + "timeout_seconds = 0", False),
    Case("negative timeout", TASK + "timeout_seconds = -1", False),
    Case("timeout as a boolean", TASK + "timeout_seconds = true", False),
    Case("task timeout", T + "task_timeout_seconds = 10", True),
    Case("task timeout 0 takes the job's", T + "task_timeout_seconds = 0", True),
    Case("examples in Path order", 'examples = ["examples"]\ntimeout_seconds = 60', True),
    Case("examples and commands", T + 'examples = ["examples"]', True),
    Case("examples directory missing", 'examples = ["nowhere"]\ntimeout_seconds = 60', False),
    Case("examples not an array", 'examples = "examples"\ntimeout_seconds = 60', False),
    Case("no tasks", "timeout_seconds = 60", False),
    Case("empty argv", "commands = { a = [] }\ntimeout_seconds = 60", False),
    Case("task name with a space", 'commands = { "a b" = ["x"] }\ntimeout_seconds = 60', False),
    Case("argv not strings", 'commands = { a = ["python", 1] }\ntimeout_seconds = 60', False),
    Case("accelerator table", T + 'resources = { accelerator = { kind = "L4", count = 2 } }', True),
    Case(
        "accelerator count 0", T + 'resources = { accelerator = { kind = "L4", count = 0 } }', False
    ),
    Case("accelerator kind L4:2", T + 'resources = { accelerator = { kind = "L4:2" } }', False),
    Case("cpu integer", T + "resources = { cpu = 8 }", True),
    Case("cpu fraction", T + "resources = { cpu = 0.5 }", True),
    Case("cpu zero", T + "resources = { cpu = 0 }", False),
    Case("memory_mib", T + "resources = { memory_mib = 32768 }", True),
    Case("memory_mib fraction", T + "resources = { memory_mib = 1.5 }", False),
    Case("unknown resources key", T + "resources = { gpus = 1 }", False),
    Case("extras", T + 'extras = ["cuda12", "dev"]', True),
    Case("env", T + 'env = { A = "1", B = "two" }', True),
    Case("env value a number", T + "env = { A = 1 }", False),
    Case("platforms", T + 'runtime = { platforms = ["cuda", "cpu"] }', True),
    Case("platforms empty", T + "runtime = { platforms = [] }", False),
    Case("platform with a comma", T + 'runtime = { platforms = ["a,b"] }', False),
    Case("cpu_devices", T + "runtime = { cpu_devices = 8 }", True),
    Case("cpu_devices 0", T + "runtime = { cpu_devices = 0 }", False),
    Case("enable_x64", T + "runtime = { enable_x64 = true }", True),
    Case("matmul precision", T + 'runtime = { matmul_precision = "highest" }', True),
    Case("matmul precision unknown", T + 'runtime = { matmul_precision = "fast" }', False),
    Case("cache dir normalised", T + 'runtime = { compilation_cache_dir = "/tmp//cache/" }', True),
    Case("cache dir with dots", T + 'runtime = { compilation_cache_dir = "//tmp/./c/../d" }', True),
    Case("cache dir relative", T + 'runtime = { compilation_cache_dir = "cache" }', False),
    Case("xla flags", T + 'runtime = { xla_flags = ["--a=1", "--b"] }', True),
    Case("xla flag with a space", T + 'runtime = { xla_flags = ["--a b"] }', False),
    Case("xla flag without a name", T + 'runtime = { xla_flags = ["--=x"] }', False),
    Case("xla flag bare and empty", T + 'runtime = { xla_flags = ["--a", "--a="] }', False),
    Case("xla flag twice, same value", T + 'runtime = { xla_flags = ["--a=1", "--a=1"] }', True),
    Case("xla flag twice, two values", T + 'runtime = { xla_flags = ["--a=1", "--a=2"] }', False),
    Case("xla flag with one dash", T + 'runtime = { xla_flags = ["-a"] }', False),
    Case(
        "preallocate and fraction",
        T + "runtime = { preallocate = false, memory_fraction = 0.5 }",
        True,
    ),
    Case("memory fraction above 1", T + "runtime = { memory_fraction = 1.5 }", False),
    Case("runtime key misspelt", T + 'runtime = { platfroms = ["cpu"] }', False),
    Case("mount", T + 'mounts = [{ name = "d", path = "/data", access = "read-only" }]', True),
    Case(
        "mount at //data",
        T + 'mounts = [{ name = "d", path = "//data", access = "read-write" }]',
        True,
    ),
    Case(
        "mount path with a slash",
        T + 'mounts = [{ name = "d", path = "/data/", access = "read-only" }]',
        False,
    ),
    Case(
        "mount path with ..",
        T + 'mounts = [{ name = "d", path = "/a/../b", access = "read-only" }]',
        False,
    ),
    Case(
        "mount path relative",
        T + 'mounts = [{ name = "d", path = "data", access = "read-only" }]',
        False,
    ),
    Case("mount access rw", T + 'mounts = [{ name = "d", path = "/d", access = "rw" }]', False),
    Case(
        "two mounts share a name",
        T + 'mounts = [{ name = "d", path = "/a", access = "read-only" },'
        ' { name = "d", path = "/b", access = "read-only" }]',
        False,
    ),
    Case("schema_version 2", T + "schema_version = 2", True),
    Case("schema_version 1", T + "schema_version = 1", False),
    Case("v1 accelerator key", T + 'accelerator = { kind = "L4" }', False),
    Case("unknown job key", T + "timeout = 5", False),
    Case("name is overridden", T + 'name = "other"', True),
    Case("job name with dots and dashes", T, True, name="my-job.v2"),
    Case("unknown top-level key", T, False, top="backends_default = 1"),
    Case("backend not a string", T, False, top="backend = 1"),
    # The documented extensions: x-tui reads them, substrax refuses the table.
    Case("duration", TASK + 'timeout_seconds = "6h"', True, extension="timeout_seconds"),
    Case(
        "task duration", T + 'task_timeout_seconds = "10m"', True, extension="task_timeout_seconds"
    ),
    Case(
        "accelerator text",
        T + 'resources = { accelerator = "H100:8" }',
        True,
        extension="resources.accelerator",
    ),
    Case(
        "accelerator alternatives",
        T + 'resources = { accelerator = ["H100:8", "A100-80GB:8"] }',
        True,
        extension="resources.accelerator",
    ),
    Case("cpu text", T + 'resources = { cpu = "8" }', True, extension="resources.cpu"),
    Case(
        "memory with a unit",
        T + 'resources = { memory = "256Gi" }',
        True,
        extension="resources.memory",
    ),
    Case("retries", T + "retries = 2", True, extension="retries"),
    Case("secrets", T + 'secrets = { env = ["WANDB_API_KEY"] }', True, extension="secrets"),
    Case("dependencies", T + 'dependencies = { apt = ["ffmpeg"] }', True, extension="dependencies"),
]

EXAMPLES = {
    "examples/a.py": "print('a')\n",
    "examples/a/b.py": "print('ab')\n",
    "examples/a-c.py": "print('ac')\n",
    "examples/_helper.py": "raise SystemExit\n",
    "examples/x/_private/y.py": "raise SystemExit\n",
}


def write_case(root: Path, case: Case) -> Path:
    project = root / case.id.replace(" ", "_").replace("/", "_")
    project.mkdir(parents=True)
    for name, text in EXAMPLES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    key = f'"{case.name}"' if "." in case.name else case.name
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "t"\nversion = "0"\n\n[tool.substrax.compute]\n{case.top}\n\n'
        f"[tool.substrax.compute.jobs.{key}]\n{case.job}\n"
    )
    return project


def x_tui_reads(project: Path, job: str) -> dict[str, Any]:
    try:
        resolved = resolve_request(read_compute_config(project), job, project=project)
    except UserError as error:
        return {"ok": False, "error": str(error)}
    return {"ok": True, "spec": dumps_compact(resolved.spec)}


@pytest.fixture(scope="module")
def verdicts(
    substrax_installed: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Path], dict[str, Any]]:
    root = tmp_path_factory.mktemp("tables")
    projects = {case.id: write_case(root, case) for case in CASES}
    tools: Substrax = shared_project(
        tmp_path_factory.mktemp("reader"), substrax_installed, pycache=root
    )
    answer = tools.api(
        {
            "what": "resolve",
            "cases": [
                {"id": case.id, "project": str(projects[case.id]), "job": case.name}
                for case in CASES
            ],
        }
    )
    return projects, answer


def test_there_are_at_least_40_tables() -> None:
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_both_readers_give_the_same_verdict_and_spec_bytes(
    case: Case, verdicts: tuple[dict[str, Path], dict[str, Any]]
) -> None:
    projects, answer = verdicts
    theirs = answer[case.id]
    ours = x_tui_reads(projects[case.id], case.name)
    assert ours["ok"] is case.accepted, ours
    if case.extension:
        assert theirs["ok"] is False, theirs
        table = read_compute_config(projects[case.id]).jobs[case.name]
        assert [blocker.key for blocker in substrax_blockers(table)] == [case.extension]
        return
    assert theirs["ok"] is case.accepted, theirs
    if case.accepted:
        assert ours["spec"] == theirs["spec"]
        table = read_compute_config(projects[case.id]).jobs[case.name]
        assert substrax_blockers(table) == ()


FIXES = [case for case in CASES if case.extension]


@pytest.fixture(scope="module")
def fixed(
    substrax_installed: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Each extension case with ``x-tui check``'s fix applied, read by substrax."""
    root = tmp_path_factory.mktemp("fixed")
    projects: dict[str, Path] = {}
    for case in FIXES:
        project = write_case(root, case)
        table = read_compute_config(project).jobs[case.name]
        blockers = substrax_blockers(table)
        fix = overlay_fix(case.name, blockers)
        split = fix.index(f"[tool.x-tui.jobs.{case.name}]")
        blocked = {blocker.key.split(".")[0] for blocker in blockers}
        kept = [
            line
            for line in case.job.splitlines()
            if line.split(" = ")[0].split(".")[0] not in blocked
        ]
        (project / "pyproject.toml").write_text(
            '[project]\nname = "t"\nversion = "0"\n\n[tool.substrax.compute]\n\n'
            + "\n".join([fix[0], *kept, *fix[1:split]])
            + "\n\n"
            + "\n".join(fix[split:])
            + "\n"
        )
        projects[case.id] = project
    tools: Substrax = shared_project(
        tmp_path_factory.mktemp("fixed-reader"), substrax_installed, pycache=root
    )
    answer = tools.api(
        {
            "what": "resolve",
            "cases": [
                {"id": case.id, "project": str(projects[case.id]), "job": case.name}
                for case in FIXES
            ],
        }
    )
    return projects, answer


@pytest.mark.parametrize("case", FIXES, ids=lambda case: case.id)
def test_the_fix_check_prints_makes_the_job_runnable_by_substrax_with_the_same_spec(
    case: Case, fixed: tuple[dict[str, Path], dict[str, Any]]
) -> None:
    projects, answer = fixed
    ours = x_tui_reads(projects[case.id], case.name)
    assert ours["ok"], ours
    assert answer[case.id]["ok"], (
        answer[case.id],
        (projects[case.id] / "pyproject.toml").read_text(),
    )
    assert answer[case.id]["spec"] == ours["spec"]
