"""The bridge against the real SkyPilot 0.14.1, installed in a tool environment of its own.

Every SDK call ``sky_sdk.py`` makes (read from its source) binds to the real signature, and the
fake's signatures are the real ones; every ``JobStatus`` and request status the backend reads is
one SkyPilot has; the tasks x-tui builds are accepted by SkyPilot's own task reader; the bridge's
offline operations answer from the real interpreter; and with no cloud enabled the real SkyPilot
gives the one line the user sees. SkyPilot is installed once, outside the test run, by
``scripts/install_skypilot.sh`` (``.ci/run`` runs it); where it is not installed the tests that
need it skip, saying so.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import free_port, listenable
from x_tui.backends.skypilot import sky_sdk
from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.bridge import SCRIPT, Bridge, ClusterGone, bridge_pids, close_bridges
from x_tui.backends.skypilot.catalog import read_offers
from x_tui.backends.skypilot.reconcile import JOB_STATES
from x_tui.compute.extensions import CpuRequest, JobExtensions, ResourceRequest
from x_tui.compute.resources import parse_accelerators
from x_tui.compute.secrets import SecretsRequest
from x_tui.compute.worker.errors import BackendUnavailableError
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec, Mount, MountAccess, Task

from .fake_sky.harness import SkyTool, make_locked_project

VERSION = "0.14.1"

INSPECT = """
import importlib, inspect, json, os, sys
uses = json.loads(sys.argv[1])
found = {"binds": {}, "parameters": {}}
for name, use in uses.items():
    module, _, attribute = name.rpartition(".")
    target = importlib.import_module(module)
    for part in attribute.split("/"):
        target = getattr(target, part)
    signature = inspect.signature(target)
    found["parameters"][name] = list(signature.parameters)
    try:
        signature.bind(*[None] * use["positional"], **{key: None for key in use["keywords"]})
        found["binds"][name] = True
    except TypeError as error:
        found["binds"][name] = str(error)
import sky, sky.exceptions
found["version"] = sky.__version__
found["job_status"] = [member.name for member in sky.JobStatus]
if sys.argv[4] == "signatures":
    print(json.dumps(found))
    sys.exit(0)
requests = importlib.import_module("sky.server.requests.requests")
found["request_status"] = [member.value for member in requests.RequestStatus]
payloads = importlib.import_module("sky.server.requests.payloads")
found["request_fields"] = list(payloads.RequestPayload.model_fields)
responses = importlib.import_module("sky.schemas.api.responses")
found["job_fields"] = list(responses.ClusterJobRecord.model_fields)
found["exceptions"] = {
    name: [base.__name__ for base in getattr(sky.exceptions, name).__mro__]
    for name in json.loads(sys.argv[2])
}
found["names"] = [name for name in json.loads(sys.argv[3]) if not hasattr(sky, name)]
catalog = importlib.import_module("sky.catalog.common").get_catalog_path("aws/vms.csv")
found["catalog"] = os.path.relpath(catalog, os.path.expanduser("~"))
print(json.dumps(found))
"""


def sdk_uses() -> dict[str, dict[str, Any]]:
    """Each SDK call in sky_sdk.py: ``module.function`` and the arguments it passes."""
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    roots = {
        "sky": "sky",
        "sdk": "sky.client.sdk",
        "server_common": "sky.server.common",
        "user_state": "sky.global_user_state",
    }
    uses: dict[str, dict[str, Any]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        parts: list[str] = []
        target: ast.expr = node.func
        while isinstance(target, ast.Attribute):
            parts.insert(0, target.attr)
            target = target.value
        if not isinstance(target, ast.Name) or target.id not in roots:
            continue
        name = f"{roots[target.id]}.{'/'.join(parts)}"
        use = uses.setdefault(name, {"positional": 0, "keywords": []})
        use["positional"] = max(use["positional"], len(node.args))
        use["keywords"] = sorted({*use["keywords"], *(k.arg for k in node.keywords if k.arg)})
    return uses


def exceptions_used() -> list[str]:
    """The ``sky.exceptions`` names sky_sdk.py looks up."""
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    return sorted(
        {
            node.args[1].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "exceptions"
            and isinstance(node.args[1], ast.Constant)
        }
    )


def skypilot_home() -> Path:
    """Where ``scripts/install_skypilot.sh`` installs the real SkyPilot."""
    base = os.environ.get("X_TUI_SKYPILOT_HOME") or str(Path.home() / ".cache" / "x-tui-tests")
    return Path(base) / f"skypilot-{VERSION}"


@pytest.fixture(scope="session")
def real_sky() -> Path:
    """The real SkyPilot's interpreter, which ``scripts/install_skypilot.sh`` installed.

    The test run never installs it (that needs the network): ``.ci/run`` runs the script first;
    where it has not run, or failed, the tests skip, saying so.
    """
    python = skypilot_home() / "tools" / "skypilot" / "bin" / "python"
    if not python.exists():
        pytest.skip(
            f"the real SkyPilot {VERSION} is not installed in {python.parent.parent}: "
            "run scripts/install_skypilot.sh (CI does)"
        )
    # The installed version, from its metadata: importing SkyPilot takes seconds of CPU, and the
    # tests import it anyway (a broken install fails them, saying why).
    check = [
        str(python),
        "-I",
        "-c",
        "from importlib.metadata import version as v; print(v('skypilot'))",
    ]
    done = subprocess.run(check, capture_output=True, text=True, check=False)
    if done.stdout.strip() != VERSION:
        pytest.skip(
            f"{python} does not have SkyPilot {VERSION} ({done.stderr.strip()[-300:]}): "
            "run scripts/install_skypilot.sh again"
        )
    return python


@pytest.fixture
def sky_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of its own, so SkyPilot's ~/.sky is the test's; usage collection off."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKYPILOT_DISABLE_USAGE_COLLECTION", "1")
    return home


def inspect_in(python: Path, *, what: str = "everything") -> dict[str, Any]:
    done = subprocess.run(
        [
            str(python),
            "-c",
            INSPECT,
            json.dumps(sdk_uses()),
            json.dumps(exceptions_used()),
            json.dumps(list(sky_sdk.SDK_NAMES)),
            what,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def real(real_sky: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("inspect-home")
    os.environ["HOME"], old = str(home), os.environ["HOME"]
    try:
        return inspect_in(real_sky)
    finally:
        os.environ["HOME"] = old


@pytest.mark.slow
def test_every_sdk_call_of_the_bridge_binds_to_skypilots_signature(real: dict[str, Any]) -> None:
    assert real["version"] == VERSION
    uses = sdk_uses()
    assert {"sky.launch", "sky.tail_logs", "sky.api_status", "sky.client.sdk.check"} <= set(uses)
    assert {
        "sky.server.common.is_api_server_local",
        "sky.server.common.check_server_healthy_or_start_fn",
        "sky.global_user_state.get_clusters",
    } <= set(uses)
    assert real["binds"] == dict.fromkeys(uses, True)
    assert real["names"] == []


def test_the_fakes_signatures_are_skypilots(real: dict[str, Any], sky_tool: SkyTool) -> None:
    fake = inspect_in(sky_tool.python, what="signatures")
    assert fake["binds"] == real["binds"]
    assert fake["parameters"] == real["parameters"]
    assert fake["job_status"] == real["job_status"]


def test_every_job_status_skypilot_reports_is_mapped(real: dict[str, Any]) -> None:
    assert sorted(JOB_STATES) == sorted(real["job_status"])


def test_the_request_statuses_and_fields_the_bridge_reads_exist(real: dict[str, Any]) -> None:
    assert {"PENDING", "WAITING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"} == set(
        real["request_status"]
    )
    assert {"request_id", "name", "status", "cluster_name", "created_at"} <= set(
        real["request_fields"]
    )
    assert {"job_id", "status"} <= set(real["job_fields"])


def test_the_exceptions_the_bridge_classifies_exist(real: dict[str, Any]) -> None:
    assert set(real["exceptions"]) == {
        "ClusterDoesNotExist",
        "NoCloudAccessError",
        "RequestCancelled",
    }
    assert "ValueError" in real["exceptions"]["ClusterDoesNotExist"]


def planned_tasks(tmp_path: Path) -> list[dict[str, JsonValue]]:
    project = make_locked_project(tmp_path / "project", {})
    data = tmp_path / "data"
    data.mkdir()
    spec = JobSpec(
        name="train",
        tasks=(Task(name="fit", argv=("python", "fit.py"), timeout_seconds=60.0),),
        timeout_seconds=120.0,
        extras=("cuda12",),
        mounts=(Mount(name="data", path="/data", access=MountAccess.READ_ONLY),),
    )
    bucket = SkyPilotBackend(
        {
            "infra": "gcp/us-central1",
            "use_spot": True,
            "bucket": {"outputs_bucket": "gs://runs", "buckets": {"data": "s3://datasets"}},
        }
    )
    copy = SkyPilotBackend(
        {"infra": "runpod", "copy": {"sources": {"data": str(data)}, "network_isolation": True}}
    )
    several = ResourceRequest(
        accelerator=parse_accelerators(["H100:16", "A100-80GB:16"]),
        cpu=CpuRequest(per_node=8),
        memory_mib=65536,
    )
    one = ResourceRequest(accelerator=parse_accelerators("L4"))
    named = JobExtensions(secrets=SecretsRequest(platform=("hf-token",)))
    tasks = []
    for backend, request in ((bucket, several), (copy, one)):
        task = backend.plan(spec, project=project, request=request, extensions=named)["task"]
        assert isinstance(task, dict)
        tasks.append(task)
    return tasks


READ_TASKS = """
import json, sys, sky
for config in json.loads(sys.stdin.read()):
    task = sky.Task.from_yaml_config(config)
    resources = sorted(task.resources, key=str)
    print(json.dumps({
        "num_nodes": task.num_nodes,
        "resources": [
            [str(r.cloud), r.accelerators, r.cpus, r.memory, r.use_spot, r.disk_size]
            for r in resources
        ],
        "mounts": sorted(task.file_mounts or {}),
        "storage": sorted(task.storage_mounts or {}),
        "secrets": sorted(task.secrets or {}),
        "managed_secrets": sorted(ref.name for ref in task._managed_secret_refs),
    }))
"""


@pytest.mark.slow
def test_skypilot_reads_the_tasks_x_tui_builds(
    real_sky: Path, sky_home: Path, tmp_path: Path
) -> None:
    tasks = planned_tasks(tmp_path)
    tasks[1]["secrets"] = {"WANDB_API_KEY": "value"}  # as the bridge adds them at launch
    done = subprocess.run(
        [str(real_sky), "-c", READ_TASKS],
        input=json.dumps(tasks),
        capture_output=True,
        text=True,
        check=True,
    )
    bucket, copy = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    assert bucket["num_nodes"] == 2
    assert bucket["resources"] == [
        ["GCP", {"A100-80GB": 8}, "8+", "64.0+", True, 256],  # SkyPilot's default disk
        ["GCP", {"H100": 8}, "8+", "64.0+", True, 256],
    ]
    assert bucket["storage"] == ["/data", "/outputs"]
    assert copy["num_nodes"] == 1
    assert copy["resources"] == [["RunPod", {"L4": 1}, None, None, False, 60]]
    assert "/data" in copy["mounts"]
    assert copy["secrets"] == ["WANDB_API_KEY"]
    # Secrets named on SkyPilot's side are managed secret references, with inline ones too.
    assert bucket["managed_secrets"] == ["hf-token"]
    assert copy["managed_secrets"] == ["hf-token"]


def test_the_bridge_answers_offline_from_the_real_interpreter(
    real_sky: Path, sky_home: Path
) -> None:
    bridge = Bridge(sky="sky", sky_python=str(real_sky))
    probe = bridge.call("probe", {}, what="probing")
    assert probe == {"version": VERSION, "missing": []}
    path = bridge.call("ssh_config", {"cluster": "sx-a"}, what="finding an SSH config")
    assert path == str(sky_home / ".sky" / "generated" / "ssh" / "sx-a")


@pytest.mark.slow
def test_the_catalog_is_read_from_skypilots_cache_without_the_network(
    real: dict[str, Any], real_sky: Path, sky_home: Path
) -> None:
    # Where SkyPilot keeps its AWS catalog, under its HOME (asked of SkyPilot in ``real``).
    assert not Path(real["catalog"]).is_absolute()
    assert not real["catalog"].startswith("..")
    csv = sky_home / real["catalog"]
    csv.parent.mkdir(parents=True)
    csv.write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
        "Region,AvailabilityZone\n"
        "p5.48xlarge,H100,8.0,192.0,2048.0,,98.32,40.0,us-east-1,us-east-1a\n"
    )
    bridge = Bridge(sky="sky", sky_python=str(real_sky))
    offers = read_offers(bridge.call("catalog", {"clouds": None}, what="reading the catalogs"))
    assert [(o.cloud, o.accelerator, o.count, o.price) for o in offers] == [
        ("aws", "H100", 8.0, 98.32)
    ]


def queue_port(api_port: int) -> int:
    """The port SkyPilot 0.14.1's API server on ``api_port`` gives its request queue.

    ``sky.server.requests.queues.mp_queue.get_queue_manager_port``: it moves with the API port, in
    [50000, 60000). Where it is taken the server exits at once ("process exited unexpectedly").
    """
    return 50000 + (11 + api_port - 46580) % 10000


def api_port() -> int:
    """An API port below the kernel's ephemeral range whose queue port is free as well.

    Below that range no outgoing connection takes it; the queue port lies in the ephemeral range
    whatever the API port, so it is checked, and a start that loses it anyway is tried again.
    """
    return free_port(lambda port: listenable(port) and listenable(queue_port(port)))


def server_log_errors(home: Path) -> str:
    """The error lines of the server's log (its last 64 KiB), or its last lines."""
    log = home / ".sky" / "api_server" / "server.log"
    if not log.exists():
        return "no server log"
    with log.open("rb") as file:
        file.seek(max(0, log.stat().st_size - 65536))
        lines = file.read().decode(errors="replace").splitlines()
    errors = [line for line in lines if "Error" in line or "ERROR" in line] or lines[-3:]
    return " | ".join(line.strip() for line in errors[-3:])


@pytest.fixture(scope="module")
def api_server(real_sky: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """SkyPilot's API server on ports of its own, in a HOME of its own, for this module's tests.

    It is started here (``sky api start``) rather than by the first call, so that a start that
    loses a port to another process of the machine is tried again on other ports; the third
    failure fails the test with the server's own error lines. It is stopped afterwards. Its HOME
    is the answer.
    """
    home = tmp_path_factory.mktemp("api-server-home")
    sky = str(real_sky.parent / "sky")
    failures: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("SKYPILOT_DISABLE_USAGE_COLLECTION", "1")
        for _ in range(3):
            port = api_port()
            patch.setenv("SKYPILOT_API_SERVER_LOCAL_PORT", str(port))
            start = subprocess.run(
                [sky, "api", "start"], capture_output=True, text=True, timeout=180, check=False
            )
            if start.returncode == 0:
                break
            failures.append(f"port {port}/{queue_port(port)}: {server_log_errors(home)}")
        else:
            pytest.fail("SkyPilot's API server did not start: " + "; ".join(failures))
        try:
            yield home
        finally:
            subprocess.run([sky, "api", "stop"], capture_output=True, timeout=120, check=False)


@pytest.mark.slow
def test_the_real_api_server_answers_the_bridges_launch_and_queue_questions(
    real_sky: Path, api_server: Path
) -> None:
    close_bridges()  # the bridges an earlier test of this worker left are not this test's
    bridge = Bridge(sky="sky", sky_python=str(real_sky))
    answer = bridge.call("launch_state", {"cluster": "sx-none", "request_id": None}, what="asking")
    assert answer == {"state": "unknown", "request_id": None, "cluster_exists": False}
    answer = bridge.call(
        "launch_state", {"cluster": "sx-none", "request_id": "0123456789abcdef"}, what="asking"
    )
    assert answer == {"state": "unknown", "request_id": None, "cluster_exists": False}
    with pytest.raises(
        ClusterGone, match=r"^ClusterDoesNotExist: Cluster 'sx-none' does not exist"
    ):
        bridge.call("queue", {"cluster": "sx-none"}, what="reading the queue of sx-none")
    with pytest.raises(ClusterGone):
        bridge.call("down", {"cluster": "sx-none"}, what="tearing down sx-none")
    runs: list[JsonValue] = [
        {"cluster": "sx-none", "request_id": None, "launched": False},
        {"cluster": "sx-gone", "request_id": "0123456789abcdef", "launched": False},
        {"cluster": "sx-done", "request_id": None, "launched": True},
    ]
    unknown = {"state": "unknown", "request_id": None, "cluster_exists": False}
    assert bridge.call("poll", {"runs": runs}, what="polling") == {
        "sx-none": {"launch": unknown, "queue": None, "error": None, "cluster_status": None},
        "sx-gone": {"launch": unknown, "queue": None, "error": None, "cluster_status": None},
        "sx-done": {"launch": None, "queue": None, "error": None, "cluster_status": None},
    }
    assert len(bridge_pids()) == 1  # every answer came from one interpreter


@pytest.mark.slow
def test_with_no_cloud_enabled_the_real_skypilot_refuses_the_launch_in_one_line(
    real_sky: Path, api_server: Path, tmp_path: Path
) -> None:
    bridge = Bridge(sky="sky", sky_python=str(real_sky))
    task: dict[str, JsonValue] = {"name": "sx-none", "run": "echo hi"}
    with pytest.raises(BackendUnavailableError) as refused:
        bridge.launch(
            {
                "task": task,
                "cluster": "sx-none",
                "down": True,
                "idle_minutes": None,
                "record": str(tmp_path / "request.json"),
                "cloud": None,
            },
            log=tmp_path / "launch.log",
            what="launching sx-none",
        )
    assert str(refused.value) == "SkyPilot has no cloud enabled; run `sky check` to see why"
    assert not (tmp_path / "request.json").exists()
