"""``x-tui status`` asks each backend once for all its runs where the backend can batch.

The backends are rebuilt by ``backend_for`` from each handle; here that one seam gives counting
backends (the SkyPilot backend's batch is tested against its fake in tests/backends).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from x_tui.cli import main, run_verbs
from x_tui.compute.backend import Capability, RunState
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.errors import ProviderError, UserError

EARLIER = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


class Counting:
    """A backend that records every question; with ``batch`` it declares ``statuses``."""

    def __init__(self, name: str, *, batch: bool, gone: frozenset[str] = frozenset()) -> None:
        self.name = name
        self.capabilities = frozenset({Capability.STATUSES}) if batch else frozenset()
        self.gone = gone
        self.batches: list[list[str]] = []
        self.singles: list[str] = []

    def status(self, handle: RunHandle) -> RunState:
        self.singles.append(handle.run_id)
        return RunState.RUNNING

    def statuses(self, handles: Sequence[RunHandle]) -> dict[str, RunState | UserError]:
        self.batches.append([handle.run_id for handle in handles])
        return {
            handle.run_id: (
                ProviderError("its cluster is gone")
                if handle.run_id in self.gone
                else RunState.PENDING
            )
            for handle in handles
        }

    def submit(self, *args: object, **kwargs: object) -> RunHandle:
        raise AssertionError("status never submits")

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        raise AssertionError("status never reads logs")

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        raise AssertionError("status never fetches")

    def cancel(self, handle: RunHandle) -> None:
        raise AssertionError("status never cancels")


def save_runs(backend: str, job: str, count: int, settings: dict[str, object]) -> list[str]:
    store = RunStore()
    run_ids = []
    for index in range(count):
        run_id = f"{job}{index}-20261201T120000Z-{index:06x}"
        store.save(
            RunHandle(
                run_id=run_id,
                backend=backend,
                job=f"{job}{index}",
                project="/home/user/project",
                submitted_at=EARLIER + dt.timedelta(seconds=index),
                settings=dict(settings),
                details={},
            )
        )
        run_ids.append(run_id)
    return run_ids


def test_status_asks_a_batching_backend_once_for_all_its_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    batched = save_runs("batched", "train", 20, {"region": "a"})
    other_settings = save_runs("batched", "eval", 2, {"region": "b"})
    plain = save_runs("plain", "plain", 3, {})
    backends = {
        ("batched", "a"): Counting("batched", batch=True, gone=frozenset({batched[7]})),
        ("batched", "b"): Counting("batched", batch=True),
        ("plain", None): Counting("plain", batch=False),
    }
    built: list[str] = []

    def backend_for(handle: RunHandle) -> Counting:
        built.append(handle.run_id)
        return backends[(handle.backend, handle.settings.get("region"))]

    monkeypatch.setattr(run_verbs, "backend_for", backend_for)

    code = main(["status"])

    out, err = capsys.readouterr()
    # One call for the 20 runs, one for the 2 with other settings; one backend built per group.
    assert [sorted(call) for call in backends[("batched", "a")].batches] == [sorted(batched)]
    assert backends[("batched", "a")].singles == []
    assert [sorted(call) for call in backends[("batched", "b")].batches] == [sorted(other_settings)]
    assert sorted(backends[("plain", None)].singles) == sorted(plain)
    assert len(built) == 3
    # Every run is listed with what its backend said; the one it could not read is named.
    lines = {line.split()[0]: line.split()[3] for line in out.splitlines()}
    assert lines == {
        **{run_id: "pending" for run_id in batched + other_settings},
        batched[7]: "unknown",
        **{run_id: "running" for run_id in plain},
    }
    assert err.splitlines() == [
        f"x-tui: {batched[7]}: state unknown: its cluster is gone",
    ]
    assert code == 1
