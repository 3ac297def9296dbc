"""``x-tui status`` on a store full of hostile entries (:mod:`x_tui.testing.hostile_store`).

It ends (a deadline well above a normal run, never a measured threshold), lists every good run,
names each bad entry with its reason and exits 1; its peak memory stays that of a status on a
clean store of the same good runs, give or take what one bounded record may take.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from x_tui.compute.worker.record_files import MANIFEST_BYTES
from x_tui.testing.hostile_store import HostileStore, build_hostile_store

DEADLINE = 120
"""Seconds ``status`` may take before the test calls it hung (it takes under one here)."""

EXTRA_MEMORY_KB = 5 * MANIFEST_BYTES // 1024
"""How much more memory than on a clean store a status may take: what the largest record it may
read costs (a manifest just under its size cap: its bytes, its text and the objects parsed from
it), far below what the corpus's 100 MB files and 100,000-deep nesting would cost if read."""


@dataclass(frozen=True)
class Status:
    """What one ``x-tui status`` process did."""

    returncode: int
    stdout: str
    stderr: str
    max_rss_kb: int


MEASURE = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(f"{code} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""
"""Runs a command from a fresh, small interpreter and writes its exit code and peak memory: a
child forked straight from pytest would count pytest's own memory in its peak."""


def status(state: Path, cwd: Path, *args: str) -> Status:
    """Run ``x-tui status ARGS`` on ``state``; its output and its own peak memory."""
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(state)}
    out, err, figures = cwd / "status.out", cwd / "status.err", cwd / "status.figures"
    command = [sys.executable, "-m", "x_tui", "status", *args]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        measuring = subprocess.Popen(
            [sys.executable, "-c", MEASURE, str(figures), *command],
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            measuring.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            os.killpg(measuring.pid, signal.SIGKILL)
            measuring.wait()
            raise AssertionError(f"x-tui status did not end within {DEADLINE} s") from None
    code, max_rss_kb = figures.read_text().split()
    return Status(
        int(code),
        out.read_text(encoding="utf-8"),
        err.read_text(encoding="utf-8"),
        int(max_rss_kb),
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> HostileStore:
    return build_hostile_store(tmp_path_factory.mktemp("hostile") / "state")


def test_status_lists_every_good_run_names_each_bad_entry_and_exits_1(
    corpus: HostileStore, tmp_path: Path
) -> None:
    assert len(corpus.bad) >= 40
    done = status(corpus.state, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if not line.startswith("sweep")]
    assert listed == list(corpus.good)
    problems = done.stderr.splitlines()
    for path, reason in corpus.bad.items():
        named = [line for line in problems if line.startswith(f"x-tui: {path}: ")]
        assert len(named) == 1, f"{path} is not named once: {named}"
        assert reason in named[0], named[0]
    for run_id, reason in corpus.bad_manifests.items():
        [named] = [line for line in problems if line.startswith(f"x-tui: {run_id}: ")]
        assert "manifest.json" in named
        assert reason in named
    assert len(problems) == len(corpus.bad) + len(corpus.bad_manifests)
    assert all(len(line) < 1000 for line in problems)


def test_status_json_holds_the_same(corpus: HostileStore, tmp_path: Path) -> None:
    done = status(corpus.state, tmp_path, "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert [run["run_id"] for run in document["runs"]] == list(corpus.good)
    unreadable = {entry["path"]: entry["reason"] for entry in document["unreadable"]}
    assert set(unreadable) == {str(path) for path in corpus.bad}
    for path, reason in corpus.bad.items():
        assert reason in unreadable[str(path)]


def test_status_takes_no_more_memory_than_on_a_clean_store_of_the_same_runs(
    corpus: HostileStore, tmp_path: Path
) -> None:
    clean = build_hostile_store(tmp_path / "clean", hostile=False)
    assert clean.good == corpus.good
    reference = status(clean.state, tmp_path)
    assert reference.returncode == 0, reference.stderr
    hostile = status(corpus.state, tmp_path)
    assert hostile.returncode == 1
    print(
        f"peak memory of x-tui status: {hostile.max_rss_kb} kB on the hostile store,"
        f" {reference.max_rss_kb} kB on a clean store of the same {len(clean.good)} runs"
        f" (x{hostile.max_rss_kb / reference.max_rss_kb:.2f})"
    )
    assert hostile.max_rss_kb < reference.max_rss_kb + EXTRA_MEMORY_KB


def test_a_single_run_or_sweep_asked_for_by_name_is_refused_with_its_reason(
    corpus: HostileStore, tmp_path: Path
) -> None:
    fifo = next(path for path, reason in corpus.bad.items() if reason == "FIFO")
    done = status(corpus.state, tmp_path, fifo.stem)
    assert done.returncode == 2
    assert done.stderr.strip() == f"x-tui: {fifo}: is a FIFO, not a regular file"
    misfiled = next(p for p, why in corpus.bad.items() if why.startswith("filed under another r"))
    done = status(corpus.state, tmp_path, misfiled.stem)
    assert done.returncode == 2
    assert "filed under another run's name" in done.stderr
    assert corpus.good[0] not in done.stdout
