"""``x-tui status`` on a store full of hostile entries (:mod:`x_tui.testing.hostile_store`).

It ends (a deadline well above a normal run, never a measured threshold), lists every good run,
names each bad entry with its reason and exits 1; its peak memory stays that of a status on a
clean store of the same good runs, give or take what one bounded record may take.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from x_tui.testing.hostile_store import HostileStore, build_hostile_store

DEADLINE = 120
"""Seconds ``status`` may take before the test calls it hung (it takes under one here)."""

EXTRA_MEMORY_KB = 64 * 1024
"""How much more memory than on a clean store a status may take: a few bounded records' worth,
far below the 100 MB any entry of the corpus would cost if it were read."""


@dataclass(frozen=True)
class Status:
    """What one ``x-tui status`` process did."""

    returncode: int
    stdout: str
    stderr: str
    max_rss_kb: int


def status(state: Path, cwd: Path, *args: str) -> Status:
    """Run ``x-tui status ARGS`` on ``state``; its output and its own peak memory."""
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(state)}
    out, err = cwd / "status.out", cwd / "status.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "x_tui", "status", *args],
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
        give_up = time.monotonic() + DEADLINE
        # wait4 reaps the process and gives its own resource use (peak memory included).
        while True:
            pid, wait_status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > give_up:
                process.kill()
                raise AssertionError(f"x-tui status did not end within {DEADLINE} s")
            time.sleep(0.02)
    process.returncode = os.waitstatus_to_exitcode(wait_status)
    return Status(
        process.returncode,
        out.read_text(encoding="utf-8"),
        err.read_text(encoding="utf-8"),
        usage.ru_maxrss,
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
