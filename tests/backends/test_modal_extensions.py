"""x-tui's job extensions on the modal backend, through ``operations`` as the CLI and TUI use it.

Dependencies become image layers after the locked dependencies; secrets reach the task's
environment through ``modal.Secret`` and no file anywhere holds their values; retries run a failed
task again in the container; accelerator alternatives reach Modal's ``gpu``; an accelerator Modal
does not offer is refused before anything is built. All against the fake ``modal``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.cli.plan_text import plan_json
from x_tui.compute.backend import RunState
from x_tui.compute.extensions import ResourceRequest
from x_tui.compute.operations import backend_for, open_project, plan_run, submit_run
from x_tui.compute.resources import ResourceError, parse_accelerators
from x_tui.compute.retries import ATTEMPTS_NAME, parse_attempts
from x_tui.compute.store import RunStore
from x_tui.compute.worker.errors import ProviderError
from x_tui.compute.worker.spec import JobSpec, Task
from x_tui.testing.contract import wait_until_final

from .fake_modal import fixtures as modal_fixtures
from .fake_modal.harness import PYPROJECT, FakeModal

fake = modal_fixtures.fake_modal

SECRET = f"xt-{secrets.token_hex(12)}-shell-value"
"""A value captured from the submitting shell, which no file has any business holding."""
VAULT = f"xt-{secrets.token_hex(12)}-vault-value"
"""A value of a Modal Secret kept by the (fake) service."""


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


CHECK = (
    "import hashlib, os, pathlib;"
    "sha = lambda name: hashlib.sha256(os.environ.get(name, '').encode()).hexdigest();"
    "same = sha('API_KEY') == os.environ['EXPECTED_SHA'];"
    "vault = sha('VAULT_TOKEN') == os.environ['EXPECTED_VAULT_SHA'];"
    "print('the key arrived:', same, 'the vault arrived:', vault, flush=True);"
    "print('optional one set:', 'XT_MAYBE' in os.environ, flush=True);"
    "pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'], 'report.txt').write_text(f'{same} {vault}')"
)

FLAKY = """\
import pathlib
import sys

counter = pathlib.Path("flaky.count")
number = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(number))
print(f"attempt number {number}", flush=True)
if number < 3:
    print(f"failing on attempt {number}", file=sys.stderr, flush=True)
    sys.exit(7)
print("finally worked", flush=True)
"""

JOBS = f"""
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "runs"
state_dir = "STATE"

[tool.substrax.compute.jobs.keyed]
timeout_seconds = 300
env = {{ EXPECTED_SHA = "{_sha(SECRET)}", EXPECTED_VAULT_SHA = "{_sha(VAULT)}" }}
commands = {{ check = ["python", "-c", {json.dumps(CHECK)}] }}
dependencies = {{ apt = ["ffmpeg"], python = ["rich==13.7.1"], post_install = ["echo ready"] }}

[tool.substrax.compute.jobs.keyed.secrets]
env = ["XT_API_KEY"]
optional_env = ["XT_MAYBE"]
env_mapping = {{ XT_API_KEY = "API_KEY" }}
platform = ["team-vault"]

[tool.substrax.compute.jobs.flaky]
timeout_seconds = 300
retries = 2
commands = {{ flaky = ["python", "flaky.py"] }}

[tool.substrax.compute.jobs.hello]
timeout_seconds = 300
resources = {{ accelerator = "L4" }}
commands = {{ greet = ["python", "-c", "print('hello', flush=True)"] }}

[tool.substrax.compute.jobs.vaultless]
timeout_seconds = 300
secrets = {{ platform = ["absent"] }}
commands = {{ greet = ["python", "-c", "pass"] }}
"""


@pytest.fixture
def project(tmp_path: Path, fake: FakeModal) -> Path:
    """A packaged project whose default backend is modal, with the jobs above."""
    root = tmp_path / "project"
    root.mkdir()
    state = tmp_path / "modal-state"
    (root / "pyproject.toml").write_text(PYPROJECT + JOBS.replace("STATE", str(state)))
    (root / "flaky.py").write_text(FLAKY)
    return root


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    """Where the runs' handles are kept."""
    return RunStore(tmp_path / "handles")


def _keep_in_vault(fake: FakeModal) -> Path:
    """Make the Modal Secret ``team-vault`` in the fake's store, as a user would in Modal's."""
    vault = fake.root / "secrets"
    vault.mkdir(exist_ok=True)
    (vault / "team-vault.json").write_text(json.dumps({"VAULT_TOKEN": VAULT}))
    return vault


def _files_holding(value: str, root: Path, *, besides: Path) -> list[Path]:
    needle = value.encode()
    return [
        path
        for path in root.rglob("*")
        if path.is_file()
        and not path.is_symlink()
        and not path.is_relative_to(besides)
        and needle in path.read_bytes()
    ]


def test_dependencies_are_image_layers_after_the_locked_dependencies_in_order(
    project: Path, fake: FakeModal, store: RunStore
) -> None:
    """apt, then pip into the project's environment, then post_install; then the source."""
    plan = plan_run(open_project(project), "keyed")
    assert plan.provider_request is not None
    planned = plan.provider_request["image"]
    assert isinstance(planned, list)
    methods = [
        "debian_slim",
        "uv_sync",
        "apt_install",
        "uv_pip_install",
        "run_commands",
        "add_local_dir",
        "run_commands",
        "add_local_file",
    ]
    assert [step["method"] for step in planned] == methods
    _keep_in_vault(fake)
    handle = submit_run(plan, store=store, environ={"XT_API_KEY": SECRET})
    built = fake.last()["image"]
    assert [step["method"] for step in built] == methods
    assert [step["args"] for step in built[2:5]] == [["ffmpeg"], ["rich==13.7.1"], ["echo ready"]]
    assert built[6]["args"] == [
        "/.uv/uv pip install --python /.uv/.venv/bin/python --no-deps /project"
    ]
    assert wait_until_final(backend_for(handle), handle) is RunState.SUCCEEDED


def test_a_secret_reaches_the_task_and_no_file_anywhere_holds_its_value(
    project: Path, fake: FakeModal, store: RunStore, tmp_path: Path
) -> None:
    """The shell's value (renamed) and a Modal Secret's arrive; no file or plan holds either."""
    vault = _keep_in_vault(fake)
    plan = plan_run(open_project(project), "keyed")
    shown = json.dumps(plan_json(plan)) + repr(plan)
    assert plan.provider_request is not None
    assert plan.provider_request["secrets"] == {
        "from_dict": ["API_KEY", "XT_MAYBE"],
        "from_name": ["team-vault"],
        "how": plan.provider_request["secrets"]["how"],
    }

    handle = submit_run(plan, store=store, environ={"XT_API_KEY": SECRET, "PATH": "/usr/bin"})
    backend = backend_for(handle)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    lines = list(backend.logs(handle, follow=True))
    assert "[check] the key arrived: True the vault arrived: True" in lines
    assert "[check] optional one set: False" in lines
    fetched = backend.fetch(handle, tmp_path / "fetched")
    assert (fetched / "check" / "report.txt").read_text() == "True True"
    # Only the names went to Modal with the function; the values went in Secret objects alone.
    assert fake.last()["function"]["secrets"] == [
        {"from_dict": ["API_KEY"]},
        {"from_name": "team-vault", "environment_name": None},
    ]
    # Every file under this test's directory: the handle, the backend's state, the project, the
    # Volumes, the fake service's payloads and logs, the fetched copy. Only the fake's own Secret
    # store (what a user made in Modal's dashboard) holds the Modal Secret's value.
    for value in (SECRET, VAULT):
        assert _files_holding(value, tmp_path, besides=vault) == []
        assert value not in shown
        assert value not in "\n".join(lines)
        assert value not in json.dumps(dict(handle.details)) + repr(handle)
    assert any(store.root.glob("*.json"))
    assert any((fake.volume("runs") / handle.run_id).rglob("*.log"))


def test_a_modal_secret_that_does_not_exist_refuses_the_run_in_one_line(
    project: Path, fake: FakeModal, store: RunStore
) -> None:
    """Modal's NotFoundError becomes one line naming the Secret and how to create it."""
    plan = plan_run(open_project(project), "vaultless")
    with pytest.raises(ProviderError) as refused:
        submit_run(plan, store=store, environ={})
    message = str(refused.value)
    assert "Secret 'absent' not found" in message
    assert "modal secret create" in message
    assert "\n" not in message
    assert not store.root.exists() or not any(store.root.iterdir())


def test_a_task_failing_twice_then_succeeding_ends_succeeded_after_three_attempts(
    project: Path, fake: FakeModal, store: RunStore
) -> None:
    """``retries = 2`` reaches the worker in the container as ``--retries``."""
    plan = plan_run(open_project(project), "flaky")
    assert plan.provider_request is not None
    assert plan.provider_request["retries"]["table"] == {"flaky": 2}
    handle = submit_run(plan, store=store, environ={})
    backend = backend_for(handle)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    attempts = parse_attempts((fake.volume("runs") / handle.run_id / ATTEMPTS_NAME).read_bytes())
    assert [(a.task, a.attempt, a.status, a.returncode) for a in attempts] == [
        ("flaky", 1, "failed", 7),
        ("flaky", 2, "failed", 7),
        ("flaky", 3, "succeeded", 0),
    ]
    lines = list(backend.logs(handle, follow=True))
    assert "[flaky] x-tui: attempt 3 of 3" in lines
    assert "[flaky] finally worked" in lines
    assert json.loads(fake.module.LAST["spawn"]["kwargs"]["retries_json"]) == {"flaky": 2}


def test_accelerator_alternatives_and_exact_kinds_reach_modals_gpu(
    project: Path, fake: FakeModal, store: RunStore
) -> None:
    """``--accelerator "H100!:2,A100-80GB:2"`` becomes ``gpu=["H100!:2", "A100-80GB:2"]``."""
    plan = plan_run(open_project(project), "hello", accelerator="H100!:2,A100-80GB:2")
    assert plan.provider_request is not None
    assert plan.provider_request["function"]["gpu"] == ["H100!:2", "A100-80GB:2"]
    assert plan.estimate is not None
    assert plan.estimate.lines[0].startswith("H100 x 2 at $3.9492/h")
    handle = submit_run(plan, store=store, environ={})
    assert fake.last()["function"]["gpu"] == ["H100!:2", "A100-80GB:2"]
    assert wait_until_final(backend_for(handle), handle) is RunState.SUCCEEDED


def test_an_accelerator_modal_does_not_offer_is_refused_before_anything_is_built(
    project: Path, fake: FakeModal, tmp_path: Path
) -> None:
    """Refused by ``plan_run`` and by the backend's own ``submit``; the fake saw no call."""
    with pytest.raises(ResourceError, match="accelerator 'TPU-v4': modal does not offer TPU-v4"):
        plan_run(open_project(project), "hello", accelerator="TPU-v4")
    backend = ModalBackend({"outputs_volume": "runs", "state_dir": str(tmp_path / "state")})
    spec = JobSpec(
        name="hello",
        tasks=(Task(name="greet", argv=("python", "-V"), timeout_seconds=60.0),),
        timeout_seconds=120.0,
    )
    with pytest.raises(ResourceError, match="modal offers A10G in counts of 1-4 per node, not 8"):
        backend.submit(
            spec, project=project, request=ResourceRequest(accelerator=parse_accelerators("A10G:8"))
        )
    assert fake.api_calls() == []
    assert not (tmp_path / "state").exists()
