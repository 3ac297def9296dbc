"""The copy transport against a real sshd and rsync on 127.0.0.1, the worker under bubblewrap.

A fetch is checked against listings of the remote outputs taken before and after the copy: a file
that changes meanwhile, or a copy that differs, fails the fetch naming it and leaves the cluster
up. The sandbox keeps the system, the project and the inputs read-only, and can cut the network.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from x_tui.backends.skypilot import listing
from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.copy_transport import CopyTransport, FetchMismatch
from x_tui.backends.skypilot.ssh_mux import close_shared_connections, shared_sockets
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import ProviderError
from x_tui.compute.worker.manifest import TaskStatus, load_manifest
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec, Mount, MountAccess, Task
from x_tui.testing.contract import wait_until_final

from .fake_sky import fixtures
from .fake_sky.harness import FakeSky, SshServer, make_locked_project

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test: real processes, sshd or S3

fake = fixtures.fake_sky_over_ssh

WRITES = (
    "import os, pathlib\n"
    "out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'])\n"
    "(out / 'result').mkdir()\n"
    "(out / 'result' / 'value.txt').write_text('42')\n"
    "print('wrote', flush=True)\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_locked_project(tmp_path / "project", {"writes": WRITES})


def make_backend(fake: FakeSky, tmp_path: Path, **copy: JsonValue) -> SkyPilotBackend:
    return SkyPilotBackend(
        {"sky": str(fake.tool.link), "state_dir": str(tmp_path / "state"), "copy": dict(copy)}
    )


def job(*tasks: tuple[str, tuple[str, ...]], mounts: tuple[Mount, ...] = ()) -> JobSpec:
    return JobSpec(
        name="copied",
        tasks=tuple(Task(name=name, argv=argv, timeout_seconds=120.0) for name, argv in tasks),
        timeout_seconds=180.0,
        mounts=mounts,
    )


def finished(backend: SkyPilotBackend, project: Path, spec: JobSpec) -> tuple[RunHandle, RunState]:
    handle = backend.submit(spec, project=project)
    return handle, wait_until_final(backend, handle)


def rsync_wrapper(tmp_path: Path, before: str = "", after: str = "") -> str:
    """An rsync that runs shell lines before and after the real one (``$dest`` is its target)."""
    script = tmp_path / "rsync"
    script.write_text(
        "#!/bin/sh\n"
        'for dest in "$@"; do :; done\n'
        f"{before}\n"
        f'{shutil.which("rsync")} "$@" || exit $?\n'
        f"{after}\n"
    )
    script.chmod(0o755)
    return str(script)


def test_outputs_come_back_verified_and_the_cluster_stays_up_until_teardown(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake, tmp_path)
    handle, state = finished(backend, project, job(("writes", ("python", "scripts/writes.py"))))
    assert state is RunState.SUCCEEDED
    fetched = backend.fetch(handle, tmp_path / "fetched")
    assert (fetched / "writes" / "result" / "value.txt").read_text() == "42"
    assert fake.clusters() == [handle.details["cluster"]]
    again = backend.fetch(handle, tmp_path / "fetched")  # a second fetch replaces the first
    assert again == fetched
    assert (again / "writes" / "result" / "value.txt").read_text() == "42"
    assert [path.name for path in (tmp_path / "fetched").iterdir()] == [handle.run_id]
    backend.teardown(handle)
    assert fake.clusters() == []
    assert backend.status(handle) is RunState.SUCCEEDED


def test_a_remote_change_during_the_fetch_fails_it_naming_the_file_and_keeps_the_cluster(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake, tmp_path)
    handle, _ = finished(backend, project, job(("writes", ("python", "scripts/writes.py"))))
    outputs = fake.remote(handle.details["cluster"], f".x-tui/{handle.run_id}/outputs")
    assert isinstance(backend.transport, CopyTransport)
    backend.transport.rsync = rsync_wrapper(
        tmp_path, after=f"echo late >> {outputs / 'writes' / 'result' / 'value.txt'}"
    )
    with pytest.raises(FetchMismatch) as mismatch:
        backend.fetch(handle, tmp_path / "fetched")
    message = str(mismatch.value)
    assert "changed while they were fetched: writes/result/value.txt (2 bytes became 7)" in message
    assert f"cluster {handle.details['cluster']} is left up" in message
    assert not (tmp_path / "fetched" / handle.run_id).exists()
    assert list((tmp_path / "fetched").iterdir()) == []  # no partial copy is left either
    assert fake.clusters() == [handle.details["cluster"]]


def test_a_corrupted_copy_fails_the_fetch_naming_the_file(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake, tmp_path)
    handle, _ = finished(backend, project, job(("writes", ("python", "scripts/writes.py"))))
    assert isinstance(backend.transport, CopyTransport)
    backend.transport.rsync = rsync_wrapper(
        tmp_path, after='printf 43 > "$dest/writes/result/value.txt"; touch "$dest/stray"'
    )
    with pytest.raises(FetchMismatch) as mismatch:
        backend.fetch(handle, tmp_path / "fetched")
    message = str(mismatch.value)
    assert "the copy of run" in message
    assert "stray (added)" in message
    assert "writes/result/value.txt (content differs)" in message
    assert not (tmp_path / "fetched" / handle.run_id).exists()
    assert fake.clusters() == [handle.details["cluster"]]


SANDBOX_TASKS = (
    ("project", ("python", "-c", "open('scribble.txt', 'w')")),
    ("home", ("python", "-c", "import pathlib; (pathlib.Path.home() / 'x').write_text('x')")),
    ("tmp", ("python", "-c", "open('/tmp/x', 'w').write('ok')")),
    ("outputs", ("python", "scripts/writes.py")),
)


def test_the_worker_may_write_only_tmp_and_its_outputs(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake, tmp_path)
    handle, state = finished(backend, project, job(*SANDBOX_TASKS))
    assert state is RunState.FAILED
    manifest = load_manifest(backend.fetch(handle, tmp_path / "fetched") / "manifest.json")
    assert manifest is not None
    statuses = {task.name: task.status for task in manifest.tasks}
    assert statuses == {
        "project": TaskStatus.FAILED,
        "home": TaskStatus.FAILED,
        "tmp": TaskStatus.SUCCEEDED,
        "outputs": TaskStatus.SUCCEEDED,
    }
    stderr = (tmp_path / "fetched" / handle.run_id / "project" / "stderr.log").read_text()
    assert "Read-only file system" in stderr


def connects(port: int) -> tuple[str, ...]:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected')"
    return ("python", "-c", code)


@pytest.mark.parametrize(("isolated", "expected"), [(False, "succeeded"), (True, "failed")])
def test_network_isolation_cuts_the_worker_off(
    fake: FakeSky,
    project: Path,
    tmp_path: Path,
    sshd: SshServer,
    *,
    isolated: bool,
    expected: str,
) -> None:
    backend = make_backend(fake, tmp_path, network_isolation=isolated)
    _, state = finished(backend, project, job(("connects", connects(sshd.port))))
    assert state.value == expected


def test_an_input_is_copied_to_the_cluster_and_cannot_be_written(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    data = tmp_path / "datasets"
    data.mkdir()
    (data / "hello.txt").write_text("hello from the input")
    backend = make_backend(fake, tmp_path, sources={"datasets": str(data)})
    reads = ("python", "-c", "import sys; print(open(sys.argv[1]).read())", "/data/hello.txt")
    scribbles = ("python", "-c", "import sys; open(sys.argv[1], 'a')", "/data/hello.txt")
    spec = job(
        ("reads", reads),
        ("scribbles", scribbles),
        mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),),
    )
    handle, state = finished(backend, project, spec)
    assert state is RunState.FAILED
    lines = list(backend.logs(handle, follow=False))
    assert "[reads] hello from the input" in lines
    assert any("[scribbles] " in line and "Read-only file system" in line for line in lines)
    assert (data / "hello.txt").read_text() == "hello from the input"


def accepted_connections(sshd: SshServer) -> int:
    """How many SSH connections the test sshd let in so far (its log says each)."""
    log = (sshd.key.parent / "sshd.log").read_text(errors="replace")
    return log.count("Accepted publickey")


def test_peek_reads_a_running_runs_file_over_ssh_and_refuses_links(
    fake: FakeSky, project: Path, tmp_path: Path, sshd: SshServer
) -> None:
    backend = make_backend(fake, tmp_path)
    code = (
        "import os, pathlib, time\n"
        "out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'])\n"
        "(out / 'progress.txt').write_text('step 3')\n"
        "os.symlink('/etc/passwd', out / 'secret')\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    before = accepted_connections(sshd)
    handle = backend.submit(job(("peeks", ("python", "-c", code))), project=project)
    deadline = time.monotonic() + 120
    while backend.peek(handle, "peeks/progress.txt") is None:
        assert time.monotonic() < deadline, "the task never wrote progress.txt"
        time.sleep(0.2)
    opened = accepted_connections(sshd)
    for _ in range(10):  # the manifest, devices and attempts of a run, read again and again
        assert backend.peek(handle, "peeks/progress.txt") == b"step 3"
        assert backend.peek(handle, "peeks/missing.txt") is None
    assert opened == before + 1  # the first peek's connection...
    assert accepted_connections(sshd) == opened  # ...carried every read after it
    sockets = shared_sockets()
    assert sockets
    close_shared_connections()  # as at exit: the master connections end
    assert not any(socket.exists() for socket in sockets)
    assert shared_sockets() == []
    with pytest.raises(ValueError, match="is a link"):
        backend.peek(handle, "peeks/secret")
    with pytest.raises(ValueError, match="not a path inside"):
        backend.peek(handle, "../../.ssh/authorized_keys")
    backend.cancel(handle)
    assert backend.status(handle) is RunState.CANCELLED
    assert fake.clusters() == []


def test_once_the_cluster_is_gone_a_verified_copy_answers_for_the_run(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake, tmp_path)
    handle = backend.submit(job(("writes", ("python", "scripts/writes.py"))), project=project)
    for _ in backend.logs(handle, follow=True):
        pass  # the job ended; its state is left unread, as when nobody looked
    backend.fetch(handle, tmp_path / "fetched")
    fake.down(handle.details["cluster"])  # its lifetime ran out
    fresh = make_backend(fake, tmp_path)
    assert fresh.status(handle) is RunState.SUCCEEDED
    assert "[writes] wrote" in list(fresh.logs(handle, follow=False))
    final = json.loads((fresh.runs / handle.run_id / "final.json").read_text())
    assert final == {"state": "succeeded", "seen": "outputs"}


def test_a_run_whose_cluster_went_before_anyone_fetched_it_says_its_outputs_are_lost(
    fake: FakeSky, project: Path, tmp_path: Path
) -> None:
    backend = make_backend(fake, tmp_path)
    handle = backend.submit(job(("writes", ("python", "scripts/writes.py"))), project=project)
    for _ in backend.logs(handle, follow=True):
        pass
    fake.down(handle.details["cluster"])
    with pytest.raises(ProviderError, match=r"is gone, and with it the run's outputs"):
        backend.status(handle)


def test_a_sparse_output_is_fetched_sparse(fake: FakeSky, project: Path, tmp_path: Path) -> None:
    sparse = (
        "import os, pathlib; out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR']);"
        " big = open(out / 'big.bin', 'wb'); big.write(b'head'); big.truncate(64 << 20)"
    )
    backend = make_backend(fake, tmp_path)
    handle, state = finished(backend, project, job(("sparse", ("python", "-c", sparse))))
    assert state is RunState.SUCCEEDED

    fetched = backend.fetch(handle, tmp_path / "fetched")

    copy = fetched / "sparse" / "big.bin"
    assert copy.stat().st_size == 64 << 20
    # 64 MiB is enough to tell (a dense copy takes all of them, a sparse one a few KiB); every
    # byte of it is read and hashed three times, on a cluster and here.
    assert copy.stat().st_blocks * 512 < 4 << 20, "rsync must keep the holes"
    with copy.open("rb") as data:
        assert data.read(4) == b"head"


def test_the_remote_read_refuses_fifos_and_links_and_bounds_what_it_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "outputs"
    (root / "t").mkdir(parents=True)
    (root / "t" / "stdout.log").write_bytes(b"x" * 100)
    os.mkfifo(root / "t" / "pipe")
    (root / "t" / "link").symlink_to(root / "t" / "stdout.log")

    assert listing.read(str(root), "t/stdout.log") == b"x" * 100
    assert listing.read(str(root), "t/pipe") == listing.EXIT_REFUSED
    assert listing.read(str(root), "t/link") == listing.EXIT_REFUSED
    assert listing.read(str(root), "t/none") == listing.EXIT_MISSING
    monkeypatch.setattr(listing, "READ_LIMIT", 99)
    assert listing.read(str(root), "t/stdout.log") == listing.EXIT_TOO_LARGE
