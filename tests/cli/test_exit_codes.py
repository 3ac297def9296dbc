"""Every verb exits as the README's table of exit codes says (0, 1, 2), one line on a refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

NO_RUN = "hello-20260101T000000Z-abcdef"
BAD_JOB_TABLE = "[tool.substrax.compute.jobs.typo]\ntimeout_seconds = 60\nexample = ['examples']\n"


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("jobs",), 0, None),
        (("plan", "hello"), 0, None),
        (("status",), 0, None),
        (("backends",), 0, None),
        (("plan", "helo"), 2, "no job 'helo'; did you mean 'hello'?"),
        (("run", "helo"), 2, "no job 'helo'; did you mean 'hello'?"),
        (("plan", "hello", "--backend", "lokal"), 2, "did you mean 'local'?"),
        (("backends", "--backend", "lokal"), 2, "did you mean 'local'?"),
        (("status", NO_RUN), 2, f"no run '{NO_RUN}'"),
        (("logs", NO_RUN), 2, f"no run '{NO_RUN}'"),
        (("fetch", NO_RUN), 2, f"no run '{NO_RUN}'"),
        (("cancel", NO_RUN), 2, f"no run '{NO_RUN}'"),
        (("delete", NO_RUN, "--yes"), 2, f"no run '{NO_RUN}'"),
        (("teardown", NO_RUN), 2, f"no run '{NO_RUN}'"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_each_verb_exits_as_the_readme_says(
    cli: Cli, args: tuple[str, ...], code: int, says: str | None
) -> None:
    result = cli.process(*args)  # the exit status of a process of its own

    assert result.returncode == code, result.stderr
    if says is None:
        assert result.stderr == ""
    else:
        (line,) = result.stderr.splitlines()
        assert line.startswith("x-tui: ")
        assert says in line
        assert "Traceback" not in result.stderr


def test_jobs_with_a_bad_configuration_exits_2(cli: Cli) -> None:
    cli.write_pyproject(top='backend = "local"', jobs=BAD_JOB_TABLE)

    result = cli("jobs")

    assert result.returncode == 2
    assert "hello" in result.stdout
    assert result.stderr.startswith("x-tui: job 'typo': ")


def test_jobs_with_an_unreadable_pyproject_exits_2(cli: Cli) -> None:
    (cli.project / "pyproject.toml").write_text("[tool.substrax.compute\n")

    result = cli("jobs")

    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1


def test_a_run_that_fails_exits_1_and_status_of_an_unreadable_record_exits_1(cli: Cli) -> None:
    assert cli("run", "failing").returncode == 1
    (cli.runs / f"{NO_RUN}.json").write_text("{")

    assert cli("status").returncode == 1
