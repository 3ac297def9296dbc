"""What the modal backend asks Modal for, pinned without Modal: layers, options, refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from x_tui.backends.modal.ignore import gitignore_patterns
from x_tui.backends.modal.request import ModalRequest, app_name, build_request
from x_tui.backends.modal.settings import DEFAULT_IGNORE, ModalSettings
from x_tui.compute.extensions import CpuRequest, ResourceRequest
from x_tui.compute.resources import parse_accelerators
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.spec import Accelerator, JobSpec, Mount, MountAccess, Resources, Task

from .fake_modal.harness import PYPROJECT, make_project

VENV = "/.uv/.venv/bin/python"
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def _spec(**changes: object) -> JobSpec:
    fields: dict[str, object] = {
        "name": "train",
        "tasks": (Task(name="t", argv=("python", "scripts/t.py"), timeout_seconds=60.0),),
        "timeout_seconds": 1800.0,
    }
    fields.update(changes)
    return JobSpec(**fields)  # type: ignore[arg-type]


def _request(
    project: Path,
    spec: JobSpec | None = None,
    *,
    settings: ModalSettings | None = None,
    request: ResourceRequest | None = None,
) -> ModalRequest:
    return build_request(
        spec or _spec(),
        project=project,
        settings=settings or ModalSettings(outputs_volume="runs"),
        worker_file=project.parent / "state" / "worker.pyz",
        worker_digest="0123456789abcdef",
        request=request,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A packaged project with one script."""
    return make_project(tmp_path / "my project", {"t": "print('t')\n"})


def test_the_image_layers_come_in_the_order_of_what_they_depend_on(project: Path) -> None:
    """Python, locked dependencies, source, the project installed, then the worker."""
    planned = _request(project, _spec(extras=("cuda12",)))
    assert [(step.method, step.args, dict(step.options)) for step in planned.image] == [
        ("debian_slim", (), {"python_version": VERSION}),
        (
            "uv_sync",
            (),
            {
                "uv_project_dir": str(project.resolve()),
                "extras": ["cuda12"],
                "frozen": True,
                "extra_options": f"--python {VERSION}",
            },
        ),
        (
            "add_local_dir",
            (str(project.resolve()), "/project"),
            {"copy": True, "ignore": [*DEFAULT_IGNORE, ".venv", "**/.venv"]},
        ),
        (
            "run_commands",
            ("/.uv/uv pip install --python /.uv/.venv/bin/python --no-deps /project",),
            {},
        ),
        (
            "add_local_file",
            (str(project.parent / "state" / "worker.pyz"), "/x-tui/0123456789abcdef/worker.pyz"),
            {"copy": True},
        ),
    ]
    assert planned.python == "/.uv/.venv/bin/python"
    assert planned.worker_path == "/x-tui/0123456789abcdef/worker.pyz"


def test_a_project_without_a_build_system_is_not_installed(tmp_path: Path) -> None:
    """A virtual project (no [build-system]) gets no install layer, and the plan says why."""
    plain = PYPROJECT.split("[build-system]")[0]
    project = make_project(tmp_path / "p", {"t": ""}, pyproject=plain)
    planned = _request(project)
    assert [step.method for step in planned.image] == [
        "debian_slim",
        "uv_sync",
        "add_local_dir",
        "add_local_file",
    ]
    assert any("[build-system]" in note for note in planned.notes)


def test_a_project_without_pyproject_runs_on_the_image_python(tmp_path: Path) -> None:
    """Loose scripts get no dependency layer and run on debian_slim's interpreter."""
    project = make_project(tmp_path / "p", {"t": ""}, pyproject=None)
    planned = _request(project)
    assert [step.method for step in planned.image] == [
        "debian_slim",
        "add_local_dir",
        "add_local_file",
    ]
    assert planned.python == "/usr/local/bin/python"


def test_the_gitignore_and_ignore_leave_files_out_and_venv_is_always_out(project: Path) -> None:
    """.gitignore, then ignore (its ! wins over it), then .venv, which nothing brings back."""
    (project / ".gitignore").write_text("# data\ndata/\n/local.txt\n*.ckpt\n!keep.ckpt\n")
    settings = ModalSettings(outputs_volume="runs", ignore=("notes", "!.venv", "!data"))
    ignore = _request(project, settings=settings).image[2].options["ignore"]
    assert ignore == [
        "**/data",
        "local.txt",
        "**/*.ckpt",
        "!**/keep.ckpt",
        "notes",
        "!.venv",
        "!data",
        ".venv",
        "**/.venv",
    ]


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("build/", "**/build"),
        ("/build", "build"),
        ("docs/_build", "docs/_build"),
        ("*.log", "**/*.log"),
        ("!important.log", "!**/important.log"),
        ("**/cache", "**/cache"),
        ("\\#notes", "**/#notes"),
        ("# a comment", None),
        ("   ", None),
    ],
)
def test_gitignore_lines_become_dockerignore_patterns(line: str, pattern: str | None) -> None:
    """Unanchored patterns match at any depth; anchored ones at the root; comments vanish."""
    assert gitignore_patterns(line) == ([pattern] if pattern else [])


@pytest.mark.parametrize(
    ("accelerator", "gpu"),
    [
        (None, None),
        ("L4", "L4"),
        ("H100:2", "H100:2"),
        ("H100!", "H100!"),
        ("h100!:8", "H100!:8"),
        (["H100!:8", "A100-80GB:8"], ("H100!:8", "A100-80GB:8")),
    ],
)
def test_the_accelerator_becomes_modals_gpu_string(
    project: Path, accelerator: str | list[str] | None, gpu: object
) -> None:
    """None, one shape (exact with !), or the fallbacks in order of preference."""
    request = ResourceRequest(accelerator=parse_accelerators(accelerator) if accelerator else None)
    planned = _request(project, request=request)
    assert planned.function.gpu == gpu
    keywords = planned.function.keywords()
    assert keywords["gpu"] == (list(gpu) if isinstance(gpu, tuple) else gpu)
    assert keywords["serialized"] is True


def test_without_a_request_the_specs_accelerator_cpu_and_memory_are_used(project: Path) -> None:
    """The spec's resources: gpu KIND:COUNT, cpu in cores (a float), memory in MiB."""
    resources = Resources(accelerator=Accelerator(kind="L4", count=2), cpu=3.5, memory_mib=16384)
    function = _request(project, _spec(resources=resources)).function
    assert (function.gpu, function.cpu, function.memory) == ("L4:2", 3.5, 16384)
    assert isinstance(function.cpu, float)


def test_a_cpu_request_gives_the_per_node_cores(project: Path) -> None:
    """``cpu = 8`` asks Modal for 8.0 physical cores."""
    request = ResourceRequest(cpu=CpuRequest(per_node=8), memory_mib=2048)
    function = _request(project, request=request).function
    assert (function.cpu, function.memory, function.gpu) == (8.0, 2048, None)


@pytest.mark.parametrize(
    ("seconds", "timeout"), [(0.2, 1), (1800.0, 1800), (1800.2, 1801), (86400.0, 86400)]
)
def test_the_timeout_is_rounded_up_to_whole_seconds(
    project: Path, seconds: float, timeout: int
) -> None:
    """Modal takes whole seconds: the job's timeout, rounded up."""
    assert _request(project, _spec(timeout_seconds=seconds)).function.timeout == timeout


def test_a_timeout_beyond_a_day_is_refused_before_submitting(project: Path) -> None:
    """Modal's limit is 24 h; the message names the job, the value and the limit."""
    with pytest.raises(
        ConfigError, match=r"job 'train' timeout_seconds 86400.5 .*86400 s \(24 h\)"
    ):
        _request(project, _spec(timeout_seconds=86400.5))


def test_more_gpus_than_one_container_has_are_refused(project: Path) -> None:
    """Modal runs a function on one container: 16 H100s (two nodes) are refused."""
    request = ResourceRequest(accelerator=parse_accelerators("H100:16"))
    with pytest.raises(ConfigError, match="needs 2 nodes"):
        _request(project, request=request)


def test_mounts_map_to_their_volumes_and_read_only_is_kept(project: Path) -> None:
    """Outputs at /outputs, each mount at its path on its Volume, read-only as the job says."""
    spec = _spec(
        mounts=(
            Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),
            Mount(name="scratch", path="/scratch", access=MountAccess.READ_WRITE),
        )
    )
    settings = ModalSettings(outputs_volume="runs", volumes={"datasets": "ds", "scratch": "tmp"})
    volumes = _request(project, spec, settings=settings).volumes
    assert [(v.path, v.volume, v.read_only, v.mount, v.create_if_missing) for v in volumes] == [
        ("/outputs", "runs", False, None, True),
        ("/data", "ds", True, "datasets", False),
        ("/scratch", "tmp", False, "scratch", True),
    ]


def test_a_mount_without_a_volume_is_refused_naming_it(project: Path) -> None:
    """The message names the job, the mount, the table and what to add."""
    spec = _spec(mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),))
    with pytest.raises(ConfigError) as refused:
        _request(project, spec)
    message = str(refused.value)
    assert "[tool.substrax.compute.backends.modal] volumes" in message
    assert "'datasets'" in message
    assert 'volumes = { datasets = "VOLUME" }' in message


def test_a_mount_on_a_path_the_backend_uses_is_refused(project: Path) -> None:
    """A mount at /outputs (or under /project) would hide the run's own files."""
    settings = ModalSettings(outputs_volume="runs", volumes={"o": "other"})
    for path in ("/outputs", "/project/data"):
        spec = _spec(mounts=(Mount(name="o", path=path, access=MountAccess.READ_WRITE),))
        with pytest.raises(ConfigError, match=r"uses /(outputs|project) itself"):
            _request(project, spec, settings=settings)


def test_the_app_is_named_for_the_project_and_job_in_modals_characters(tmp_path: Path) -> None:
    """Spaces and other characters Modal refuses become dashes; at most 64 characters."""
    assert app_name(tmp_path / "my project", "train") == "my-project-train"
    assert len(app_name(tmp_path / ("x" * 80), "train")) == 64


def test_the_plan_json_names_the_layers_options_and_volumes(project: Path) -> None:
    """What ``x-tui plan --json`` prints for a run."""
    shown = _request(project).to_json()
    assert shown["app"] == "my-project-train"
    assert [layer["method"] for layer in shown["image"]] == [
        "debian_slim",
        "uv_sync",
        "add_local_dir",
        "run_commands",
        "add_local_file",
    ]
    assert shown["function"] == {
        "gpu": None,
        "cpu": None,
        "memory": None,
        "timeout": 1800,
        "serialized": True,
    }
    assert shown["volumes"] == {
        "/outputs": {"volume": "runs", "read_only": False, "mount": None, "create_if_missing": True}
    }
