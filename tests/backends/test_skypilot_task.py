"""The SkyPilot task a run launches (what ``plan`` prints and ``submit`` writes), offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.task import cluster_name
from x_tui.compute.backend import Capability, capabilities_of
from x_tui.compute.dependencies import Dependencies
from x_tui.compute.extensions import CpuRequest, JobExtensions, ResourceRequest
from x_tui.compute.resources import parse_accelerators
from x_tui.compute.retries import RetryPolicy
from x_tui.compute.secrets import SecretsRequest
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec, Mount, MountAccess, Resources, Task

from .fake_sky.harness import make_locked_project

BUCKET: dict[str, JsonValue] = {
    "sky": "no-such-sky-command",
    "bucket": {"outputs_bucket": "s3://runs", "buckets": {"data": "gs://datasets/v2"}},
}


def job(*, mounts: tuple[Mount, ...] = (), extras: tuple[str, ...] = ()) -> JobSpec:
    return JobSpec(
        name="train",
        tasks=(Task(name="fit", argv=("python", "fit.py"), timeout_seconds=60.0),),
        timeout_seconds=120.0,
        mounts=mounts,
        extras=extras,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_locked_project(tmp_path / "project", {})


def plan(
    settings: dict[str, JsonValue],
    project: Path,
    spec: JobSpec | None = None,
    request: ResourceRequest | None = None,
) -> dict[str, JsonValue]:
    planned = SkyPilotBackend(settings).plan(spec or job(), project=project, request=request)
    return dict(planned)


def task_of(planned: dict[str, JsonValue]) -> dict[str, JsonValue]:
    task = planned["task"]
    assert isinstance(task, dict)
    return task


def test_the_cluster_is_named_from_the_run_id_as_substrax_names_it() -> None:
    named = cluster_name("examples-20260919T120000Z-3f9a1c")
    assert named == "sx-examples-20260919t120000z-3f9a1c"
    named = cluster_name("my_job.v2-20260919T120000Z-3f9a1c")
    assert named == "sx-my-job-v2-20260919t120000z-3f9a1c"


def test_resources_map_as_the_seed_says(project: Path) -> None:
    request = ResourceRequest(
        accelerator=parse_accelerators("L4"), cpu=CpuRequest(per_node=8), memory_mib=32768
    )
    settings = {**BUCKET, "infra": "gcp/us-central1", "use_spot": True}
    task = task_of(plan(settings, project, request=request))
    assert task["resources"] == {
        "use_spot": True,
        "accelerators": "L4:1",
        "cpus": "8+",
        "memory": "32768MB+",
        "infra": "gcp/us-central1",
    }
    assert "num_nodes" not in task


def test_accelerator_alternatives_are_tried_in_order(project: Path) -> None:
    request = ResourceRequest(accelerator=parse_accelerators(["H100:8", "A100-80GB:8"]))
    resources = task_of(plan(BUCKET, project, request=request))["resources"]
    assert isinstance(resources, dict)
    assert resources["accelerators"] == ["H100:8", "A100-80GB:8"]


def test_a_shape_of_several_nodes_asks_for_each_nodes_share_and_places_outputs_by_rank(
    project: Path,
) -> None:
    request = ResourceRequest(accelerator=parse_accelerators("H100:16"))
    task = task_of(plan(BUCKET, project, request=request))
    assert task["num_nodes"] == 2
    resources = task["resources"]
    assert isinstance(resources, dict)
    assert resources["accelerators"] == "H100:8"
    assert 'OUTPUTS="$OUTPUTS/nodes/$SKYPILOT_NODE_RANK"' in str(task["run"])


def test_without_a_request_the_specs_resources_are_used(project: Path) -> None:
    spec = JobSpec(
        name="train",
        tasks=job().tasks,
        timeout_seconds=120.0,
        resources=Resources(cpu=0.5),
    )
    resources = task_of(plan(BUCKET, project, spec))["resources"]
    assert resources == {"use_spot": False, "cpus": "0.5+"}


def test_the_task_syncs_the_project_and_its_locked_environment_then_runs_the_worker(
    project: Path,
) -> None:
    settings = {
        **BUCKET,
        "setup_commands": ["sudo apt-get install -y libfoo"],
        "worker_python": "uv run --no-sync python -X dev",
    }
    planned = plan(settings, project, job(extras=("cuda12", "odd extra")))
    task = task_of(planned)
    run_id = str(planned["run_id"]).split()[0]
    assert task["name"] == planned["cluster"] == cluster_name(run_id)
    assert task["workdir"] == str(project.resolve())
    setup = str(task["setup"]).split("\n")
    assert setup[0] == "set -e"
    assert setup[1] == "sudo apt-get install -y libfoo"
    assert setup.index("sudo apt-get install -y libfoo") < setup.index(
        "uv sync --frozen --extra cuda12 --extra 'odd extra'"
    )
    run = str(task["run"])
    assert f'OUTPUTS="/outputs/{run_id}"' in run
    assert (
        f'uv run --no-sync python -X dev "$HOME/.x-tui/{run_id}/worker.pyz"'
        f' --spec "$HOME/.x-tui/{run_id}/spec.json" --project . --outputs "$OUTPUTS"'
    ) in run
    mounts = task["file_mounts"]
    assert isinstance(mounts, dict)
    assert mounts[f"~/.x-tui/{run_id}/spec.json"] == str(
        Path(SkyPilotBackend(BUCKET).runs / run_id / "spec.json")
    )
    assert f"~/.x-tui/{run_id}/worker.pyz" in mounts


def test_the_bucket_transport_mounts_the_outputs_and_each_inputs_bucket(project: Path) -> None:
    spec = job(mounts=(Mount(name="data", path="/data", access=MountAccess.READ_ONLY),))
    planned = plan(BUCKET, project, spec)
    mounts = task_of(planned)["file_mounts"]
    assert isinstance(mounts, dict)
    assert mounts["/outputs"] == {"source": "s3://runs", "mode": "MOUNT"}
    assert mounts["/data"] == {"source": "gs://datasets/v2", "mode": "MOUNT"}
    assert planned["launch"] == {"down": True, "idle_minutes_to_autostop": None}
    assert planned["transport"] == "bucket"


def test_a_mount_without_a_bucket_is_refused_naming_it(project: Path) -> None:
    spec = job(mounts=(Mount(name="weights", path="/w", access=MountAccess.READ_ONLY),))
    with pytest.raises(ConfigError, match=r"mounts 'weights' at /w.*buckets has no bucket"):
        plan(BUCKET, project, spec)


def test_the_copy_transport_asks_for_disk_and_autostop_and_copies_inputs(
    project: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    settings: dict[str, JsonValue] = {
        "sky": "no-such-sky-command",
        "copy": {"sources": {"data": str(data)}, "disk_size": 200, "lifetime_minutes": 15},
    }
    spec = job(mounts=(Mount(name="data", path="/data", access=MountAccess.READ_ONLY),))
    planned = plan(settings, project, spec)
    task = task_of(planned)
    resources = task["resources"]
    assert isinstance(resources, dict)
    assert resources["disk_size"] == 200
    assert resources["autostop"] == {"idle_minutes": 15, "down": True}
    mounts = task["file_mounts"]
    assert isinstance(mounts, dict)
    assert mounts["/data"] == str(data)
    assert "/outputs" not in mounts
    assert planned["launch"] == {"down": True, "idle_minutes_to_autostop": 15}
    run = str(task["run"])
    assert "bwrap --die-with-parent --ro-bind / /" in run
    assert '--bind "$OUTPUTS" "$OUTPUTS"' in run
    assert "--unshare-net" not in run
    assert "command -v bwrap" in str(task["setup"])


def test_network_isolation_runs_the_worker_without_network(project: Path) -> None:
    settings: dict[str, JsonValue] = {"copy": {"network_isolation": True}}
    assert "--unshare-net" in str(task_of(plan(settings, project))["run"])


@pytest.mark.parametrize(
    ("access", "sources", "says"),
    [
        (MountAccess.READ_WRITE, {"data": "/"}, "cannot write them back"),
        (MountAccess.READ_ONLY, {}, "sources has no local directory for it"),
        (MountAccess.READ_ONLY, {"data": "/no/such/dir"}, "is not a directory"),
    ],
)
def test_the_copy_transport_refuses_what_a_copy_cannot_carry(
    project: Path, access: MountAccess, sources: dict[str, JsonValue], says: str
) -> None:
    spec = job(mounts=(Mount(name="data", path="/data", access=access),))
    with pytest.raises(ConfigError, match=says):
        plan({"copy": {"sources": sources}}, project, spec)


def test_the_copy_transport_refuses_several_nodes(project: Path) -> None:
    request = ResourceRequest(accelerator=parse_accelerators("H100:16"))
    with pytest.raises(ConfigError, match=r"needs 2 nodes.*bucket transport"):
        plan({"copy": {}}, project, request=request)


def test_a_project_without_uv_lock_is_refused_before_anything_is_staged(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(ConfigError, match=r"has no uv.lock; run `uv lock` there"):
        plan(BUCKET, bare)


def test_without_skypilot_the_plan_says_why_it_has_no_cost(project: Path) -> None:
    request = ResourceRequest(accelerator=parse_accelerators("H100:8"))
    cost = plan(BUCKET, project, request=request)["cost"]
    assert isinstance(cost, str)
    assert cost.startswith("no estimate: SkyPilot is not installed here")
    assert 'uv tool install "skypilot[<cloud>]"' in cost


def test_its_abilities_are_declared() -> None:
    assert capabilities_of(SkyPilotBackend(BUCKET)) == {
        Capability.PLAN,
        Capability.PEEK,
        Capability.REQUEST,
        Capability.ACCELERATORS,
        Capability.EXTENSIONS,
        Capability.TEARDOWN,
        Capability.LAUNCH,
        Capability.STATUSES,
    }


def test_dependencies_are_installed_in_setup_around_the_locked_environment(project: Path) -> None:
    extensions = JobExtensions(
        dependencies=Dependencies(
            python=("torch==2.7.1",), apt=("ffmpeg", "libgl1"), post_install=("make data",)
        )
    )
    planned = SkyPilotBackend(BUCKET).plan(job(), project=project, extensions=extensions)
    setup = str(task_of(dict(planned))["setup"]).split("\n")
    apt = setup.index("DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y ffmpeg libgl1")
    sync = setup.index("uv sync --frozen")
    pip = setup.index("uv pip install torch==2.7.1")
    assert setup[0] == "set -e"
    assert apt < sync < pip < setup.index("make data")


def test_retries_reach_the_worker_and_secrets_are_named_never_valued(project: Path) -> None:
    extensions = JobExtensions(
        retries=RetryPolicy(default=2), secrets=SecretsRequest(env=("WANDB_API_KEY",))
    )
    planned = dict(SkyPilotBackend(BUCKET).plan(job(), project=project, extensions=extensions))
    run_id = str(planned["run_id"]).split()[0]
    task = task_of(planned)
    assert f'--retries "$HOME/.x-tui/{run_id}/retries.json"' in str(task["run"])
    mounts = task["file_mounts"]
    assert isinstance(mounts, dict)
    assert f"~/.x-tui/{run_id}/retries.json" in mounts
    assert planned["secrets"] == ["WANDB_API_KEY"]
    assert "secrets" not in task


def test_skypilot_side_secrets_are_named_as_the_tasks_managed_secrets(project: Path) -> None:
    extensions = JobExtensions(secrets=SecretsRequest(platform=("hf-token", "workspace.wandb")))
    planned = dict(SkyPilotBackend(BUCKET).plan(job(), project=project, extensions=extensions))
    task = task_of(planned)
    assert task["managed_secrets"] == ["hf-token", "workspace.wandb"]
    assert "secrets" not in task
