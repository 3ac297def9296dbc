"""``x-tui`` with ``--backend modal``, run as real processes against the fake ``modal``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .fake_modal.harness import PYPROJECT, FakeModal, install_fake_modal

JOBS = """
[tool.substrax.compute]
backend = "modal"

[tool.substrax.compute.backends.modal]
outputs_volume = "cli-runs"

[tool.substrax.compute.jobs.hello]
commands = { greet = ["python", "-c", "print('hello from modal', flush=True)"] }
timeout_seconds = 600.5
resources = { accelerator = "L4", cpu = 2, memory_mib = 4096 }

[tool.substrax.compute.jobs.flaky]
timeout_seconds = 300
retries = 2
commands = { flaky = ["python", "flaky.py"] }

[tool.substrax.compute.jobs.slow]
timeout_seconds = 900

[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
"""


@dataclass(frozen=True)
class Cli:
    """``python -m x_tui`` in a project, with the fake ``modal`` importable in every child."""

    project: Path
    state: Path
    fake: FakeModal

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``x-tui ARGS`` to its end."""
        env = dict(os.environ)
        env["SUBSTRAX_STATE_DIR"] = str(self.state)
        env.pop("PYTHONUNBUFFERED", None)
        return subprocess.run(
            [sys.executable, "-m", "x_tui", *args],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """A project whose default backend is modal, and the fake installed."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT + JOBS)
    for fake in install_fake_modal(tmp_path, monkeypatch):
        yield Cli(project=project, state=tmp_path / "state", fake=fake)


FLAKY = """\
import pathlib, sys
counter = pathlib.Path("flaky.count")
number = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(number))
print(f"attempt number {number}", flush=True)
sys.exit(7 if number < 3 else 0)
"""


def _submitted(stdout: str) -> str:
    for line in stdout.splitlines():
        if line.startswith("Submitted "):
            return line.split()[1]
    raise AssertionError(f"no 'Submitted' line in {stdout!r}")


def test_without_a_token_run_exits_2_with_one_line_and_reaches_nothing(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One line on stderr saying how to configure Modal; no RPC, no handle, no traceback."""
    monkeypatch.delenv("MODAL_TOKEN_ID")
    monkeypatch.delenv("MODAL_TOKEN_SECRET")
    done = cli("run", "hello", "--backend", "modal")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Modal has no credentials here" in lines[0]
    assert "modal token new" in lines[0]
    assert done.stdout == ""
    assert cli.fake.rpcs() == []
    assert not (cli.state / "compute" / "runs").exists()


def test_plan_json_shows_the_layers_options_and_volumes_without_contacting_modal(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Works with no token at all, and asks the (fake) server nothing."""
    monkeypatch.delenv("MODAL_TOKEN_ID")
    monkeypatch.delenv("MODAL_TOKEN_SECRET")
    done = cli("plan", "hello", "--backend", "modal", "--json")
    assert done.returncode == 0, done.stderr
    request = json.loads(done.stdout)["provider_request"]
    assert [layer["method"] for layer in request["image"]] == [
        "debian_slim",
        "uv_sync",
        "add_local_dir",
        "run_commands",
        "add_local_file",
    ]
    assert request["function"] == {
        "gpu": "L4",
        "cpu": 2.0,
        "memory": 4096,
        "timeout": 601,
        "serialized": True,
    }
    assert list(request["volumes"]) == ["/outputs"]
    assert cli.fake.rpcs() == []


def test_plan_json_passes_accelerator_alternatives_and_exact_kinds_to_modals_gpu(
    cli: Cli,
) -> None:
    """``--accelerator "H100!:2,A100-80GB:2"``: Modal's ``gpu`` is the list, ``!`` kept."""
    done = cli(
        "plan", "hello", "--backend", "modal", "--accelerator", "H100!:2,A100-80GB:2", "--json"
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["request"]["accelerator_text"] == "H100!:2,A100-80GB:2"
    function = document["provider_request"]["function"]
    assert function["gpu"] == ["H100!:2", "A100-80GB:2"]
    assert (function["cpu"], function["memory"]) == (2.0, 4096)
    assert document["estimate"]["breakdown"][0].startswith("H100 x 2 at $3.9492/h")
    # Modal's own plan prices the same table over the timeout it gives Modal, rounded up.
    priced = document["provider_request"]["estimate"]
    assert priced["source"] == document["estimate"]["source"]
    assert priced["timeout_hours"] == 601 / 3600
    assert cli.fake.rpcs() == []


def test_an_accelerator_modal_does_not_offer_is_refused_by_plan_and_run_in_one_line(
    cli: Cli,
) -> None:
    """Exit 2, one line naming the kind; nothing reaches the (fake) service."""
    for verb in ("plan", "run"):
        done = cli(verb, "hello", "--accelerator", "A10G:8")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "x-tui: accelerator 'A10G:8': modal offers A10G in counts of 1-4 per node, not 8"
        ]
    assert cli.fake.api_calls() == []


def test_run_follows_the_run_and_fetches_its_outputs(cli: Cli) -> None:
    """``x-tui run`` prints the task's lines from Modal's log stream, then fetches."""
    done = cli("run", "hello")
    assert done.returncode == 0, done.stderr
    assert "[greet] hello from modal" in done.stdout.splitlines()
    run_id = _submitted(done.stdout)
    fetched = cli.state / "compute" / "fetched" / run_id
    assert (fetched / "manifest.json").is_file()
    assert "hello from modal" in (fetched / "greet" / "stdout.log").read_text()


def test_a_retried_task_s_attempts_are_read_from_the_volume_by_logs_attempts(cli: Cli) -> None:
    """``retries = 2``: two failures then success; ``logs --attempts`` peeks each one's logs."""
    (cli.project / "flaky.py").write_text(FLAKY)
    submitted = cli("run", "flaky", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    run_id = _submitted(submitted.stdout)
    for _ in range(600):
        state = json.loads(cli("status", run_id, "--json").stdout)["state"]
        if state != "running":
            break
    assert state == "succeeded"
    attempts = cli("logs", run_id, "--attempts")
    assert attempts.returncode == 0, attempts.stderr
    lines = attempts.stdout.splitlines()
    headers = [line.split(" (")[0] for line in lines if line.startswith("== ")]
    assert headers == [
        "== flaky: attempt 1 of 3, failed",
        "== flaky: attempt 2 of 3, failed",
        "== flaky: attempt 3 of 3, succeeded",
    ]
    assert [line for line in lines if line.startswith("attempt number")] == [
        "attempt number 1",
        "attempt number 2",
        "attempt number 3",
    ]
    assert not (cli.state / "compute" / "fetched" / run_id).exists()


def test_status_logs_and_cancel_work_on_a_detached_run_from_another_process(cli: Cli) -> None:
    """Every verb rebuilds the backend from the stored handle; cancel twice is harmless."""
    submitted = cli("run", "slow", "--detach")
    assert submitted.returncode == 0, submitted.stderr
    run_id = _submitted(submitted.stdout)
    for _ in range(600):
        logs = cli("logs", run_id)
        if "[sleeps] sleeping" in logs.stdout.splitlines():
            break
    else:
        raise AssertionError(f"the run never logged its line: {logs.stdout!r} {logs.stderr!r}")
    status = json.loads(cli("status", run_id, "--json").stdout)
    assert status["state"] == "running"
    assert cli("cancel", run_id).returncode == 0
    assert cli("cancel", run_id).returncode == 0
    status = json.loads(cli("status", run_id, "--json").stdout)
    assert status["state"] == "cancelled"


def test_without_the_extra_run_says_how_to_install_it(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``modal`` not importable, choosing the backend is refused in one line, exit 2."""
    hidden = tmp_path / "no-modal"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys\nsys.modules['modal'] = None\n")
    monkeypatch.setenv("PYTHONPATH", str(hidden))
    done = cli("run", "hello")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "x-tui: the modal backend needs Modal; install it with uv add 'x-tui[modal]'"
        " (or pip install 'x-tui[modal]')"
    ]
