"""Secrets end to end on the local backend: they reach the task, and no file holds them."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

SECRET = f"xt-{secrets.token_hex(12)}-value"
"""A value no file has any business holding."""

CHECK = (
    "import hashlib, os, pathlib;"
    "key = os.environ.get('API_KEY', '');"
    "same = hashlib.sha256(key.encode()).hexdigest() == os.environ['EXPECTED_SHA'];"
    "print('the key arrived:', same);"
    "print('optional one set:', 'XT_MAYBE' in os.environ);"
    "pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'], 'report.txt').write_text(f'same={same}')"
)

JOBS = f"""
[tool.substrax.compute.jobs.keyed]
timeout_seconds = 300
env = {{ EXPECTED_SHA = "{hashlib.sha256(SECRET.encode()).hexdigest()}" }}
commands = {{ check = ["python", "-c", {json.dumps(CHECK)}] }}

[tool.substrax.compute.jobs.keyed.secrets]
env = ["XT_API_KEY"]
optional_env = ["XT_MAYBE"]
env_mapping = {{ XT_API_KEY = "API_KEY" }}

[tool.substrax.compute.jobs.vaulted]
timeout_seconds = 300
secrets = {{ platform = ["my-modal-secret"] }}
commands = {{ check = ["python", "-c", "pass"] }}
"""


def _with_secret(cli: Cli) -> Cli:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    return dataclasses.replace(cli, env={**cli.env, "XT_API_KEY": SECRET})


def _files_holding(value: str, *roots: Path) -> list[Path]:
    needle = value.encode()
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                found.append(path)
    return found


def test_a_secret_reaches_the_task_and_no_file_of_the_run_holds_it(
    cli: Cli, tmp_path: Path
) -> None:
    keyed = _with_secret(cli)
    into = tmp_path / "fetched"

    result = keyed("run", "keyed", "--into", str(into))

    assert result.returncode == 0, result.stderr
    run_id = keyed.submitted_id(result.stdout)
    assert "[check] the key arrived: True" in result.stdout.splitlines()
    assert "[check] optional one set: False" in result.stdout.splitlines()
    assert (into / run_id / "check" / "report.txt").read_text() == "same=True"
    # Every file the run left: handle, staged spec, retries, worker log, manifest, task logs,
    # the fetched copy; none holds the value, and neither does anything x-tui printed.
    assert any(keyed.state.rglob("*.json"))
    assert _files_holding(SECRET, keyed.state, into, keyed.project) == []
    assert SECRET not in result.stdout + result.stderr
    assert SECRET not in keyed("logs", run_id).stdout
    assert SECRET not in keyed("status", "--json").stdout


def test_plan_shows_secret_names_only(cli: Cli) -> None:
    keyed = _with_secret(cli)

    text = keyed("plan", "keyed")
    document = keyed("plan", "keyed", "--json")

    assert text.returncode == 0, text.stderr
    assert (
        "secrets      XT_API_KEY as API_KEY, XT_MAYBE (unset: skipped) (names only)"
        in text.stdout.splitlines()
    )
    secrets_block = json.loads(document.stdout)["extensions"]["secrets"]
    assert secrets_block == {
        "env": ["XT_API_KEY"],
        "optional_env": ["XT_MAYBE"],
        "env_mapping": {"XT_API_KEY": "API_KEY"},
        "platform": [],
        "unset": ["XT_MAYBE"],
    }
    assert SECRET not in text.stdout + document.stdout


def test_an_unset_required_secret_refuses_the_run_naming_it_and_submits_nothing(
    cli: Cli,
) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')

    result = cli("run", "keyed", "--detach")

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "x-tui: job 'keyed' needs XT_API_KEY from this shell (secrets.env), and it is not set;"
        " export it, or list it in secrets.optional_env\n"
    )
    assert not cli.runs.exists()
    assert not (cli.state / "compute" / "local").exists()
    # The plan still shows, and says submit would refuse.
    assert "XT_API_KEY as API_KEY (unset: refused)" in cli("plan", "keyed").stdout


def test_a_provider_secret_is_refused_by_the_local_backend_before_anything_runs(
    cli: Cli,
) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')

    planned = cli("plan", "vaulted")
    submitted = cli("run", "vaulted", "--detach")

    for result in (planned, submitted):
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert (
            "secrets.platform = ['my-modal-secret']: the local backend has no secret store" in line
        )
    assert not cli.runs.exists()


def test_a_sweep_over_a_secret_s_name_is_refused(cli: Cli) -> None:
    keyed = _with_secret(cli)

    result = keyed("run", "keyed", "--sweep", "API_KEY=a,b", "--detach")

    assert result.returncode == 2
    assert result.stderr == (
        "x-tui: --sweep API_KEY=...: API_KEY is one of job 'keyed''s secrets; a swept value"
        " would replace it in the task\n"
    )
    assert not keyed.runs.exists()
