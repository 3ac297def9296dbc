"""The modal backend against the real ``modal`` 1.6.4: every call it makes exists there, as used.

A full cycle (submit, peek, logs, status, cancel, fetch, and the container's commit) runs against
the fake, which records every SDK call with its argument shapes. Each recorded call must bind to
the real SDK's signature, each fake signature must equal the real one, and the errors the backend
tells apart must have the same hierarchy in both. If Modal changes its API, these tests fail, not
a user's run. Nothing here reaches the network.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.compute.backend import RunState
from x_tui.compute.dependencies import Dependencies
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.resources import parse_accelerators
from x_tui.compute.retries import RetryPolicy
from x_tui.compute.secrets import SecretsRequest, SecretValues
from x_tui.compute.worker.spec import JobSpec, Mount, MountAccess, Task
from x_tui.testing.contract import SCRIPTS, wait_for_line, wait_until_final

from .fake_modal import fixtures as modal_fixtures
from .fake_modal.harness import FAKE_DIR, FakeModal, make_project

fake = modal_fixtures.fake_modal


_DUMP = textwrap.dedent(
    """
    import builtins, inspect, json, sys
    import modal, modal.exception, modal.types

    names, exceptions = json.loads(sys.argv[1]), json.loads(sys.argv[2])

    def resolve(name):
        target = modal
        for part in name.split("."):
            target = getattr(target, part)
        return target

    def params(target):
        found = [
            [p.name, p.kind.name, p.default is not p.empty,
             None if p.default is p.empty else repr(p.default)]
            for p in inspect.signature(target).parameters.values()
        ]
        # synchronicity shows some classmethods with their cls; a call never passes it
        return found[1:] if found and found[0][0] in ("self", "cls") else found

    def lineage(cls):
        return [c.__name__ for c in cls.__mro__
                if c.__module__ == "modal.exception" and not c.__name__.startswith("_")]

    print(json.dumps({
        "file": modal.__file__,
        "version": modal.__version__,
        "signatures": {name: params(resolve(name)) for name in names},
        "exceptions": {
            name: lineage(getattr(modal.exception, name)) for name in exceptions
        },
        "builtin_timeouts": [
            name for name in exceptions
            if issubclass(getattr(modal.exception, name), builtins.TimeoutError)
        ],
        "entry_types": {member.name: member.value for member in modal.types.FileEntryType},
        "entry_fields": params(modal.types.FileEntry),
    }))
    """
)


def _clean_env() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("MODAL_", "FAKE_MODAL_")) and key != "PYTHONPATH"
    }
    env["MODAL_CONFIG_PATH"] = os.devnull + ".absent"
    return env


def _describe(names: list[str], exceptions: list[str], *, fake: bool) -> dict[str, Any]:
    env = _clean_env()
    if fake:
        env["PYTHONPATH"] = str(FAKE_DIR)
    done = subprocess.run(
        [sys.executable, "-c", _DUMP, json.dumps(names), json.dumps(exceptions)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _fake_exceptions() -> list[str]:
    text = (FAKE_DIR / "modal" / "exception.py").read_text()
    return [
        line.split()[1].split("(")[0] for line in text.splitlines() if line.startswith("class ")
    ]


def _fake_apis() -> list[str]:
    text = (FAKE_DIR / "modal" / "__init__.py").read_text()
    return sorted({line.split('"')[1] for line in text.splitlines() if "@recorded(" in line})


@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    """What the installed, real ``modal`` says of the APIs and errors the fake stands in for."""
    return _describe(_fake_apis(), _fake_exceptions(), fake=False)


@pytest.fixture(scope="module")
def fake_description() -> dict[str, Any]:
    """What the fake ``modal`` says of the same."""
    return _describe(_fake_apis(), _fake_exceptions(), fake=True)


def test_the_real_modal_is_the_pinned_release(real: dict[str, Any]) -> None:
    """The conformance checks read modal 1.6.x, the line ``x-tui[modal]`` pins."""
    assert "fake_modal" not in real["file"]
    assert real["version"].startswith("1.6.")


EXTENSIONS = JobExtensions(
    dependencies=Dependencies(python=("rich==13.7.1",), apt=("ffmpeg",), post_install=("true",)),
    secrets=SecretsRequest(env=("API_KEY",), platform=("team-vault",)),
    retries=RetryPolicy(default=1),
)
"""Every extension, so the calls each makes are checked too."""


def _cycle(fake: FakeModal, tmp_path: Path) -> None:
    """Use every backend operation, so the fake records every SDK call the backend makes."""
    project = make_project(tmp_path / "project", SCRIPTS)
    fake.volume("ds").mkdir(parents=True)
    (fake.root / "secrets").mkdir()
    (fake.root / "secrets" / "team-vault.json").write_text('{"VAULT": "v"}')
    state = tmp_path / "state"
    backend = ModalBackend(
        {
            "outputs_volume": "runs",
            "volumes": {"datasets": "ds"},
            "environment": "dev",
            "state_dir": str(state),
        }
    )
    spec = JobSpec(
        name="cycle",
        tasks=(Task(name="sleeps", argv=("python", "scripts/sleeps.py"), timeout_seconds=60.0),),
        timeout_seconds=120.0,
        mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),),
    )
    request = ResourceRequest(accelerator=parse_accelerators(["H100!:2", "A100-80GB:2"]))
    handle = backend.submit(spec, project=project, request=request)
    wait_for_line(backend, handle, "[sleeps] sleeping")
    assert backend.peek(handle, "sleeps/stdout.log") is not None
    backend.cancel(handle)
    assert wait_until_final(backend, handle) is RunState.CANCELLED
    quick = JobSpec(
        name="quick",
        tasks=(Task(name="writes", argv=("python", "scripts/writes.py"), timeout_seconds=60.0),),
        timeout_seconds=120.0,
    )
    done = backend.submit(
        quick, project=project, extensions=EXTENSIONS, secrets=SecretValues({"API_KEY": "k"})
    )
    assert "[writes] hello from the task" in list(backend.logs(done, follow=True))
    assert backend.status(done) is RunState.SUCCEEDED
    backend.fetch(done, tmp_path / "fetched")


def test_every_modal_call_the_backend_makes_binds_to_the_real_signature(
    fake: FakeModal, tmp_path: Path, real: dict[str, Any]
) -> None:
    """Each SDK call of a whole cycle (container included) is accepted by the real signature."""
    _cycle(fake, tmp_path)
    calls = [record for record in fake.api_calls() if "api" in record]
    used = {record["api"] for record in calls}
    assert {"App.run", "Function.spawn", "FunctionCall.cancel", "Volume.commit"} <= used
    assert {
        "Image.apt_install",
        "Image.uv_pip_install",
        "Secret.from_dict",
        "Secret.from_name",
    } <= used
    refused = []
    for record in calls:
        signature = inspect.Signature(
            [
                inspect.Parameter(
                    name,
                    getattr(inspect.Parameter, kind),
                    default=None if has_default else inspect.Parameter.empty,
                )
                for name, kind, has_default, _ in real["signatures"][record["api"]]
            ]
        )
        try:
            signature.bind(*[None] * record["positional"], **dict.fromkeys(record["keywords"]))
        except TypeError as error:
            refused.append(f"{record['api']}({record}): {error}")
    assert refused == []


def test_the_fake_has_the_real_signatures(
    real: dict[str, Any], fake_description: dict[str, Any]
) -> None:
    """Every API the fake provides has the real one's parameters, kinds and defaults."""
    differ = {
        name: (fake_description["signatures"][name], real["signatures"][name])
        for name in real["signatures"]
        if fake_description["signatures"][name] != real["signatures"][name]
    }
    assert differ == {}


def test_the_fake_raises_the_real_error_hierarchy(
    real: dict[str, Any], fake_description: dict[str, Any]
) -> None:
    """The errors the backend tells apart descend from the same Modal errors in both."""
    assert fake_description["exceptions"] == real["exceptions"]
    assert real["builtin_timeouts"] == []
    assert fake_description["builtin_timeouts"] == []
    assert fake_description["entry_types"] == real["entry_types"]
    assert fake_description["entry_fields"] == real["entry_fields"]


def test_the_container_function_is_pickled_by_value_and_runs_without_x_tui(
    tmp_path: Path,
) -> None:
    """Modal's own serializer captures the function whole; it runs where x_tui cannot import."""
    payload = tmp_path / "function.pickle"
    serialize = (
        "import sys\n"
        "from modal._serialization import serialize\n"
        "from x_tui.backends.modal.container import container_function\n"
        "open(sys.argv[1], 'wb').write(serialize(container_function()))\n"
    )
    subprocess.run([sys.executable, "-c", serialize, str(payload)], env=_clean_env(), check=True)
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import sys, pathlib\n"
        "spec = pathlib.Path(sys.argv[sys.argv.index('--spec') + 1]).read_text()\n"
        "out = pathlib.Path(sys.argv[sys.argv.index('--outputs') + 1])\n"
        "(out / 'seen.json').write_text(spec)\n"
    )
    (tmp_path / "outputs").mkdir()
    run = (
        "import pickle, sys\n"
        "sys.modules['x_tui'] = None\n"
        "function = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "ok = function(spec_json='{\"job\": 1}', run_id='r', python=sys.executable,\n"
        "    worker=sys.argv[2], project=sys.argv[3], outputs=sys.argv[4], volume='v',\n"
        "    environment=None, commit_seconds=0.05)\n"
        "sys.exit(0 if ok else 1)\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            run,
            str(payload),
            str(worker),
            str(tmp_path),
            str(tmp_path / "outputs"),
        ],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "outputs" / "r" / "seen.json").read_text() == '{"job": 1}'


def test_the_real_sdk_accepts_the_image_and_function_a_plan_describes(tmp_path: Path) -> None:
    """Built with the real SDK, offline, the planned image and function raise nothing."""
    project = make_project(tmp_path / "project", SCRIPTS)
    loose = make_project(tmp_path / "loose", SCRIPTS, pyproject=None)
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        import modal
        from x_tui.backends.modal import sdk
        from x_tui.backends.modal.backend import ModalBackend
        from x_tui.backends.modal.container import container_function
        from x_tui.compute.dependencies import Dependencies
        from x_tui.compute.extensions import JobExtensions, ResourceRequest, CpuRequest
        from x_tui.compute.resources import parse_accelerators
        from x_tui.compute.secrets import SecretsRequest
        from x_tui.compute.worker.spec import JobSpec, Mount, MountAccess, Task

        backend = ModalBackend({"outputs_volume": "runs", "volumes": {"ds": "datasets"},
                                "state_dir": sys.argv[2]})
        spec = JobSpec(name="job", timeout_seconds=1800.5,
            tasks=(Task(name="t", argv=("python", "-V"), timeout_seconds=60.0),),
            extras=("cuda12",),
            mounts=(Mount(name="ds", path="/data", access=MountAccess.READ_ONLY),))
        extensions = JobExtensions(
            dependencies=Dependencies(python=("rich==13.7.1", "numpy>=2"), apt=("ffmpeg",),
                                      post_install=("python -V", "echo done")),
            secrets=SecretsRequest(env=("API_KEY",), platform=("team-vault",)))
        gpus = (None, "L4", "H100:2", "H100!", ["H100!:8", "A100-80GB:8"])
        for project, gpu in [(sys.argv[1], gpu) for gpu in gpus] + [(sys.argv[3], "T4")]:
            accelerator = parse_accelerators(gpu) if gpu else None
            request = ResourceRequest(accelerator=accelerator, cpu=CpuRequest(per_node=2.5),
                                      memory_mib=4096)
            planned = backend.request(spec, project=Path(project), request=request,
                                      extensions=extensions)
            image = sdk.build_image(modal, planned)
            volumes = {m.path: sdk.volume(modal, m, None) for m in planned.volumes}
            secrets = sdk.secrets(modal, {"API_KEY": "k"}, planned.platform_secrets, None)
            app = modal.App(planned.app_name)
            app.function(image=image, volumes=volumes, secrets=secrets,
                         **planned.function.keywords())(container_function())
            print(*[step.method for step in planned.image])
        print("built")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(project), str(tmp_path / "state"), str(loose)],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    *layers, last = done.stdout.splitlines()
    assert last == "built"
    assert "apt_install uv_pip_install run_commands add_local_dir" in layers[0]
    assert "debian_slim apt_install pip_install run_commands add_local_dir" in layers[-1]


def test_the_real_log_command_takes_the_options_the_backend_passes() -> None:
    """``modal app logs`` has ``--follow``, ``--since`` and ``--env``."""
    done = subprocess.run(
        [sys.executable, "-m", "modal", "app", "logs", "--help"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    for option in ("--follow", "--since", "--env"):
        assert option in done.stdout
