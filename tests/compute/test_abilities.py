"""Optional backend abilities as types: ``ability`` and ``submit_with`` in compute/backend.py.

Each ability's Protocol is checked against every backend x-tui ships that declares it (the
methods exist and take the keywords the Protocol and its hooks name), so a backend cannot
declare an ability whose shape it lacks.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from x_tui.backends.local.backend import LocalBackend
from x_tui.backends.modal.backend import ModalBackend
from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.compute.backend import (
    Capability,
    KeepsFiles,
    Launches,
    Offers,
    Peeks,
    PlanHooks,
    Plans,
    RunState,
    Statuses,
    StreamsPieces,
    SubmitHooks,
    TakesHooks,
    TearsDown,
    ability,
    submit_with,
)
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.spec import JobSpec, Task

PROTOCOL_OF: dict[Capability, type] = {
    Capability.PEEK: Peeks,
    Capability.LOCAL_FILES: KeepsFiles,
    Capability.PLAN: Plans,
    Capability.REQUEST: TakesHooks,
    Capability.EXTENSIONS: TakesHooks,
    Capability.LAUNCH: Launches,
    Capability.ACCELERATORS: Offers,
    Capability.STATUSES: Statuses,
    Capability.TEARDOWN: TearsDown,
    Capability.LOG_PIECES: StreamsPieces,
}

HOOK_KEYWORDS = {
    Capability.REQUEST: {"request"},
    Capability.EXTENSIONS: {"extensions", "secrets"},
    Capability.LAUNCH: {"launch"},
}


def test_every_capability_has_a_protocol() -> None:
    assert set(PROTOCOL_OF) == set(Capability)
    assert SubmitHooks.__optional_keys__ == set().union(*HOOK_KEYWORDS.values())
    assert PlanHooks.__optional_keys__ == {"request", "extensions"}


def shipped_backends() -> Iterator[object]:
    yield LocalBackend({})
    yield ModalBackend({"outputs_volume": "runs"})
    yield SkyPilotBackend({"sky": "sky", "bucket": {"outputs_bucket": "s3://bench"}})


def protocol_methods(protocol: type) -> dict[str, inspect.Signature]:
    found = {}
    for klass in protocol.__mro__:
        for name, member in vars(klass).items():
            if callable(member) and not name.startswith("_") and name not in found:
                found[name] = inspect.signature(member)
    return found


@pytest.mark.parametrize("built", list(shipped_backends()), ids=lambda built: built.name)
def test_declared_abilities_have_their_protocols_shape(built: Any) -> None:
    declared = frozenset(built.capabilities)
    assert declared, "every shipped backend declares abilities"
    for capability in declared:
        typed = ability(built, capability)
        assert typed is built
        for name, wanted in protocol_methods(PROTOCOL_OF[capability]).items():
            method = getattr(built, name, None)
            assert callable(method), f"{built.name} declares {capability} but has no {name}"
            has = inspect.signature(method).parameters
            for parameter in wanted.parameters.values():
                if parameter.name == "self" or parameter.kind is parameter.VAR_KEYWORD:
                    continue
                assert parameter.name in has, f"{built.name}.{name} lacks {parameter.name}"
        for keyword in HOOK_KEYWORDS.get(capability, ()):
            assert keyword in inspect.signature(built.submit).parameters
            if keyword in ("request", "extensions") and Capability.PLAN in declared:
                assert keyword in inspect.signature(built.plan).parameters
    for capability in set(Capability) - declared:
        assert ability(built, capability) is None  # type: ignore[call-overload]


class Recorder:
    """A backend that records how it was asked to submit, declaring what it is given."""

    name = "recorder"

    def __init__(self, capabilities: frozenset[Capability]) -> None:
        self.capabilities = capabilities
        self.calls: list[dict[str, object]] = []

    def submit(self, spec: JobSpec, *, project: Path, **hooks: object) -> RunHandle:
        self.calls.append(dict(hooks))
        return a_handle("job-20261202T010000Z-bbbbbb", project)

    def status(self, handle: RunHandle) -> RunState:
        return RunState.RUNNING

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        return iter(())

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        return destination

    def cancel(self, handle: RunHandle) -> None:
        return None

    def statuses(self, handles: Sequence[RunHandle]) -> Mapping[str, RunState]:
        return {handle.run_id: RunState.PENDING for handle in handles}


SPEC = JobSpec(
    name="job",
    tasks=(Task(name="main", argv=("true",), timeout_seconds=60),),
    timeout_seconds=60,
)
WHEN = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)


def a_handle(run_id: str, project: Path) -> RunHandle:
    return RunHandle(
        run_id=run_id,
        backend="recorder",
        job="job",
        project=str(project),
        submitted_at=WHEN,
        settings={},
        details={},
    )


def test_ability_gives_the_backend_only_where_declared(tmp_path: Path) -> None:
    batched = Recorder(frozenset({Capability.STATUSES}))
    statuses = ability(batched, Capability.STATUSES)
    assert statuses is not None
    handle = a_handle("job-20261202T010000Z-aaaaaa", tmp_path)
    assert statuses.statuses([handle]) == {"job-20261202T010000Z-aaaaaa": RunState.PENDING}
    assert ability(Recorder(frozenset()), Capability.STATUSES) is None
    assert ability(object(), Capability.PEEK) is None


def test_submit_with_passes_declared_hooks_and_refuses_others(tmp_path: Path) -> None:
    from x_tui.compute.extensions import JobExtensions

    plain = Recorder(frozenset())
    submit_with(plain, SPEC, project=tmp_path, hooks={})
    assert plain.calls == [{}]
    with pytest.raises(ValueError, match="extensions"):
        submit_with(plain, SPEC, project=tmp_path, hooks={"extensions": JobExtensions()})
    assert plain.calls == [{}]
    extended = Recorder(frozenset({Capability.EXTENSIONS}))
    submit_with(extended, SPEC, project=tmp_path, hooks={"extensions": JobExtensions()})
    assert extended.calls == [{"extensions": JobExtensions()}]
