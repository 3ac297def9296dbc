"""What the local backend's status keeps between two asks: a manifest parsed again only once its
file changed, a worker proven again only once its pid shows another process, a marker read until
found. Real files and real processes; each change a run can make is seen at the next ask."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from x_tui.backends.local import process as local_process
from x_tui.backends.local import status_memo
from x_tui.backends.local.status_memo import StatusMemo
from x_tui.compute.worker import run_processes
from x_tui.compute.worker.manifest import MANIFEST_NAME, JobManifest, write_manifest
from x_tui.compute.worker.records import RecordError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")


def _aged(path: Path, seconds_ago: float) -> None:
    when = time.time() - seconds_ago
    os.utime(path, (when, when))


def test_a_manifest_is_parsed_again_only_once_its_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[Path] = []
    real_load = status_memo.load_manifest

    def load(path: Path) -> JobManifest | None:
        parsed.append(path)
        return real_load(path)

    monkeypatch.setattr(status_memo, "load_manifest", load)
    # Files aged below are a minute old; a file just written stays fresh however slow the machine.
    monkeypatch.setattr(status_memo, "SETTLED_SECONDS", 30.0)
    memo = StatusMemo()
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    path = outputs / MANIFEST_NAME
    assert memo.manifest(path) is None  # none yet
    write_manifest(outputs, JobManifest(job="aaa"))
    _aged(path, 60)
    first_mtime = os.stat(path).st_mtime_ns
    assert memo.manifest(path) == JobManifest(job="aaa")
    assert memo.manifest(path) == JobManifest(job="aaa")
    assert len(parsed) == 2  # the missing file, then once

    # Renamed over (as the worker writes it), same size, the very same times: another inode.
    write_manifest(outputs, JobManifest(job="zzz"))
    os.utime(path, ns=(first_mtime, first_mtime))
    assert memo.manifest(path) == JobManifest(job="zzz")
    # Rewritten in place to the same size: another modification time.
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"zzz"', '"bbb"'), encoding="utf-8")
    _aged(path, 50)
    changed = memo.manifest(path)
    assert changed is not None
    assert changed.job == "bbb"
    assert len(parsed) == 4

    # A file changed within the last moments is parsed at every ask (a coarse clock could hide
    # a second change within the same tick).
    write_manifest(outputs, JobManifest(job="ccc"))
    for _ in range(3):
        fresh = memo.manifest(path)
        assert fresh is not None
        assert fresh.job == "ccc"
    assert len(parsed) == 7

    # Damaged, or gone: said at every ask, as before.
    path.write_text("{not json", encoding="utf-8")
    _aged(path, 60)
    for _ in range(2):
        with pytest.raises(RecordError, match=MANIFEST_NAME):
            memo.manifest(path)
    path.unlink()
    assert memo.manifest(path) is None


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def test_a_worker_proven_once_is_proven_again_by_its_pid_and_start_time_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    worker = [*sleeper, "--spec", str(run_dir / "spec.json"), "--outputs", str(run_dir / "outputs")]
    other = [*sleeper, "--spec", str(run_dir / "spec.json"), "--outputs", str(tmp_path)]
    sleepers.extend(subprocess.Popen(argv) for argv in (worker, other))
    proofs: list[int] = []
    real_proof = local_process.is_worker

    def proof(run: local_process.RunProcesses) -> bool:
        proofs.append(run.pid)
        return real_proof(run)

    monkeypatch.setattr(local_process, "is_worker", proof)
    memo = StatusMemo()

    def processes(pid: int) -> local_process.RunProcesses:
        return local_process.RunProcesses(pid=pid, run_dir=run_dir, start_time=None, marker=None)

    deadline = time.monotonic() + 30
    while not memo.is_worker(processes(sleepers[0].pid)):  # its command line shows once exec'd
        assert time.monotonic() < deadline, "the worker was never recognised"
        time.sleep(0.01)
    proofs.clear()
    for _ in range(3):
        assert memo.is_worker(processes(sleepers[0].pid))
    assert proofs == []  # proven once: not read again
    # A process that is not the run's worker is checked in full at every ask, and never is.
    for _ in range(2):
        assert not memo.is_worker(processes(sleepers[1].pid))
    assert proofs == [sleepers[1].pid] * 2

    # The pid shows another process (another start time): not the worker, and proven in full
    # from then on.
    real_stat = run_processes.proc_stat

    def reused(pid: int) -> tuple[str, int, int, str] | None:
        found = real_stat(pid)
        return None if found is None else (*found[:3], found[3] + "0")

    monkeypatch.setattr(run_processes, "proc_stat", reused)
    assert not memo.is_worker(processes(sleepers[0].pid))
    monkeypatch.setattr(run_processes, "proc_stat", real_stat)
    proofs.clear()
    assert memo.is_worker(processes(sleepers[0].pid))
    assert proofs == [sleepers[0].pid]

    # The worker exits (a zombie, not reaped yet), then is reaped: not alive either way.
    sleepers[0].kill()
    deadline = time.monotonic() + 30
    while memo.is_worker(processes(sleepers[0].pid)):
        assert time.monotonic() < deadline, "the killed worker still reads as alive"
        time.sleep(0.01)
    sleepers[0].wait()
    assert not memo.is_worker(processes(sleepers[0].pid))


def test_a_marker_is_read_until_it_is_found_then_kept(tmp_path: Path) -> None:
    memo = StatusMemo()
    run_id = "marked-20261201T000000Z-aaaaaa"
    assert memo.marker(tmp_path, run_id) is None
    marker = run_processes.new_marker(run_id)
    run_processes.write_marker(tmp_path, marker)
    assert memo.marker(tmp_path, run_id) == marker
    (tmp_path / run_processes.MARKER_FILE).unlink()
    assert memo.marker(tmp_path, run_id) == marker  # written once, before the worker starts
