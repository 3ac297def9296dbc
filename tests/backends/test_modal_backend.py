"""The modal backend against the fake ``modal``: what it builds, and every way a run ends."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.backends.modal.logs import LONGEST_DRAIN
from x_tui.compute.backend import RunState
from x_tui.compute.extensions import ResourceRequest
from x_tui.compute.outputs import OutputTooLargeError
from x_tui.compute.resources import parse_accelerators
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import BackendUnavailableError, BadRecordError, ProviderError
from x_tui.compute.worker.manifest import MANIFEST_NAME
from x_tui.compute.worker.spec import JobSpec, Mount, MountAccess, Task
from x_tui.testing.contract import SCRIPTS, wait_for_line, wait_until_final

from .fake_modal import fixtures as modal_fixtures
from .fake_modal.harness import FakeModal, make_project

fake = modal_fixtures.fake_modal


LOUD = "for i in range(150):\n    print(f'line {i}', flush=True)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A packaged project with the contract's scripts and a loud one."""
    return make_project(tmp_path / "project", {**SCRIPTS, "loud": LOUD})


@pytest.fixture
def backend(tmp_path: Path, fake: FakeModal) -> ModalBackend:
    """A modal backend on the fake, with short waits."""
    made = ModalBackend(
        {
            "outputs_volume": "runs",
            "volumes": {"datasets": "ds"},
            "state_dir": str(tmp_path / "state"),
        }
    )
    made.poll_seconds = 0.2
    made.drain_seconds = 0.5
    return made


def _spec(*scripts: str, **changes: Any) -> JobSpec:
    tasks = tuple(
        Task(name=name, argv=("python", f"scripts/{name}.py"), timeout_seconds=120.0)
        for name in scripts
    )
    fields: dict[str, Any] = {"name": "job", "tasks": tasks, "timeout_seconds": 180.0}
    fields.update(changes)
    return JobSpec(**fields)


@pytest.fixture
def running(backend: ModalBackend, project: Path) -> Iterator[RunHandle]:
    """A run whose task sleeps, its first line already logged; cancelled afterwards."""
    handle = backend.submit(_spec("sleeps"), project=project)
    wait_for_line(backend, handle, "[sleeps] sleeping")
    yield handle
    if not backend.status(handle).is_final:
        backend.cancel(handle)


def test_submit_builds_the_planned_image_and_a_serialized_function(
    backend: ModalBackend, project: Path, fake: FakeModal
) -> None:
    """The layers built are the plan's, in order; the function is serialized and by value."""
    fake.volume("ds").mkdir(parents=True)
    spec = _spec(
        "writes", mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),)
    )
    request = ResourceRequest(accelerator=parse_accelerators(["H100!:2", "A100-80GB:2"]))
    plan = backend.plan(spec, project=project, request=request)
    handle = backend.submit(spec, project=project, request=request)
    last = fake.last()
    assert [layer["method"] for layer in last["image"]] == [
        layer["method"] for layer in plan["image"]
    ]
    assert last["image"][2]["args"] == [str(project.resolve()), "/project"]
    assert last["image"][2]["options"]["ignore"] == plan["image"][2]["options"]["ignore"]
    assert last["function"] == {
        "gpu": ["H100!:2", "A100-80GB:2"],
        "cpu": None,
        "memory": None,
        "timeout": 180,
        "serialized": True,
        "volumes": {
            "/outputs": {"name": "runs", "read_only": False},
            "/data": {"name": "ds", "read_only": True},
        },
        "secrets": [],
        "module": "x_tui_modal_container",
    }
    assert fake.module.LAST["spawn"]["by"] == "value"
    assert handle.details["app_id"].startswith("ap-")
    assert handle.details["call_id"].startswith("fc-")
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED


def test_the_image_never_holds_the_venv_or_what_the_project_ignores(
    backend: ModalBackend, project: Path, fake: FakeModal
) -> None:
    """The baked source leaves out .venv (always), .gitignore'd and ignored files."""
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").write_text("")
    (project / "data").mkdir()
    (project / "data" / "big.bin").write_text("x")
    (project / ".gitignore").write_text("data/\n")
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    (baked,) = (fake.root / "images").glob("*/project")
    shipped = {path.relative_to(baked).as_posix() for path in baked.rglob("*")}
    assert "scripts/writes.py" in shipped
    assert "pyproject.toml" in shipped
    assert not {".venv", "data"} & {name.split("/")[0] for name in shipped}


def test_a_job_writes_its_outputs_to_its_own_directory_of_the_volume(
    backend: ModalBackend, project: Path, fake: FakeModal
) -> None:
    """``<outputs volume>/<run_id>/`` holds the manifest; the container committed the Volume."""
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    run_dir = fake.volume("runs") / handle.run_id
    assert json.loads((run_dir / MANIFEST_NAME).read_text())["finished"] is True
    assert (fake.root / "commits-runs").read_text().count("commit") >= 1


def test_status_is_running_while_the_call_has_no_result(
    backend: ModalBackend, running: RunHandle
) -> None:
    """A call still going (the SDK raises the builtin TimeoutError) is running."""
    assert backend.status(running) is RunState.RUNNING


def test_peek_reads_the_runs_files_on_the_volume_while_it_runs(
    backend: ModalBackend, running: RunHandle
) -> None:
    """A task's log is readable before the run ends; a missing file is None."""
    log = backend.peek(running, "sleeps/stdout.log")
    assert log is not None
    assert b"sleeping" in log
    assert backend.peek(running, "nothing/here.txt") is None
    for outside in ("../other/manifest.json", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(ValueError, match="is not a path inside"):
            backend.peek(running, outside)


def test_cancel_stops_the_call_its_container_and_the_app_and_twice_is_harmless(
    backend: ModalBackend, running: RunHandle, fake: FakeModal
) -> None:
    """Cancelled once: the container is terminated and the app stopped; again: nothing more."""
    backend.cancel(running)
    assert backend.status(running) is RunState.CANCELLED
    assert fake.module.LAST["cancel"] == {"terminate_containers": True}
    assert fake.module.LAST["stop"] == {"app_id": running.details["app_id"]}
    before = fake.rpcs()
    backend.cancel(running)
    assert backend.status(running) is RunState.CANCELLED
    assert fake.rpcs() == before


def test_cancel_of_a_run_whose_app_is_gone_still_cancels_it(
    backend: ModalBackend, running: RunHandle, fake: FakeModal
) -> None:
    """An app Modal no longer knows needs no stopping: the run ends cancelled, no error."""
    (fake.root / "apps" / f"{running.details['app_id']}.json").unlink()
    backend.cancel(running)
    assert backend.status(running) is RunState.CANCELLED
    assert "stop" not in fake.module.LAST


def test_a_handle_without_its_call_is_refused_naming_it(
    backend: ModalBackend, running: RunHandle
) -> None:
    """A handle whose details lost the call id is a bad record, not a crash."""
    broken = dataclasses.replace(running, details={"app_id": running.details["app_id"]})
    with pytest.raises(BadRecordError, match="details have no Modal call_id"):
        backend.status(broken)


def test_a_cancel_is_remembered_by_a_new_backend(
    backend: ModalBackend, running: RunHandle, tmp_path: Path
) -> None:
    """The marker under the state directory keeps the run cancelled for every later reader."""
    backend.cancel(running)
    fresh = ModalBackend(dict(running.settings))
    assert fresh.status(running) is RunState.CANCELLED


def test_a_call_that_ended_without_a_finished_manifest_is_failed(
    backend: ModalBackend, running: RunHandle, fake: FakeModal
) -> None:
    """A container that died (killed, out of memory, preempted) leaves the run failed."""
    pid = json.loads((fake.root / "calls" / f"{running.details['call_id']}.json").read_text())
    fake.module._fake.kill_container(int(pid["pid"]))
    assert wait_until_final(backend, running) is RunState.FAILED


@pytest.mark.parametrize("error", ["OutputExpiredError", "FunctionTimeoutError", "RemoteError"])
def test_a_call_that_failed_or_expired_reads_the_manifest(
    backend: ModalBackend,
    project: Path,
    fake: FakeModal,
    monkeypatch: pytest.MonkeyPatch,
    error: str,
) -> None:
    """Modal's errors from get() end the call: a finished manifest decides, else failed."""
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED

    def raises(self: object, timeout: float | None = None, *, index: int = 0) -> None:
        raise getattr(fake.module.exception, error)("gone")

    monkeypatch.setattr(fake.module.FunctionCall, "get", raises)
    assert backend.status(handle) is RunState.SUCCEEDED
    manifest = fake.volume("runs") / handle.run_id / MANIFEST_NAME
    manifest.write_text(manifest.read_text().replace('"finished": true', '"finished": false'))
    assert backend.status(handle) is RunState.FAILED
    manifest.unlink()
    assert backend.status(handle) is RunState.FAILED


def test_logs_without_follow_hold_every_line_not_only_the_last_hundred(
    backend: ModalBackend, project: Path
) -> None:
    """The fetch asks for the range since submission: all 150 lines come back."""
    handle = backend.submit(_spec("loud"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    lines = list(backend.logs(handle, follow=False))
    assert [line for line in lines if line.startswith("[loud] line ")] == [
        f"[loud] line {i}" for i in range(150)
    ]


def test_following_ends_with_the_run_even_when_the_app_outlives_it(
    backend: ModalBackend, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A detached app whose stream never ends is drained and stopped once the run is final."""
    monkeypatch.setenv("FAKE_MODAL_APP_LINGERS", "1")
    handle = backend.submit(_spec("writes"), project=project)
    lines = list(backend.logs(handle, follow=True))
    assert lines.count("[writes] hello from the task") == 1
    assert backend.status(handle) is RunState.SUCCEEDED


def test_a_short_runs_lines_are_followed_even_when_the_stream_connects_after_its_end(
    backend: ModalBackend, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`modal app logs` says nothing for longer than the drain (it is still connecting) and the
    run is over by then: its lines come from one fetch of the whole log, each once."""
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    monkeypatch.setenv("FAKE_MODAL_APP_LINGERS", "1")
    monkeypatch.setenv("FAKE_MODAL_LOGS_START_SECONDS", str(backend.drain_seconds * 3))
    lines = list(backend.logs(handle, follow=True))
    assert lines.count("[writes] hello from the task") == 1


def test_a_followed_log_is_read_until_it_falls_silent_once_the_run_is_final(
    backend: ModalBackend, project: Path, fake: FakeModal
) -> None:
    """Lines still coming after the run's end are all read: the drain waits for silence, each
    line starting it again, rather than stopping a fixed time after the end."""
    backend.drain_seconds = 1.5  # a gap between two lines stays far below it on a busy machine
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    app_log = fake.root / "apps" / f"{handle.details['app_id']}.log"
    stopped = fake.root / "apps" / f"{handle.details['app_id']}.stopped"
    stopped.unlink(missing_ok=True)  # the stream goes on
    late = [f"late line {index}" for index in range(12)]

    def write_late() -> None:
        for line in late:  # one every sixth of a drain: two drains in all
            time.sleep(backend.drain_seconds / 6)
            with app_log.open("a") as out:
                out.write(line + "\n")
        stopped.touch()

    writer = threading.Thread(target=write_late)
    writer.start()
    try:
        lines = list(backend.logs(handle, follow=True))
    finally:
        writer.join()
    assert [line for line in lines if line.startswith("late line")] == late


def test_a_followed_log_that_never_falls_silent_still_ends_after_the_run(
    backend: ModalBackend, project: Path, fake: FakeModal
) -> None:
    """A process the run left behind prints for ever: the follow stops a bounded time after the
    run's end (LONGEST_DRAIN drains), with what it read until then."""
    backend.drain_seconds = 0.25
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    app_log = fake.root / "apps" / f"{handle.details['app_id']}.log"
    (fake.root / "apps" / f"{handle.details['app_id']}.stopped").unlink(missing_ok=True)
    done = threading.Event()

    def write_for_ever() -> None:
        while not done.wait(0.02):
            with app_log.open("a") as out:
                out.write("still here\n")

    writer = threading.Thread(target=write_for_ever)
    writer.start()
    lines: list[str] = []
    arrivals: list[float] = []

    def follow() -> None:
        for line in backend.logs(handle, follow=True):
            lines.append(line)
            arrivals.append(time.monotonic())

    follower = threading.Thread(target=follow, daemon=True)
    started = time.monotonic()
    try:
        follower.start()
        follower.join(60)
        ended = time.monotonic()
        assert not follower.is_alive(), "the follow did not end within a minute"
        assert writer.is_alive()  # the stream was still going when the follow ended
    finally:
        done.set()
        writer.join()
    assert "still here" in lines
    took = ended - started
    # Ended by the bound, not by a silence: no sooner than the drains the bound allows (the run
    # was found final within the first poll or two). Only where the stream was indeed never
    # silent for a drain, as seen here: a machine loaded enough to stall the writer, the fake's
    # stream or this reader for that long makes a silence, which rightly ends the follow sooner.
    gaps = [later - earlier for earlier, later in itertools.pairwise([started, *arrivals, ended])]
    if max(gaps) < backend.drain_seconds:
        assert LONGEST_DRAIN * backend.drain_seconds <= took


def test_fetch_refuses_an_entry_that_leads_outside_the_run(
    backend: ModalBackend,
    project: Path,
    fake: FakeModal,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """An entry of another run, or with '..', refuses the whole fetch; nothing is written."""
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    listing = fake.module.Volume.iterdir
    types = fake.module.types
    for evil in (f"{handle.run_id}/../other/secret", "other-run/secret", f"{handle.run_id}"):

        def iterdir(self: Any, path: str, *, recursive: bool = True, evil: str = evil) -> Any:
            yield from listing(self, path, recursive=recursive)
            yield types.FileEntry(path=evil, type=types.FileEntryType.FILE, mtime=0, size=1)

        monkeypatch.setattr(fake.module.Volume, "iterdir", iterdir)
        with pytest.raises(ProviderError, match="a path outside"):
            backend.fetch(handle, tmp_path / "fetched")
        assert not (tmp_path / "fetched" / handle.run_id).exists()
        assert list((tmp_path / "fetched").glob("*")) == []


def test_fetch_again_replaces_the_earlier_copy(
    backend: ModalBackend, project: Path, tmp_path: Path
) -> None:
    """A second fetch gives the Volume's files, not a mix with what was there."""
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    first = backend.fetch(handle, tmp_path / "fetched")
    (first / "stale.txt").write_text("old")
    second = backend.fetch(handle, tmp_path / "fetched")
    assert second == first
    assert not (second / "stale.txt").exists()
    assert (second / "writes" / "result" / "value.txt").read_text() == "42"


def test_fetch_of_a_run_with_no_files_says_so(
    backend: ModalBackend, project: Path, fake: FakeModal, tmp_path: Path
) -> None:
    """A run whose directory is not on the Volume (yet) is named in the message."""
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    for path in sorted((fake.volume("runs") / handle.run_id).rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (fake.volume("runs") / handle.run_id).rmdir()
    with pytest.raises(ProviderError, match=f"holds no files of run {handle.run_id}"):
        backend.fetch(handle, tmp_path / "fetched")


def test_an_image_builder_older_than_2025_06_gets_the_clear_error(
    backend: ModalBackend, project: Path, fake: FakeModal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Modal's uv_sync error becomes one line saying where to change the builder."""
    monkeypatch.setenv("FAKE_MODAL_BUILDER_VERSION", "2024.10")
    with pytest.raises(ProviderError) as refused:
        backend.submit(_spec("writes"), project=project)
    assert "older than 2025.06" in str(refused.value)
    assert "Settings → Image config" in str(refused.value)
    assert not (fake.root / "calls").exists()


class TestWithoutCredentials:
    """No token: every operation says how to set one up, before any call reaches Modal."""

    @pytest.fixture(autouse=True)
    def no_token(self, fake: FakeModal, monkeypatch: pytest.MonkeyPatch) -> None:
        """Remove the token the fake fixture configured."""
        monkeypatch.delenv("MODAL_TOKEN_ID")
        monkeypatch.delenv("MODAL_TOKEN_SECRET")

    def test_submit_is_refused_in_one_line_before_any_rpc(
        self, backend: ModalBackend, project: Path, fake: FakeModal
    ) -> None:
        """The message says to run ``modal token new`` or set the two variables."""
        with pytest.raises(BackendUnavailableError) as refused:
            backend.submit(_spec("writes"), project=project)
        message = str(refused.value)
        assert "`modal token new`" in message
        assert "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET" in message
        assert "\n" not in message
        assert fake.rpcs() == []

    def test_every_operation_on_a_stored_run_is_refused_the_same_way(
        self, backend: ModalBackend, fake: FakeModal, tmp_path: Path
    ) -> None:
        """Status, logs, peek, fetch and cancel: the same one line, no RPC."""
        handle = RunHandle(
            run_id="job-20260101T000000Z-abcdef",
            backend="modal",
            job="job",
            project=str(tmp_path),
            submitted_at=dt.datetime.now(dt.UTC),
            settings=backend.settings.table(),
            details={"app_id": "ap-" + "a" * 22, "call_id": "fc-" + "b" * 26},
        )
        operations = [
            lambda: backend.status(handle),
            lambda: list(backend.logs(handle, follow=False)),
            lambda: backend.peek(handle, MANIFEST_NAME),
            lambda: backend.fetch(handle, tmp_path / "fetched"),
            lambda: backend.cancel(handle),
        ]
        for operation in operations:
            with pytest.raises(BackendUnavailableError, match="`modal token new`"):
                operation()
        assert fake.rpcs() == []

    def test_a_token_in_the_config_file_counts(
        self,
        backend: ModalBackend,
        project: Path,
        fake: FakeModal,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A token in the config file's active profile passes; the server refusing it is said."""
        config = tmp_path / "modal.toml"
        config.write_text('[me]\nactive = true\ntoken_id = "ak-x"\ntoken_secret = "as-y"\n')
        monkeypatch.setenv("MODAL_CONFIG_PATH", str(config))
        with pytest.raises(BackendUnavailableError, match="Modal refused the credentials"):
            backend.submit(_spec("writes"), project=project)
        assert fake.rpcs() != []


def test_an_unreachable_service_is_reported_within_the_deadline(
    backend: ModalBackend, project: Path, fake: FakeModal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that never answers is a ProviderError naming the deadline, not a hang."""
    monkeypatch.setenv("FAKE_MODAL_UNREACHABLE", "600")
    backend.rpc_seconds = 0.3
    with pytest.raises(ProviderError, match=r"Modal did not answer within 0.3 s"):
        backend.submit(_spec("writes"), project=project)


def test_a_connection_error_is_reported_as_unreachable(
    backend: ModalBackend, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Modal giving up on the connection becomes one line saying so."""
    monkeypatch.setenv("FAKE_MODAL_UNREACHABLE", "0.01")
    with pytest.raises(ProviderError, match="could not reach Modal while creating the outputs"):
        backend.submit(_spec("writes"), project=project)


def test_a_submit_given_up_on_leaves_nothing_running(
    backend: ModalBackend, project: Path, fake: FakeModal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that outlasts the submit deadline is reported; the call it spawns is cancelled."""
    monkeypatch.setenv("FAKE_MODAL_BUILD_SECONDS", "1")
    backend.submit_seconds = 0.2
    with pytest.raises(ProviderError, match="while building the image and submitting the run"):
        backend.submit(_spec("sleeps"), project=project)
    calls, apps = fake.root / "calls", fake.root / "apps"
    for _ in range(600):
        results = list(calls.glob("*.result")) if calls.exists() else []
        stopped = list(apps.glob("*.stopped")) if apps.exists() else []
        if results and stopped:
            break
        time.sleep(0.1)
    (result,) = results
    assert json.loads(result.read_text()) == {"ok": False, "kind": "cancelled"}
    assert len(stopped) == 1


def test_status_and_logs_of_an_unreachable_service_end_within_their_deadlines(
    backend: ModalBackend, running: RunHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a run never hangs on a server that does not answer."""
    monkeypatch.setenv("FAKE_MODAL_UNREACHABLE", "600")
    backend.rpc_seconds = 0.3
    backend.logs_seconds = 0.5
    with pytest.raises(ProviderError, match=r"within 0.3 s while reading the run's status"):
        backend.status(running)
    with pytest.raises(ProviderError, match=r"within 0.5 s while reading the run's logs"):
        list(backend.logs(running, follow=False))
    with pytest.raises(ProviderError, match=r"within 0.3 s"):
        backend.peek(running, MANIFEST_NAME)
    monkeypatch.delenv("FAKE_MODAL_UNREACHABLE")  # reachable again, to cancel the run
    backend.rpc_seconds = 30.0


def test_a_read_only_mount_of_a_missing_volume_is_refused_not_created(
    backend: ModalBackend, project: Path, fake: FakeModal
) -> None:
    """A misspelled dataset Volume fails the submit; the writable outputs Volume is created."""
    spec = _spec(
        "writes", mounts=(Mount(name="datasets", path="/data", access=MountAccess.READ_ONLY),)
    )
    with pytest.raises(ProviderError, match="Volume 'ds' not found"):
        backend.submit(spec, project=project)
    assert not fake.volume("ds").exists()
    assert fake.volume("runs").is_dir()


def test_fetch_keeps_a_sparse_output_sparse_and_a_peek_is_bounded(
    backend: ModalBackend, project: Path, fake: FakeModal, tmp_path: Path
) -> None:
    handle = backend.submit(_spec("writes"), project=project)
    assert wait_until_final(backend, handle) is RunState.SUCCEEDED
    volume = fake.module.Volume.from_name("runs")
    big = volume.directory / handle.run_id / "writes" / "big.bin"
    with big.open("wb") as data:
        data.write(b"head")
        data.truncate(256 << 20)

    fetched = backend.fetch(handle, tmp_path / "fetched")

    copy = fetched / "writes" / "big.bin"
    assert copy.stat().st_size == 256 << 20
    assert copy.stat().st_blocks * 512 < 1 << 20, "zero chunks must stay holes"
    with copy.open("rb") as data:
        assert data.read(4) == b"head"
    with pytest.raises(OutputTooLargeError):
        backend.peek(handle, "writes/big.bin")
