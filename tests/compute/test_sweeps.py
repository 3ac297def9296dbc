"""Sweeps: ``--sweep`` parsing, the grid, the run specs, and the sweep records beside the store."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from x_tui.compute.store import RUN_ID_PATTERN, new_run_id
from x_tui.compute.sweeps import (
    MAX_RUNS,
    Sweep,
    SweepAxis,
    SweepError,
    SweepNotFoundError,
    SweepRun,
    SweepStore,
    grid,
    is_sweep_id,
    new_sweep_id,
    parse_sweep,
    with_parameters,
)
from x_tui.compute.worker.errors import BadRecordError
from x_tui.compute.worker.records import dumps_compact, read_record
from x_tui.compute.worker.spec import JobSpec, Task


def test_a_sweep_option_is_a_name_and_its_values_in_order() -> None:
    assert parse_sweep("LR=1e-4,3e-4") == SweepAxis(name="LR", values=("1e-4", "3e-4"))
    assert parse_sweep("MODEL= small , large") == SweepAxis(name="MODEL", values=("small", "large"))
    assert parse_sweep("SEED=7") == SweepAxis(name="SEED", values=("7",))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("LR", "--sweep 'LR' is not NAME=V1,V2,... such as LR=1e-4,3e-4"),
        ("=1,2", "'' is not an environment variable name"),
        ("learning-rate=1,2", "'learning-rate' is not an environment variable name"),
        ("LR=", "'' is not a value"),
        ("LR=1,,2", "'' is not a value"),
        ("LR=1,2,1", "the value '1' is listed twice"),
        ("AVITAI_OUTPUT_DIR=a", "cannot be swept: the worker sets AVITAI_OUTPUT_DIR"),
        ("XLA_FLAGS=a", "drops JAX_*, XLA_*"),
    ],
)
def test_a_malformed_sweep_option_is_refused_naming_it(text: str, expected: str) -> None:
    with pytest.raises(SweepError) as refused:
        parse_sweep(text)
    assert expected in str(refused.value)
    assert f"--sweep {text!r}" in str(refused.value)


def test_the_grid_is_every_combination_the_last_axis_changing_fastest() -> None:
    axes = (parse_sweep("LR=1e-4,3e-4"), parse_sweep("BS=32,64,128"))
    assert grid(axes) == (
        {"LR": "1e-4", "BS": "32"},
        {"LR": "1e-4", "BS": "64"},
        {"LR": "1e-4", "BS": "128"},
        {"LR": "3e-4", "BS": "32"},
        {"LR": "3e-4", "BS": "64"},
        {"LR": "3e-4", "BS": "128"},
    )


def test_a_grid_without_axes_with_a_repeated_axis_or_too_large_is_refused() -> None:
    with pytest.raises(SweepError, match="at least one --sweep"):
        grid(())
    with pytest.raises(SweepError, match=re.escape("--sweep LR=... is given twice")):
        grid((parse_sweep("LR=1"), parse_sweep("LR=2")))
    wide = SweepAxis(name="A", values=tuple(str(i) for i in range(MAX_RUNS)))
    with pytest.raises(SweepError, match=f"a sweep of {MAX_RUNS} x 2 = {2 * MAX_RUNS} runs"):
        grid((wide, SweepAxis(name="B", values=("x", "y"))))


def test_each_run_s_values_go_in_its_spec_env_over_the_job_s() -> None:
    spec = JobSpec(
        name="train",
        tasks=(Task(name="t", argv=("true",), timeout_seconds=1.0),),
        timeout_seconds=1.0,
        env={"LR": "1e-3", "KEEP": "1"},
    )
    swept = with_parameters(spec, {"LR": "3e-4", "BS": "64"})
    assert swept.env == {"LR": "3e-4", "KEEP": "1", "BS": "64"}
    # Still a spec substrax reads: nothing but env changed.
    assert json.loads(dumps_compact(swept))["env"] == {"LR": "3e-4", "KEEP": "1", "BS": "64"}
    assert spec.env == {"LR": "1e-3", "KEEP": "1"}


def test_a_sweep_id_is_never_a_run_id_and_a_run_id_never_a_sweep_id() -> None:
    sweep_id = new_sweep_id("train")
    assert is_sweep_id(sweep_id)
    assert not RUN_ID_PATTERN.fullmatch(sweep_id)
    # Even a job called "sweep-x" makes run ids that are not sweep ids.
    run_id = new_run_id("sweep-x")
    assert RUN_ID_PATTERN.fullmatch(run_id)
    assert not is_sweep_id(run_id)


def _sweep(job: str = "train", minutes: int = 0) -> Sweep:
    return Sweep(
        sweep_id=new_sweep_id(job),
        job=job,
        backend="local",
        project="/project",
        created_at=dt.datetime(2026, 11, 29, 12, minutes, tzinfo=dt.UTC),
        axes=(parse_sweep("LR=1e-4,3e-4"),),
        runs=(
            SweepRun(run_id=new_run_id(job), parameters={"LR": "1e-4"}),
            SweepRun(run_id=new_run_id(job), parameters={"LR": "3e-4"}),
        ),
    )


def test_a_sweep_record_round_trips_and_finds_its_runs(tmp_path: Path) -> None:
    store = SweepStore(tmp_path / "sweeps")
    older, newer = _sweep(minutes=0), _sweep(minutes=5)
    path = store.save(older)
    store.save(newer)

    assert path == tmp_path / "sweeps" / f"{older.sweep_id}.json"
    assert store.load(older.sweep_id) == older
    assert read_record(Sweep, json.loads(path.read_text())) == older
    stored = store.read_all()
    assert [sweep.sweep_id for sweep in stored.sweeps] == [newer.sweep_id, older.sweep_id]
    assert stored.of_run(older.runs[1].run_id) == older
    assert older.parameters_of(older.runs[1].run_id) == {"LR": "3e-4"}
    assert stored.of_run(new_run_id("train")) is None


def test_unreadable_sweep_records_are_named_and_the_others_still_listed(tmp_path: Path) -> None:
    store = SweepStore(tmp_path)
    good = _sweep()
    store.save(good)
    broken = tmp_path / "sweep-train-20261129T120000Z-0000abcd.json"
    broken.write_text("{")
    stranger = tmp_path / "sweep-train-20261129T120000Z-1111abcd.json"
    stranger.write_text(json.dumps({**json.loads(store.path_of(good.sweep_id).read_text())}))

    stored = store.read_all()

    assert stored.sweeps == (good,)
    assert set(stored.unreadable) == {broken, stranger}
    assert "not JSON" in stored.unreadable[broken]
    assert "holds sweep" in stored.unreadable[stranger]
    with pytest.raises(BadRecordError, match=str(broken)):
        store.load(broken.stem)


def test_an_unknown_or_malformed_sweep_id_is_refused_without_touching_a_path(
    tmp_path: Path,
) -> None:
    store = SweepStore(tmp_path)
    with pytest.raises(SweepNotFoundError, match="no sweep 'sweep-x-20261129T120000Z-0000abcd'"):
        store.load("sweep-x-20261129T120000Z-0000abcd")
    with pytest.raises(SweepNotFoundError, match="is not a sweep id"):
        store.load("../../etc/passwd")
