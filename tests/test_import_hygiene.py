"""The headless CLI never imports Textual or Rich, and its start imports nothing heavy.

Each verb runs in a fresh interpreter through ``x_tui.cli.main``, on a real project and a real
run, and the test reads that interpreter's ``sys.modules`` afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

UI_MODULES = ("textual", "rich")
"""Never imported by a headless verb."""

HEAVY_AT_START = ("tomlkit", "importlib.metadata", "x_tui.compute", "x_tui.backends", "modal")
"""Not imported by ``import x_tui.cli`` (each verb imports what it needs when it runs)."""

PROBE = """
import contextlib, io, json, sys
import x_tui.cli
argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()):
    code = x_tui.cli.main(argv) if argv is not None else None
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = {python}

[tool.substrax.compute.jobs.hello]
commands = {{ hi = ["python", "-c", "print('hi')"] }}
timeout_seconds = 120
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """A project, an environment with a private state directory, and a finished run's id."""
    root = tmp_path_factory.mktemp("hygiene")
    project = root / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT.format(python=json.dumps(sys.executable)))
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(root / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", "run", "hello"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    run_id = done.stdout.split()[1]
    return project, env, run_id


def _modules_after(
    project: tuple[Path, dict[str, str], str], argv: list[str] | None
) -> tuple[int | None, set[str]]:
    root, env, _ = project
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    return report["code"], set(report["modules"])


def _loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        name for name in modules if any(name == p or name.startswith(f"{p}.") for p in prefixes)
    )


VERBS = {
    "jobs": ["jobs"],
    "jobs --json": ["jobs", "--json"],
    "check": ["check"],
    "plan": ["plan", "hello"],
    "run": ["run", "hello"],
    "run --detach": ["run", "hello", "--detach"],
    "status": ["status"],
    "status RUN_ID --json": ["status", "{run_id}", "--json"],
    "logs": ["logs", "{run_id}"],
    "logs --follow": ["logs", "{run_id}", "--follow"],
    "metrics --json": ["metrics", "{run_id}", "--json"],
    "fetch": ["fetch", "{run_id}", "--into", "{tmp}"],
    "cancel": ["cancel", "{run_id}"],
    "teardown (refused for a local run)": ["teardown", "{run_id}"],
    "delete (refused without a terminal)": ["delete", "{run_id}"],
    "backends --accelerators": ["backends", "--accelerators"],
    "a refused command": ["run", "nosuch"],
    "watch --status (none runs)": ["watch", "--status"],
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_headless_verb_imports_neither_textual_nor_rich(
    project: tuple[Path, dict[str, str], str], tmp_path: Path, verb: str
) -> None:
    argv = [part.format(run_id=project[2], tmp=tmp_path) for part in VERBS[verb]]

    code, modules = _modules_after(project, argv)

    expected = 1 if verb.startswith("watch") else 0
    assert code == (2 if verb.startswith(("a refused command", "teardown", "delete")) else expected)
    assert _loaded(modules, UI_MODULES) == []


def test_the_watcher_and_its_notifications_import_neither_textual_nor_rich() -> None:
    probe = (
        "import sys, x_tui.app.watcher, x_tui.app.watch_daemon, x_tui.cli.watch_verb,"
        " x_tui.app.watch_budgets, x_tui.app.watch_resubmits;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_handle_verbs_do_not_read_the_configuration(
    project: tuple[Path, dict[str, str], str],
) -> None:
    code, modules = _modules_after(project, ["status"])

    assert code == 0
    assert _loaded(modules, ("tomlkit", "modal")) == []


def test_importing_the_cli_imports_nothing_heavy(
    project: tuple[Path, dict[str, str], str],
) -> None:
    _, modules = _modules_after(project, None)

    assert _loaded(modules, (*UI_MODULES, *HEAVY_AT_START)) == []


def test_the_worker_starts_without_the_hashing_modules() -> None:
    """A worker starts per run: its nonce comes from ``os.urandom``, not ``secrets``, whose
    ``hmac``, ``hashlib``, ``random`` and ``base64`` cost about 6 ms of each start."""
    probe = (
        "import sys, x_tui.compute.worker.main, x_tui.compute.worker.run_processes as r;"
        "nonce = r.new_marker('job-20260101T000000Z-000000').rpartition(':')[2];"
        "print(nonce, sorted({'secrets', 'hmac', 'hashlib'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    nonce, loaded = done.stdout.split(" ", 1)
    assert len(nonce) == 32
    int(nonce, 16)  # hexadecimal
    assert loaded.strip() == "[]"
