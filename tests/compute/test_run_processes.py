"""A run's process marker, reading it back from a hostile run directory, and the subreaper."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from x_tui.compute.store import new_run_id
from x_tui.compute.worker import run_processes
from x_tui.compute.worker.environment import child_environment
from x_tui.compute.worker.spec import JaxRuntime


def test_a_marker_is_written_once_private_and_read_back_only_for_its_run(tmp_path: Path) -> None:
    run_id = new_run_id("marked")
    marker = run_processes.new_marker(run_id)
    assert marker != run_processes.new_marker(run_id)
    run_processes.write_marker(tmp_path, marker)
    assert (tmp_path / run_processes.MARKER_FILE).stat().st_mode & 0o777 == 0o600
    assert run_processes.read_marker(tmp_path, run_id) == marker
    assert run_processes.read_marker(tmp_path, new_run_id("other")) is None
    with pytest.raises(FileExistsError):
        run_processes.write_marker(tmp_path, run_processes.new_marker(run_id))


@pytest.mark.parametrize(
    "content",
    [b"", b"RUN:", b"RUN:xyz", b"RUN:" + b"0" * 31, b"RUN:" + b"0" * 33, b"RUN:" + b"\xff" * 32],
)
def test_a_damaged_marker_is_no_marker(tmp_path: Path, content: bytes) -> None:
    run_id = new_run_id("damaged")
    (tmp_path / run_processes.MARKER_FILE).write_bytes(content.replace(b"RUN", run_id.encode()))
    assert run_processes.read_marker(tmp_path, run_id) is None


def test_a_marker_that_is_a_fifo_a_link_or_enormous_is_no_marker_and_never_blocks(
    tmp_path: Path,
) -> None:
    run_id = new_run_id("hostile")
    good = tmp_path / "good"
    good.mkdir()
    run_processes.write_marker(good, run_processes.new_marker(run_id))
    fifo, link, big = (tmp_path / name for name in ("fifo", "link", "big"))
    for directory in (fifo, link, big):
        directory.mkdir()
    os.mkfifo(fifo / run_processes.MARKER_FILE)
    (link / run_processes.MARKER_FILE).symlink_to(good / run_processes.MARKER_FILE)
    (big / run_processes.MARKER_FILE).write_bytes(f"{run_id}:".encode() + b"0" * (1 << 20))
    for directory in (fifo, link, big):
        assert run_processes.read_marker(directory, run_id) is None


def test_the_marker_survives_a_jobs_env_that_sets_the_variable() -> None:
    base = {"PATH": "/bin", run_processes.MARKER_VARIABLE: "run:abc"}
    env = child_environment(JaxRuntime(), {run_processes.MARKER_VARIABLE: "forged"}, base)
    assert env[run_processes.MARKER_VARIABLE] == "run:abc"
    without = child_environment(JaxRuntime(), {run_processes.MARKER_VARIABLE: "own"}, {})
    assert without[run_processes.MARKER_VARIABLE] == "own"


def test_away_from_linux_nothing_is_found_and_no_subreaper_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_processes, "_PROC", tmp_path / "no-proc")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert run_processes.marked_processes(run_processes.new_marker("x")) == []
    assert not run_processes.become_subreaper()
    run_processes.end_strays(keep=os.getpid())  # a no-op, not an error


ADOPTS = """
import os, subprocess, sys, time
from x_tui.compute.worker import run_processes
assert run_processes.become_subreaper()
spawner = (
    "import subprocess, sys; "
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
    "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)"
)
orphan = int(subprocess.run([sys.executable, "-c", spawner], capture_output=True).stdout)
for _ in range(200):
    if run_processes.proc_stat(orphan)[1] == os.getpid():
        break
    time.sleep(0.01)
print("adopted" if run_processes.proc_stat(orphan)[1] == os.getpid() else "not adopted")
run_processes.end_strays(keep=-1)
stat = run_processes.proc_stat(orphan)
print("gone" if stat is None else f"left: {stat[0]}")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux only")
def test_a_subreaper_adopts_a_setsid_orphan_then_ends_and_reaps_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ADOPTS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["adopted", "gone"]
