"""The hello job's first task: greet, and save the greeting among the run's outputs."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path


def output_dir(name: str) -> Path:
    """The directory ``name`` under this task's outputs (``./outputs`` when run by hand)."""
    directory = Path(os.environ.get("AVITAI_OUTPUT_DIR", "outputs")) / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def main() -> int:
    """Print a few lines and write ``greeting/hello.txt`` and ``greeting/machine.json``."""
    print("hello from x-tui's demo project", flush=True)
    time.sleep(0.5)
    print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}")
    directory = output_dir("greeting")
    (directory / "hello.txt").write_text("hello, world\n", encoding="utf-8")
    machine = {"python": platform.python_version(), "system": platform.system()}
    (directory / "machine.json").write_text(json.dumps(machine, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {directory / 'hello.txt'}", flush=True)
    time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
