"""A run's guard (budget, preemption retries, links) and why it ended: read from the job table
with clear refusals, kept in side files that no damaged or hostile file can break."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from x_tui.compute.guard_book import GuardBook
from x_tui.compute.run_endings import EndingBook, RunEnding
from x_tui.compute.run_guards import RunGuard, duration_text, parse_max_cost, read_guard
from x_tui.compute.worker.errors import ConfigError

RUN = "train-20260919T120000Z-0a1b2c"
OTHER = "train-20260919T130000Z-0d0e0f"
WHERE = "pyproject.toml: [tool.x-tui.jobs.train]"


def test_the_job_table_s_guard_keys_are_read() -> None:
    guard = read_guard(
        {"max_cost": "$12.50", "max_duration": "1h30m", "preemption_retries": 2}, where=WHERE
    )
    assert guard == RunGuard(max_cost_usd=12.5, max_duration_seconds=5400, preemption_retries=2)
    assert guard.budget_text() == "budget $12.50, 1h30m"
    assert read_guard({}, where=WHERE) == RunGuard()
    assert not RunGuard()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_cost": 0}, "max_cost: expected a positive amount of US dollars"),
        ({"max_cost": "NaN"}, "max_cost: expected a positive amount"),
        ({"max_cost": True}, "max_cost: expected a positive amount"),
        ({"max_cost": 1e12}, "max_cost: expected a positive amount"),
        ({"max_duration": "soon"}, "max_duration: duration 'soon' is not"),
        ({"max_duration": [1]}, "max_duration: expected a duration such as '2h', got [1]"),
        ({"preemption_retries": -1}, "preemption_retries: expected a whole number from 0 to 100"),
        ({"preemption_retries": 1.5}, "preemption_retries: expected a whole number"),
    ],
)
def test_a_bad_value_is_refused_naming_file_table_key_and_value(
    table: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        read_guard(table, where=WHERE)
    assert str(raised.value).startswith(f"{WHERE} ")
    assert message in str(raised.value)


def test_the_share_of_a_budget_used_is_the_larger_of_cost_and_duration() -> None:
    guard = RunGuard(max_cost_usd=10.0, max_duration_seconds=3600)
    assert guard.used(cost=8.0, elapsed=600) == (0.8, "cost $8.00 of $10.00")
    share, words = guard.used(cost=1.0, elapsed=3240)
    assert share == pytest.approx(0.9)
    assert words == "ran 54m of 1h"
    assert guard.used(cost=None, elapsed=60)[1] == "ran 1m of 1h"
    assert RunGuard().used(cost=5.0, elapsed=60) == (0.0, "")
    assert [duration_text(s) for s in (0, 59.6, 5400, 86400)] == ["0s", "1m", "1h30m", "24h"]
    assert parse_max_cost(" $1,250 ", where="--max-cost") == 1250.0


def test_a_guard_side_file_round_trips_and_a_damaged_one_reads_as_none(tmp_path: Path) -> None:
    book = GuardBook(tmp_path)
    guard = RunGuard(max_cost_usd=5.0, preemption_retries=1, resubmitted_as=OTHER)
    book.write(RUN, guard)
    assert book.read(RUN) == (guard, None)
    path = book.path_of(RUN)
    damaged = {
        "not json": b"{",
        "another run's": json.dumps({"run_id": OTHER}).encode(),
        "a path for a link": json.dumps({"run_id": RUN, "resubmitted_as": "../../etc"}).encode(),
        "a negative budget": json.dumps({"run_id": RUN, "max_cost_usd": -1}).encode(),
        "a list": b"[]",
        "too deep": b"[" * 100 + b"]" * 100,
    }
    for what, data in damaged.items():
        path.write_bytes(data)
        loaded, problem = book.read(RUN)
        assert loaded == RunGuard(), what
        assert problem is not None, what
        assert problem.startswith(str(path)), what
    path.unlink()
    os.mkfifo(path)
    assert book.read(RUN)[0] == RunGuard()  # a FIFO never blocks the reader
    path.unlink()
    assert book.read(RUN) == (RunGuard(), None)
    with pytest.raises(LookupError):
        book.path_of("../escape")


def test_the_first_reason_a_run_ended_for_stays(tmp_path: Path) -> None:
    book = EndingBook(tmp_path)
    first = RunEnding(state="cancelled", reason="over budget", by="watcher", at=1.0)
    assert book.record(RUN, first) == first
    later = RunEnding(state="preempted", reason="spot", by="provider", at=2.0)
    assert book.record(RUN, later) == first
    assert book.load(RUN) == first
    book.path_of(RUN).write_text(json.dumps({"run_id": RUN, "state": 1}))
    assert book.load(RUN) is None
    book.path_of(RUN).write_bytes(b"\xff\xfe")
    assert book.load(RUN) is None
    assert book.load(OTHER) is None
