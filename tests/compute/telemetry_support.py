"""The worker zipapp run for real on one ``python -c`` task, for the telemetry tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from x_tui.compute.worker.records import dumps_compact
from x_tui.compute.worker.spec import JobSpec, Task
from x_tui.compute.worker_bundle import write_worker_zipapp


def run_worker(
    tmp_path: Path, code: str, *, path: str, extra: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the worker zipapp on one ``python -c code`` task; its result and outputs.

    The task runs this interpreter by its path: a ``python`` found on ``PATH`` may be a launcher
    (pyenv's shim runs shell helpers before the interpreter), whose helpers a sample would count
    among the run's processes."""
    spec = JobSpec(
        name="job",
        tasks=(
            Task(
                name="train", argv=(sys.executable, "-c", textwrap.dedent(code)), timeout_seconds=60
            ),
        ),
        timeout_seconds=60,
    )
    (tmp_path / "spec.json").write_text(dumps_compact(spec))
    worker = write_worker_zipapp(tmp_path)
    outputs = tmp_path / "outputs"
    env = {**os.environ, "PATH": path, "FAKE_GPUS_SLEEP": "0.1"}
    done = subprocess.run(
        [
            sys.executable,
            str(worker),
            "--spec",
            str(tmp_path / "spec.json"),
            "--project",
            str(tmp_path),
            "--outputs",
            str(outputs),
            "--telemetry-seconds",
            "0.3",
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    return done, outputs
