"""What ``x-tui run --backend local`` costs over running the same commands directly.

A job of three trivial tasks (``python -c pass``) is run both ways, alternately, in the same
process and on the same machine: once as ``x-tui run trivial --backend local`` (start-up, submit,
the detached worker and its device probe, following the log, fetching the outputs) and once as the
three commands run one after the other. Prints the best and median wall-clock seconds of each, and
their ratio.

    uv run python bench/overhead.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = 3
COMMAND = (sys.executable, "-c", "pass")


def _project(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    commands = ", ".join(
        f"t{index} = {json.dumps(['python', *COMMAND[1:]])}" for index in range(1, TASKS + 1)
    )
    (project / "pyproject.toml").write_text(
        "[project]\n"
        'name = "bench"\n'
        'version = "0"\n\n'
        "[tool.substrax.compute.backends.local]\n"
        f"python = {json.dumps(sys.executable)}\n\n"
        "[tool.substrax.compute.jobs.trivial]\n"
        f"commands = {{ {commands} }}\n"
        "timeout_seconds = 120\n"
    )
    return project


def _direct() -> float:
    start = time.perf_counter()
    for _ in range(TASKS):
        subprocess.run(COMMAND, check=True)
    return time.perf_counter() - start


def _through_x_tui(project: Path, into: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "x_tui",
            "run",
            "trivial",
            "--backend",
            "local",
            "--into",
            str(into),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"x-tui run exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return elapsed


def _line(name: str, samples: list[float]) -> str:
    return f"{name:<26} best {min(samples):7.3f} s   median {statistics.median(samples):7.3f} s"


def main() -> None:
    """Measure both ways, alternately, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each (default 7)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="x-tui-bench-") as scratch:
        root = Path(scratch)
        project = _project(root)
        env = {**os.environ, "SUBSTRAX_STATE_DIR": str(root / "state")}
        # As an installed x-tui runs: its modules' bytecode cached (outside the tree).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        direct: list[float] = []
        x_tui: list[float] = []
        _through_x_tui(project, root / "warm-up", env)  # page in the interpreter and packages
        for index in range(args.repeat):
            direct.append(_direct())
            x_tui.append(_through_x_tui(project, root / f"out-{index}", env))
    print(f"{TASKS} tasks of python -c pass, {args.repeat} runs each")
    print(_line("directly", direct))
    print(_line("x-tui run --backend local", x_tui))
    print(
        f"{'ratio':<26} best {min(x_tui) / min(direct):7.2f} x   "
        f"median {statistics.median(x_tui) / statistics.median(direct):7.2f} x"
    )
    overhead = statistics.median(x_tui) - statistics.median(direct)
    print(f"{'overhead':<26} median {overhead:7.3f} s per run")


if __name__ == "__main__":
    main()
