"""A job's ``retries``: both forms, the worker's file, refusals, and reading attempts back."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from x_tui.compute.config import read_compute_config, resolve_request
from x_tui.compute.retries import (
    RetryPolicy,
    parse_attempts,
    read_retries,
    write_retries_file,
)
from x_tui.compute.worker.attempts import check_retries
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import RecordError, dumps_compact

TASKS = ("prepare", "train", "evaluate")
WHERE = "pyproject.toml: [tool.substrax.compute.jobs.train]"


def _project(root: Path, retries: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [tool.substrax.compute.jobs.train]
            timeout_seconds = 60
            retries = {retries}

            [tool.substrax.compute.jobs.train.commands]
            prepare = ["python", "prepare.py"]
            train = ["python", "train.py"]
            evaluate = ["python", "evaluate.py"]
            """
        )
    )
    return root


def test_a_count_retries_every_task(tmp_path: Path) -> None:
    root = _project(tmp_path, "2")
    resolved = resolve_request(read_compute_config(root), "train", project=root)

    assert resolved.extensions.retries == RetryPolicy(default=2)
    assert resolved.extensions.retries.worker_table(TASKS) == {
        "prepare": 2,
        "train": 2,
        "evaluate": 2,
    }
    assert "retries" not in json.loads(dumps_compact(resolved.spec))


def test_a_table_sets_a_default_and_counts_by_task(tmp_path: Path) -> None:
    root = _project(tmp_path, "{ default = 1, tasks = { train = 3, evaluate = 0 } }")
    policy = resolve_request(read_compute_config(root), "train", project=root).extensions.retries

    assert policy.worker_table(TASKS) == {"prepare": 1, "train": 3}
    assert policy.describe(TASKS) == {
        "default": 1,
        "tasks": {"prepare": 1, "train": 3, "evaluate": 0},
    }


def test_the_worker_accepts_the_file_submit_writes(tmp_path: Path) -> None:
    from x_tui.compute.worker.spec import JobSpec, Task

    spec = JobSpec(
        name="train",
        tasks=tuple(Task(name=n, argv=("true",), timeout_seconds=10.0) for n in TASKS),
        timeout_seconds=60.0,
    )
    table = RetryPolicy(default=1, tasks={"train": 3}).worker_table(TASKS)
    path = write_retries_file(tmp_path, table)

    assert path == tmp_path / "retries.json"
    assert check_retries(spec, json.loads(path.read_text())) == table


def test_no_file_is_written_when_nothing_is_retried(tmp_path: Path) -> None:
    assert write_retries_file(tmp_path, RetryPolicy().worker_table(TASKS)) is None
    assert not (tmp_path / "retries.json").exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-1", "retries: expected a whole number from 0 to 100, got -1"),
        ("1.5", "retries: expected a whole number from 0 to 100, got 1.5"),
        ("true", "got True"),
        ("101", "got 101"),
        ('"2"', "got '2'"),
        (
            "{ default = 1, train = 3 }",
            "a task's count goes in tasks, such as tasks = { train = N }",
        ),
        ("{ defualt = 1 }", "unknown key 'defualt'; did you mean 'default'?"),
        ("{ tasks = { trian = 1 } }", "the job has no task 'trian'; did you mean 'train'?"),
        ("{ tasks = [1] }", "retries.tasks: expected a table of counts by task"),
        ("{ tasks = { train = -2 } }", "retries.tasks.train: expected a whole number"),
    ],
)
def test_a_malformed_retries_is_refused_naming_the_file_key_and_value(
    tmp_path: Path, value: str, expected: str
) -> None:
    root = _project(tmp_path, value)
    with pytest.raises(ConfigError) as refused:
        resolve_request(read_compute_config(root), "train", project=root)
    assert f"{root / 'pyproject.toml'}: [tool.substrax.compute.jobs.train]" in str(refused.value)
    assert expected in str(refused.value)


def test_read_retries_outside_a_job_names_where() -> None:
    with pytest.raises(ConfigError, match=r"^pyproject.toml: .* retries: expected a whole"):
        read_retries("x", where=WHERE, tasks=TASKS)


def test_attempts_are_read_back_grouped_by_task_oldest_first() -> None:
    text = json.dumps(
        [
            {"task": "b", "attempt": 1, "status": "failed", "returncode": 1, "seconds": 0.5},
            {"task": "a", "attempt": 2, "status": "succeeded", "returncode": 0, "seconds": 1.0},
            {"task": "b", "attempt": 2, "status": "succeeded", "returncode": 0, "seconds": 0.5},
            {"task": "a", "attempt": 1, "status": "timed-out", "returncode": None, "seconds": 9.0},
        ]
    )
    entries = parse_attempts(text)
    assert [(entry.task, entry.attempt, entry.status) for entry in entries] == [
        ("b", 1, "failed"),
        ("b", 2, "succeeded"),
        ("a", 1, "timed-out"),
        ("a", 2, "succeeded"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "not JSON"),
        ("{}", "expected an array of attempts"),
        ('[{"task": "../../etc", "attempt": 1, "status": "failed"}]', "not one path component"),
        ('[{"task": "a", "attempt": 0, "status": "failed"}]', "attempt must be at least 1"),
        ('[{"task": "a", "attempt": "1", "status": "failed"}]', "expected an integer"),
    ],
)
def test_an_attempts_file_that_could_lead_astray_is_refused(text: str, expected: str) -> None:
    with pytest.raises(RecordError, match=expected):
        parse_attempts(text)
