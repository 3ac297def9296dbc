"""The service against a remote provider faked at its network boundary: log spooling, deadlines.

The local backend keeps its files here, so these use a provider whose runs are elsewhere: its
log stream, status and settings are what a remote SDK would hand back, and it blocks where a slow
network would.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import DEADLINE, wait_for
from x_tui.app.deadlines import Deadlines
from x_tui.app.service import Service
from x_tui.compute.backend import ComputeBackend, RunState
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.errors import BackendUnavailableError, ProviderError
from x_tui.compute.worker.spec import JobSpec

RUN_ID = "remote-20260919T120000Z-0f0f0f"


class FarawayProvider:
    """A provider whose runs and logs are elsewhere; ``logs`` streams what the test releases."""

    name = "faraway"
    capabilities: frozenset[str] = frozenset()

    def __init__(self, lines: list[str], *, fail_after: int | None = None) -> None:
        self.lines = lines
        self.fail_after = fail_after
        self.release = threading.Event()
        self.streams = 0

    def submit(self, spec: JobSpec, *, project: Path) -> RunHandle:
        raise NotImplementedError

    def status(self, handle: RunHandle) -> RunState:
        self.release.wait(DEADLINE)
        return RunState.RUNNING

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        self.streams += 1
        for index, line in enumerate(self.lines):
            if index == 1:
                self.release.wait(DEADLINE)
            if self.fail_after is not None and index == self.fail_after:
                raise RuntimeError("the log stream broke: connection reset")
            yield line

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        raise NotImplementedError

    def cancel(self, handle: RunHandle) -> None:
        raise NotImplementedError


def _handle(settings: dict[str, str] | None = None) -> RunHandle:
    return RunHandle(
        run_id=RUN_ID,
        backend="faraway",
        job="remote",
        project="/home/user/project",
        submitted_at=dt.datetime(2026, 9, 19, 12, tzinfo=dt.UTC),
        settings=settings or {"region": "eu"},
    )


def _service(state: Path, provider: ComputeBackend, **deadlines: float) -> Service:
    return Service(
        store=RunStore(state / "compute" / "runs"),
        state_dir=state,
        deadlines=Deadlines(**deadlines),
        build_backend=lambda handle: provider,
    )


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_a_remote_runs_log_is_spooled_into_a_local_file_as_it_arrives(tmp_path: Path) -> None:
    provider = FarawayProvider(["first line", "second line"])
    service = _service(tmp_path, provider)
    path = service.log_path(_handle())
    assert path == tmp_path / "x-tui" / "logs" / f"{RUN_ID}.log"
    wait_for(lambda: _text(path) == "first line\n", "the first line")
    provider.release.set()
    wait_for(lambda: _text(path) == "first line\nsecond line\n", "the second line")
    state = service.spool_state(RUN_ID)
    assert state is not None
    wait_for(lambda: state.finished, "the end of the stream")
    assert state.error is None


def test_a_fully_copied_log_is_not_copied_again(tmp_path: Path) -> None:
    first = FarawayProvider(["only line"])
    path = _service(tmp_path, first).log_path(_handle())
    wait_for(lambda: (path.with_suffix(".done")).exists(), "the finished copy")

    again = FarawayProvider(["only line"])
    later = _service(tmp_path, again)
    assert later.log_path(_handle()) == path
    state = later.spool_state(RUN_ID)
    assert state is not None
    assert state.finished
    assert again.streams == 0
    assert _text(path) == "only line\n"


def test_a_log_stream_that_breaks_keeps_what_came_and_says_why(tmp_path: Path) -> None:
    provider = FarawayProvider(["kept", "lost"], fail_after=1)
    provider.release.set()
    service = _service(tmp_path, provider)
    path = service.log_path(_handle())
    state = service.spool_state(RUN_ID)
    assert state is not None
    wait_for(lambda: state.finished, "the broken stream")
    assert state.error == "the log stream broke: connection reset"
    assert _text(path) == "kept\n"
    assert not path.with_suffix(".done").exists()


def test_a_status_past_its_deadline_is_a_provider_error_naming_the_backend(
    tmp_path: Path,
) -> None:
    provider = FarawayProvider([])
    service = _service(tmp_path, provider, status=0.05)
    try:
        with pytest.raises(ProviderError, match=r"backend 'faraway': status of remote-"):
            service.status(_handle())
    finally:
        provider.release.set()


def test_a_backend_is_built_once_per_backend_and_settings(tmp_path: Path) -> None:
    built: list[RunHandle] = []
    provider = FarawayProvider([])
    provider.release.set()

    def build(handle: RunHandle) -> ComputeBackend:
        built.append(handle)
        return provider

    service = Service(state_dir=tmp_path, build_backend=build)
    assert service.status(_handle({"region": "eu"})) is RunState.RUNNING
    assert service.status(_handle({"region": "eu"})) is RunState.RUNNING
    assert service.status(_handle({"region": "us"})) is RunState.RUNNING
    assert [handle.settings["region"] for handle in built] == ["eu", "us"]


def test_a_backend_that_cannot_be_built_is_not_tried_again(tmp_path: Path) -> None:
    attempts: list[RunHandle] = []

    def build(handle: RunHandle) -> ComputeBackend:
        attempts.append(handle)
        raise BackendUnavailableError("the modal extra is not installed: pip install x-tui[modal]")

    service = Service(state_dir=tmp_path, build_backend=build)
    for _ in range(3):
        with pytest.raises(BackendUnavailableError, match=r"x-tui\[modal\]"):
            service.status(_handle())
    assert len(attempts) == 1
