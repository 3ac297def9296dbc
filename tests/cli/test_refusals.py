"""A corpus of bad inputs: each is refused in one line on stderr, exit 2, and writes nothing.

Every case runs ``python -m x_tui`` for real. The line must name what is wrong (the file, the key,
the value); there is no traceback; the project and the state directory are byte for byte what
they were before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.cli.cli_support import Cli

VALID_TASKS = 'commands = { t = ["python", "-c", "pass"] }'
VALID_JOB = f"{VALID_TASKS}\ntimeout_seconds = 60"
FILE = "{project}/pyproject.toml"
RUN_ID = "hello-20260101T000000Z-abcdef"


@dataclass(frozen=True)
class Bad:
    """One refused command: the configuration it meets, its arguments, what the line must say."""

    id: str
    job: str = VALID_JOB
    says: tuple[str, ...] = ()
    argv: tuple[str, ...] = ("run", "bad", "--backend", "local")
    top: str = ""
    local: str | None = None
    whole_file: str | None = None


def _mount(**fields: str) -> str:
    values = {"name": "data", "path": "/data", "access": "read-only", **fields}
    inner = ", ".join(f"{key} = {json.dumps(value)}" for key, value in values.items())
    return f"{VALID_JOB}\nmounts = [{{ {inner} }}]"


CONFIG_CASES = [
    # Unknown and misspelled keys, at every level.
    Bad("top-level unknown key", top='backendz = "local"', says=(FILE, "'backendz'", "backend")),
    Bad("top-level misspelled jobs", top="job = {}", says=(FILE, "'job'", "jobs")),
    Bad(
        "backends.local unknown key",
        local='pyton = "python3"',
        says=(FILE, "backends.local", "'pyton'"),
    ),
    Bad("job unknown key", job=f"{VALID_JOB}\ntimeout = 5", says=(FILE, "jobs.bad", "'timeout'")),
    Bad(
        "job misspelled accelerators",
        job=f'{VALID_JOB}\naccelerators = {{ kind = "L4" }}',
        says=(FILE, "jobs.bad", "'accelerators'"),
    ),
    Bad(
        "job v1 accelerator key",
        job=f'{VALID_JOB}\naccelerator = {{ kind = "L4" }}',
        says=(FILE, "jobs.bad", "'accelerator'"),
    ),
    Bad(
        "resources unknown key",
        job=f"{VALID_JOB}\nresources = {{ gpu = 1 }}",
        says=(FILE, "resources", "'gpu'"),
    ),
    Bad(
        "resources misspelled memory",
        job=f"{VALID_JOB}\nresources = {{ memory_mb = 1024 }}",
        says=(FILE, "'memory_mb'", "memory_mib"),
    ),
    Bad(
        "accelerator unknown key",
        job=f'{VALID_JOB}\nresources = {{ accelerator = {{ kind = "L4", cnt = 2 }} }}',
        says=(FILE, "accelerator", "'cnt'"),
    ),
    Bad("mount unknown key", job=_mount(mode="ro"), says=(FILE, "mounts", "'mode'")),
    # Wrong types.
    Bad("top-level backend not a string", top="backend = 3", says=(FILE, "backend", "3")),
    Bad("backends.local python not a string", local="python = 3", says=(FILE, "python", "3")),
    Bad(
        "timeout as a word",
        job=f'{VALID_TASKS}\ntimeout_seconds = "soon"',
        says=(FILE, "timeout_seconds", "'soon'"),
    ),
    Bad(
        "cpu as a word",
        job=f'{VALID_JOB}\nresources = {{ cpu = "eight" }}',
        says=(FILE, "cpu", "'eight'"),
    ),
    Bad(
        "accelerator count as a float",
        job=f'{VALID_JOB}\nresources = {{ accelerator = {{ kind = "L4", count = 1.5 }} }}',
        says=(FILE, "count", "1.5"),
    ),
    Bad(
        "memory as a float",
        job=f"{VALID_JOB}\nresources = {{ memory_mib = 1.5 }}",
        says=(FILE, "memory_mib", "1.5"),
    ),
    Bad("env value not a string", job=f"{VALID_JOB}\nenv = {{ A = 1 }}", says=(FILE, "env", "1")),
    Bad(
        "examples not an array",
        job='examples = "examples"\ntimeout_seconds = 60',
        says=(FILE, "examples", "'examples'"),
    ),
    Bad(
        "command not an array",
        job='commands = { t = "python -c pass" }\ntimeout_seconds = 60',
        says=(FILE, "commands.t", "'python -c pass'"),
    ),
    Bad("extras not an array", job=f'{VALID_JOB}\nextras = "cuda"', says=(FILE, "extras", "cuda")),
    Bad("mount access unknown", job=_mount(access="rw"), says=(FILE, "access", '"rw"')),
    Bad("negative timeout", job=f"{VALID_TASKS}\ntimeout_seconds = -1", says=(FILE, "-1")),
    Bad(
        "runtime value out of range",
        job=f'{VALID_JOB}\nruntime = {{ matmul_precision = "ultra" }}',
        says=(FILE, "matmul_precision", "'ultra'"),
    ),
    # What the worker could not run (run and plan alike).
    *(
        Bad(
            f"{case} ({verb})",
            job=job,
            says=(FILE, *says),
            argv=(verb, "bad", "--backend", "local"),
        )
        for verb in ("run", "plan")
        for case, job, says in (
            ("env name with =", f'{VALID_JOB}\nenv = {{ "A=B" = "x" }}', ("env name 'A=B'",)),
            ("empty env name", f'{VALID_JOB}\nenv = {{ "" = "x" }}', ("env name ''",)),
            ("NUL in an env name", f'{VALID_JOB}\nenv = {{ "A\\u0000" = "x" }}', ("NUL",)),
            ("NUL in an env value", f'{VALID_JOB}\nenv = {{ A = "x\\u0000y" }}', ("'A'", "NUL")),
            (
                "NUL in argv",
                'commands = { t = ["python", "-c", "pass\\u0000"] }\ntimeout_seconds = 60',
                ("commands.t", "argv[2]", "NUL"),
            ),
            ("timeout 1e308", f"{VALID_TASKS}\ntimeout_seconds = 1e308", ("1e+308",)),
            ("timeout inf", f"{VALID_TASKS}\ntimeout_seconds = inf", ("inf",)),
            ("timeout nan", f"{VALID_TASKS}\ntimeout_seconds = nan", ("nan",)),
            (
                "task timeout past a year",
                f"{VALID_JOB}\ntask_timeout_seconds = 40000000",
                ("commands.t", "4e+07", "366 days"),
            ),
            (
                "NUL in a mount path",
                _mount(path="/da\u0000ta"),
                ("mount path", "NUL"),
            ),
        )
    ),
    # Bad mount paths.
    Bad("mount path relative", job=_mount(path="data"), says=(FILE, "mount path 'data'")),
    Bad("mount path dot-relative", job=_mount(path="./data"), says=(FILE, "'./data'")),
    Bad("mount path with ..", job=_mount(path="/data/../etc"), says=(FILE, "'/data/../etc'")),
    Bad("mount path root", job=_mount(path="/"), says=(FILE, "mount path '/'")),
    # Bad names.
    Bad(
        "job name with a space",
        job="",
        top=f'[tool.substrax.compute.jobs."bad name"]\n{VALID_JOB}\n',
        argv=("run", "bad name", "--backend", "local"),
        says=(FILE, "'bad name'"),
    ),
    Bad(
        "task name that climbs out",
        job='commands = { "../x" = ["python", "-c", "pass"] }\ntimeout_seconds = 60',
        says=(FILE, "'../x'"),
    ),
    Bad(
        "task name with a slash",
        job='commands = { "a/b" = ["python", "-c", "pass"] }\ntimeout_seconds = 60',
        says=(FILE, "'a/b'"),
    ),
    Bad("mount name with a space", job=_mount(name="my data"), says=(FILE, "'my data'")),
    # Missing things.
    Bad(
        "missing examples directory",
        job='examples = ["missing"]\ntimeout_seconds = 60',
        says=(FILE, "examples", "'missing'"),
    ),
    Bad(
        "examples outside the project",
        job='examples = ["../.."]\ntimeout_seconds = 60',
        says=(FILE, "examples", "'../..'", "outside"),
    ),
    Bad("missing timeout_seconds", job=VALID_TASKS, says=(FILE, "jobs.bad", "'timeout_seconds'")),
    Bad("a job with no tasks", job="timeout_seconds = 60", says=(FILE, "needs at least one task")),
    Bad(
        "an empty command",
        job="commands = { t = [] }\ntimeout_seconds = 60",
        says=(FILE, "'t'", "empty argv"),
    ),
    Bad(
        "invalid TOML",
        whole_file='[tool.substrax.compute]\nbackend = "local\n',
        says=(FILE, "not valid TOML"),
    ),
    Bad(
        "no compute table",
        whole_file='[project]\nname = "demo"\n',
        says=(FILE, "[tool.substrax.compute]"),
    ),
    # Unknown names on the command line.
    Bad("unknown job", argv=("run", "nosuch"), says=("'nosuch'", "configured: bad, failing")),
    Bad(
        "unknown backend",
        argv=("run", "bad", "--backend", "nosuch"),
        says=("'nosuch'", "registered: ", "local"),
    ),
    Bad("no backend named anywhere", argv=("run", "bad"), says=(FILE, "no backend")),
    # Bad accelerators.
    *(
        Bad(
            f"accelerator {text!r}",
            argv=("run", "bad", "--backend", "local", "--accelerator", text),
            says=(f"accelerator {text!r}",),
        )
        for text in ("", "L4:", ":2", "L4:0", "L 4", "L4:two", "H1OO")
    ),
    Bad(
        "accelerator refused by plan too",
        argv=("plan", "bad", "--backend", "local", "--accelerator", "L4:0"),
        says=("accelerator 'L4:0'", "at least 1"),
    ),
]


def _write_project(cli: Cli, case: Bad) -> None:
    if case.whole_file is not None:
        (cli.project / "pyproject.toml").write_text(case.whole_file)
        return
    jobs = f"\n[tool.substrax.compute.jobs.bad]\n{case.job}\n" if case.job else ""
    cli.write_pyproject(jobs=jobs, top=case.top, local=case.local)


@pytest.fixture
def bare(tmp_path: Path, new_cli: Callable[..., Cli]) -> Cli:
    """A project with no default backend (the command line names one), and an empty state."""
    return new_cli(tmp_path, top="")


def _assert_refused(cli: Cli, argv: tuple[str, ...], says: tuple[str, ...]) -> None:
    before = cli.snapshot()

    result = cli(*argv)

    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("x-tui: ")
    for wanted in says:
        assert wanted.format(project=cli.project) in lines[0]
    assert "Traceback" not in result.stderr
    assert cli.snapshot() == before, "a refused command must write nothing"


@pytest.mark.parametrize("case", CONFIG_CASES, ids=lambda case: case.id)
def test_a_bad_configuration_or_argument_is_refused_in_one_line(bare: Cli, case: Bad) -> None:
    _write_project(bare, case)
    _assert_refused(bare, case.argv, case.says)


def test_an_unknown_runtime_key_is_refused_as_substrax_refuses_it(bare: Cli) -> None:
    _write_project(bare, Bad("", job=f'{VALID_JOB}\nruntime = {{ platfroms = ["cpu"] }}'))

    result = bare("plan", "bad", "--backend", "local")

    assert result.returncode == 2
    assert "runtime: unknown key 'platfroms'; did you mean 'platforms'?" in result.stderr
    assert "[tool.substrax.compute.jobs.bad]" in result.stderr


def _handle(version: object) -> str:
    return json.dumps(
        {
            "schema_version": version,
            "run_id": RUN_ID,
            "backend": "local",
            "job": "hello",
            "project": "/nowhere",
            "submitted_at": "2026-01-01T00:00:00Z",
            "settings": {},
            "details": {"pid": "1", "run_dir": "/nowhere"},
        },
        indent=2,
    )


HANDLE_CASES = {
    "truncated handle": (_handle(2)[:40], ("{handle}", "not JSON")),
    "handle that is not JSON": ("hello", ("{handle}", "not JSON")),
    "handle that is a JSON array": ("[]", ("{handle}", "JSON object")),
    "handle of version 1 with settings": (
        _handle(1),
        ("{handle}", "a version 1 run handle holds no settings"),
    ),
    "handle of version 3": (_handle(3), ("{handle}", "version 3", "(1 or 2)")),
    "handle with an unknown key": (
        _handle(2).replace('"settings"', '"extra": 1, "settings"'),
        ("{handle}", "'extra'"),
    ),
}


@pytest.mark.parametrize("verb", ["status", "logs", "fetch", "cancel"])
@pytest.mark.parametrize("case", sorted(HANDLE_CASES))
def test_a_bad_handle_is_refused_in_one_line(bare: Cli, case: str, verb: str) -> None:
    text, says = HANDLE_CASES[case]
    handle = bare.runs / f"{RUN_ID}.json"
    handle.parent.mkdir(parents=True)
    handle.write_text(text)

    _assert_refused(bare, (verb, RUN_ID), tuple(s.replace("{handle}", str(handle)) for s in says))


@pytest.mark.parametrize("verb", ["status", "logs", "fetch", "cancel"])
@pytest.mark.parametrize("run_id", ["../x", "../../etc/passwd", "hello", "/tmp/x"])
def test_a_run_id_that_is_not_one_is_refused_before_any_path_is_made(
    bare: Cli, verb: str, run_id: str
) -> None:
    _assert_refused(bare, (verb, run_id), (repr(run_id), "is not a run id"))


MANIFEST_CASES = {
    "truncated manifest": lambda text: text[: len(text) // 2],
    "manifest that is not JSON": lambda text: "not json at all",
    "manifest of version 1": lambda text: text.replace(
        '"schema_version": 2', '"schema_version": 1'
    ),
    "manifest with a string exit code": lambda text: text.replace(
        '"returncode": 0', '"returncode": "0"'
    ),
}


@pytest.fixture(scope="module")
def finished(
    tmp_path_factory: pytest.TempPathFactory, new_cli: Callable[..., Cli]
) -> tuple[Cli, str, Path]:
    """One finished run of ``hello``: its CLI, its run id and its manifest."""
    cli = new_cli(tmp_path_factory.mktemp("finished"))
    result = cli("run", "hello", "--detach")
    run_id = cli.submitted_id(result.stdout)
    assert cli("logs", run_id, "--follow").returncode == 0
    (manifest,) = (cli.state / "compute" / "local").glob(f"{run_id}/outputs/manifest.json")
    return cli, run_id, manifest


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_a_bad_manifest_is_refused_in_one_line_naming_it(
    finished: tuple[Cli, str, Path], case: str
) -> None:
    cli, run_id, manifest = finished
    good = manifest.read_text()
    manifest.write_text(MANIFEST_CASES[case](good))
    try:
        _assert_refused(cli, ("status", run_id), (str(manifest),))
    finally:
        manifest.write_text(good)
    assert cli("status", run_id).stdout == f"{run_id}  local  hello  succeeded\n"
