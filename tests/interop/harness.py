"""The published substrax (``scripts/install_substrax.sh``) and a project both tools run.

substrax 0.1.22 lives in an environment of its own (``~/.cache/x-tui-tests/substrax-0.1.22``, or
``$X_TUI_SUBSTRAX_HOME/substrax-0.1.22``), outside pytest's cache so clearing that cache costs no
reinstall. ``.ci/run`` runs the script before pytest; without the environment every test here
skips, saying how to make it.

Its ``substrax-compute`` runs as a real process, and its API through :data:`API`, a script run by
its interpreter that answers in JSON. Its local backend reads a worker's liveness through
``ps -o command=``, which procps cuts at the terminal width: ``COLUMNS=4000`` keeps it whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.cli.cli_support import Cli, Result, cli_for

VERSION = "0.1.22"
"""The substrax release these tests drive."""

INSTALL_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_substrax.sh"


def substrax_home() -> Path:
    """Where the install script puts substrax ``VERSION``."""
    base = os.environ.get("X_TUI_SUBSTRAX_HOME") or str(Path.home() / ".cache" / "x-tui-tests")
    return Path(base) / f"substrax-{VERSION}"


def missing_reason() -> str | None:
    """Why substrax cannot be driven here, or ``None`` when it can."""
    home = substrax_home()
    python = home / "bin" / "python"
    if not (home / "bin" / "substrax-compute").is_file() or not python.is_file():
        return f"substrax {VERSION} is not installed in {home}: run {INSTALL_SCRIPT}"
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('substrax'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.stdout.strip() != VERSION:
        return f"{home} does not hold substrax {VERSION}: run {INSTALL_SCRIPT}"
    return None


API = r"""
import json, sys
from pathlib import Path

request = json.loads(sys.argv[1])
what = request["what"]
out = {}
if what == "resolve":
    from substrax.compute.config import read_compute_config, resolve_job
    from substrax.records import dump_record
    for case in request["cases"]:
        try:
            config = read_compute_config(Path(case["project"]))
            spec = resolve_job(config, case["job"], project=Path(case["project"]))
            out[case["id"]] = {"ok": True, "spec": json.dumps(dump_record(spec))}
        except Exception as error:  # substrax raises XlaFlagConflictError, not a ValueError
            out[case["id"]] = {"ok": False, "error": str(error).splitlines()[0:3]}
elif what == "store":
    from substrax.compute.backend import RunStore
    from substrax.compute.cli import _backend_for
    from substrax.records import dump_record
    store = RunStore()
    handles = store.handles()
    out["handles"] = [
        {"run_id": h.run_id, "schema_version": h.schema_version, "job": h.job} for h in handles
    ]
    for run_id in request.get("status", []):
        handle = store.load(run_id)
        out[run_id] = _backend_for(handle).status(handle).value
    for run_id in request.get("dump", []):
        out["dump:" + run_id] = json.dumps(dump_record(store.load(run_id)), indent=2) + "\n"
elif what == "records":
    from substrax.compute.spec import read_job_spec
    from substrax.compute.worker import read_manifest
    from substrax.records import dump_record
    spec_path, manifest_path = Path(request["spec"]), Path(request["manifest"])
    spec = read_job_spec(json.loads(spec_path.read_text()))
    out["spec"] = json.dumps(dump_record(spec))
    manifest = read_manifest(json.loads(manifest_path.read_text()))
    out["manifest"] = json.dumps(dump_record(manifest), indent=2) + "\n"
print(json.dumps(out))
"""


LOCK = f"""\
version = 1
revision = 3
requires-python = ">=3.12"

[[package]]
name = "substrax"
version = "{VERSION}"
source = {{ registry = "https://pypi.org/simple" }}
"""

HELLO = """\
import os
import pathlib

print("hello from the task", flush=True)
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / "result"
out.mkdir(parents=True, exist_ok=True)
(out / "value.txt").write_text("42")
print("wrote 42", flush=True)
"""


def pyproject(python: Path) -> str:
    """A project whose local backend runs substrax's interpreter (which runs either worker)."""
    return f"""\
[project]
name = "shared"
version = "0.1.0"
requires-python = ">=3.12"
dependencies = ["substrax=={VERSION}"]

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = {json.dumps(str(python))}

[tool.substrax.compute.jobs.hello]
commands = {{ writes = ["python", "scripts/hello.py"] }}
timeout_seconds = 120

[tool.substrax.compute.jobs.slow]
timeout_seconds = 900

[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
"""


@dataclass(frozen=True)
class Substrax:
    """substrax ``VERSION``'s CLI and API, on the same project and state directory as ``cli``."""

    home: Path
    cli: Cli

    @property
    def env(self) -> dict[str, str]:
        return {**self.cli.env, "COLUMNS": "4000"}

    def __call__(self, *args: str) -> Result:
        """Run ``substrax-compute ARGS`` in the project to its end."""
        done = subprocess.run(
            [str(self.home / "bin" / "substrax-compute"), *args],
            cwd=self.cli.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def api(self, request: dict[str, object]) -> dict[str, object]:
        """Ask substrax's own API (run by its interpreter); its answer, parsed."""
        done = subprocess.run(
            [str(self.home / "bin" / "python"), "-c", API, json.dumps(request)],
            cwd=self.cli.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
        return answer


def shared_project(root: Path, home: Path, *, pycache: Path, locked: bool = True) -> Substrax:
    """A project (locking substrax ``VERSION`` when ``locked``) and both tools on one store."""
    project = root / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "pyproject.toml").write_text(pyproject(home / "bin" / "python"))
    (project / "scripts" / "hello.py").write_text(HELLO)
    if locked:
        (project / "uv.lock").write_text(LOCK)
    cli = cli_for(project, root / "state", pycache=pycache)
    cli.env["X_TUI_CONFIG"] = str(root / "x-tui-config.toml")
    cli.env["COLUMNS"] = "4000"
    cli.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), cli.env.get("PATH", "")])
    return Substrax(home=home, cli=cli)


def submitted(stdout: str) -> str:
    """The run id a ``run`` verb (either tool's) printed on its ``Submitted`` line."""
    for line in stdout.splitlines():
        if line.startswith("Submitted "):
            return line.split()[1]
    raise AssertionError(f"no 'Submitted' line in {stdout!r}")


def xtui_state(tools: Substrax, run_id: str) -> str:
    """The run's state as ``x-tui status --json`` says it."""
    result = tools.cli("status", run_id, "--json")
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["state"])


def substrax_line(tools: Substrax, run_id: str) -> str:
    """The line ``substrax-compute status RUN`` prints for the run."""
    result = tools("status", run_id)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()
