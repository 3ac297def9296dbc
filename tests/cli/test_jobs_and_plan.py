"""``x-tui jobs`` and ``x-tui plan``: what a project declares and what a run would ask for."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import x_tui

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli


def test_jobs_lists_each_job_with_its_tasks_skipping_underscored_examples(cli: Cli) -> None:
    result = cli("jobs")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "hello  2 tasks  no accelerator  timeout 5 min" in lines
    assert "failing  1 task  no accelerator  timeout 5 min" in lines
    assert "slow  1 task  no accelerator  timeout 15 min" in lines
    assert "    examples.01_first   python examples/01_first.py  (at most 5 min)" in lines
    assert "    examples.02_second  python examples/02_second.py  (at most 5 min)" in lines
    assert not any("_helpers" in line for line in lines)


def test_jobs_json_is_one_document_of_specs_as_substrax_writes_them(cli: Cli) -> None:
    document = json.loads(cli("jobs", "--json").stdout)

    assert document["project"] == str(cli.project)
    assert document["backend"] == "local"
    assert sorted(document["jobs"]) == ["failing", "hello", "slow"]
    hello = document["jobs"]["hello"]
    assert hello["schema_version"] == 2
    assert hello["timeout_seconds"] == 300.0
    assert [task["argv"] for task in hello["tasks"]] == [
        ["python", "examples/01_first.py"],
        ["python", "examples/02_second.py"],
    ]
    assert document["problems"] == {}


def test_a_job_with_a_bad_table_is_named_while_the_others_are_still_listed(cli: Cli) -> None:
    cli.write_pyproject(
        top='backend = "local"',
        jobs="[tool.substrax.compute.jobs.typo]\ntimeout_seconds = 60\nexample = ['examples']\n",
    )

    result = cli("jobs")

    assert result.returncode == 2  # a bad configuration, as the README says
    assert result.stdout.splitlines()[0] == "hello  2 tasks  no accelerator  timeout 5 min"
    (complaint,) = result.stderr.splitlines()
    assert complaint.startswith("x-tui: job 'typo': ")
    assert f"{cli.project / 'pyproject.toml'}: [tool.substrax.compute.jobs.typo]" in complaint
    assert "'example'; did you mean 'examples'?" in complaint


def test_plan_shows_the_resolved_job_and_the_provider_request_and_submits_nothing(
    cli: Cli,
) -> None:
    before = cli.snapshot()

    result = cli("plan", "hello", "--accelerator", "h100:2")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "job hello"
    assert "  resources   H100:2" in lines
    assert f"project      {cli.project}" in lines
    assert "backend      local" in lines
    assert "provider request" in lines
    assert lines[-1] == "Nothing was submitted."
    assert cli.snapshot() == before
    assert not cli.runs.exists()


def test_plan_json_holds_the_spec_and_what_the_backend_would_be_asked_for(cli: Cli) -> None:
    result = cli("plan", "failing", "--backend", "local", "--json")

    document = json.loads(result.stdout)
    assert document["backend"] == "local"
    assert document["settings"] == {"python": sys.executable}
    assert document["spec"]["tasks"][0]["name"] == "boom"
    assert document["spec"]["resources"] == {"accelerator": None, "cpu": None, "memory_mib": None}
    assert isinstance(document["provider_request"], dict)


def test_the_project_is_found_upward_or_named_with_project_before_or_after_the_verb(
    cli: Cli, tmp_path: Path
) -> None:
    below = cli("jobs", cwd=cli.project / "examples")
    before_verb = cli("--project", str(cli.project), "jobs", cwd=tmp_path)
    after_verb = cli("jobs", "--project", str(cli.project), cwd=tmp_path)

    assert below.returncode == before_verb.returncode == after_verb.returncode == 0
    assert below.stdout == before_verb.stdout == after_verb.stdout
    assert "hello  2 tasks" in below.stdout


def test_outside_any_project_jobs_says_how_to_name_one(cli: Cli, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    result = cli("jobs", "--project", str(outside))

    assert result.returncode == 2
    assert result.stderr == f"x-tui: {outside} has no pyproject.toml\n"


def test_a_usage_error_is_one_line_and_exit_2(cli: Cli) -> None:
    result = cli("logs")

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("x-tui: the following arguments are required: RUN_ID")
    assert len(result.stderr.splitlines()) == 1


def test_version(cli: Cli) -> None:
    result = cli("--version")

    assert result.returncode == 0
    assert result.stdout == f"x-tui {x_tui.__version__}\n"
