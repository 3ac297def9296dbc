"""The CLI tests' project and runner: a fresh project with two examples, and ``Cli``, which runs
``x-tui`` in it (in this process, or as a real ``python -m x_tui`` process) with a private state
directory. The fixtures that make them are ``tests/cli/conftest.py``'s."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import run_x_tui

FIRST_EXAMPLE = """\
import pathlib
import time

print("hello from the first example", flush=True)
# A test that wants to see this line before the task ends creates gate.wanted, reads the line
# from x-tui's output, then creates gate.
if pathlib.Path("gate.wanted").exists():
    for _ in range(1200):
        if pathlib.Path("gate").exists():
            print("the gate opened", flush=True)
            break
        time.sleep(0.1)
    else:
        print("the gate never opened", flush=True)
"""

SECOND_EXAMPLE = """\
import os
import pathlib

result = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"]) / "result"
result.mkdir(parents=True)
(result / "value.txt").write_text("42")
print("the second example wrote 42")
"""

HELPER = 'raise SystemExit("a helper is not an example")\n'


def pyproject(python: str, *, jobs: str = "", top: str = "", local: str | None = None) -> str:
    """A project's pyproject.toml (no uv.lock anywhere) whose local backend runs ``python``."""
    local_table = f"python = {json.dumps(python)}" if local is None else local
    return f"""\
[project]
name = "demo"
version = "0.1.0"

[tool.substrax.compute]
{top}

[tool.substrax.compute.backends.local]
{local_table}

[tool.substrax.compute.jobs.hello]
examples = ["examples"]
timeout_seconds = 300

[tool.substrax.compute.jobs.failing]
commands = {{ boom = ["python", "-c", "import sys; print('about to fail'); sys.exit(3)"] }}
timeout_seconds = 300

[tool.substrax.compute.jobs.slow]
timeout_seconds = 900

[tool.substrax.compute.jobs.slow.commands]
sleeps = ["python", "-c", "import time; print('sleeping', flush=True); time.sleep(600)"]
{jobs}
"""


def make_project(root: Path, *, jobs: str = "", top: str = 'backend = "local"') -> Path:
    """Write a fresh project with two example scripts (and a skipped helper) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject(sys.executable, jobs=jobs, top=top))
    examples = root / "examples"
    examples.mkdir(exist_ok=True)
    (examples / "01_first.py").write_text(FIRST_EXAMPLE)
    (examples / "02_second.py").write_text(SECOND_EXAMPLE)
    (examples / "_helpers.py").write_text(HELPER)
    return root


@dataclass(frozen=True)
class Result:
    """What one ``x-tui`` command did (in this process or its own)."""

    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Cli:
    """Runs ``x-tui`` in a project, with a private state directory."""

    project: Path
    state: Path
    env: dict[str, str]

    def __call__(self, *args: str, cwd: Path | None = None) -> Result:
        """Run ``x-tui ARGS`` to its end, in this process, and return what it printed.

        The verb runs as in its own process (``tests.support.run_x_tui``); :meth:`process`
        starts a real one, for what the process itself does.
        """
        done = run_x_tui(args, cwd=cwd or self.project, env=self.env)
        return Result(done.returncode, done.stdout, done.stderr)

    def process(self, *args: str, cwd: Path | None = None) -> Result:
        """Run ``python -m x_tui ARGS`` as a process of its own, to its end."""
        done = subprocess.run(
            [sys.executable, "-m", "x_tui", *args],
            cwd=cwd or self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def start(self, *args: str) -> subprocess.Popen[str]:
        """Start ``x-tui ARGS`` with its stdout and stderr piped, line-buffered text."""
        return subprocess.Popen(
            [sys.executable, "-m", "x_tui", *args],
            cwd=self.project,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    @property
    def runs(self) -> Path:
        """Where the handles are kept."""
        return self.state / "compute" / "runs"

    @staticmethod
    def submitted_id(stdout: str) -> str:
        """The run id of ``Submitted <id> to <backend>.``."""
        for line in stdout.splitlines():
            if line.startswith("Submitted "):
                return line.split()[1]
        raise AssertionError(f"no 'Submitted' line in {stdout!r}")

    def snapshot(self) -> dict[str, str]:
        """Every file and directory of the project and the state directory, files hashed."""
        tree: dict[str, str] = {}
        for root in (self.project, self.state):
            if not root.exists():
                continue
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    tree[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                else:
                    tree[str(path)] = "dir"
        return tree

    def has_records(self) -> bool:
        """Whether the state directory holds a handle or a launch record (any run at all)."""
        kept = (self.runs, self.state / "x-tui" / "launches")
        return any(folder.is_dir() and any(folder.glob("*.json")) for folder in kept)

    def write_pyproject(self, *, jobs: str = "", top: str = "", local: str | None = None) -> None:
        """Rewrite the project's pyproject.toml: the three jobs, plus ``jobs`` and ``top``."""
        text = pyproject(sys.executable, jobs=jobs, top=top, local=local)
        (self.project / "pyproject.toml").write_text(text)

    def cancel_leftovers(self) -> None:
        """Cancel every run still going, so a test that fails half way leaves no sleeper.

        A state directory that holds no handle and no launch record has nothing to cancel, and
        no ``x-tui`` process is started to say so.
        """
        if not self.has_records():
            return
        listed = self("status", "--json")
        try:
            runs = json.loads(listed.stdout)["runs"]
        except (ValueError, KeyError):
            return
        for run in runs:
            if run["state"] in ("pending", "running"):
                self("cancel", run["run_id"])


def cli_for(project: Path, state: Path, *, pycache: Path) -> Cli:
    """``x-tui`` in ``project`` with the state directory ``state`` and no other SUBSTRAX_ vars.

    ``PYTHONUNBUFFERED`` is removed so the tests see x-tui's own flushing, and bytecode is cached
    under ``pycache`` (outside the tree) so each process does not compile every module again;
    the suite's own bytecode cache (``tests/conftest.py``), when it has one, is used instead.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("SUBSTRAX_")}
    for name in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    env["PYTHONPYCACHEPREFIX"] = os.environ.get("PYTHONPYCACHEPREFIX") or str(pycache)
    env["SUBSTRAX_STATE_DIR"] = str(state)
    return Cli(project=project, state=state, env=env)
