"""``scripts/suite_cpu.py`` counts a suite's CPU where it is spent: in the worker, per test, and
in each interpreter a test starts, named by its command line (``-c``'s code included)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "suite_cpu.py"

TESTS = """
import subprocess, sys

def test_busy_in_a_child():
    subprocess.run([sys.executable, "-c", "sum(range(10**7))"], check=True)

def test_busy_here():
    sum(range(10**7))

def test_idle():
    pass
"""


def test_each_tests_cpu_and_each_interpreters_command_line_are_reported(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(TESTS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--top", "3", "-p", "no:cacheprovider", "test_tiny.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = done.stdout
    assert "3 passed" in report
    assert re.search(r"pytest's 1 worker\(s\) +\d+\.\d", report)
    # The child is named by its code, once, with the CPU it spent (about a fifth of a second here).
    child = re.search(
        r"^ +(\d+\.\d) +1 +\d+\.\d+ +python[0-9.]* -c sum\(range\(10\*\*7\)\)$", report, re.M
    )
    assert child is not None, report
    assert float(child.group(1)) > 0.05
    # Each test is ranked where its CPU went: in the worker, or in the child it waited for.
    in_worker = report.split("Tests by CPU s in the worker:")[1].split("\n\n")[0]
    in_children = report.split("Tests by CPU s in children it waited for:")[1].split("\n\n")[0]
    assert in_worker.strip().splitlines()[0].endswith("test_tiny.py::test_busy_here")
    assert in_children.strip().splitlines()[0].endswith("test_tiny.py::test_busy_in_a_child")
    assert re.search(r"^ +\d+\.\d +test_tiny\.py$", report, re.M)
