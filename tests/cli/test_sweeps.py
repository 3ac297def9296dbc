"""Sweeps end to end: one run per value under one sweep id, grouped, followed and cancelled."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support import wait_for

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

JOBS = """
[tool.substrax.compute.jobs.echo]
timeout_seconds = 300
env = { WORD = "default", KEEP = "kept" }

[tool.substrax.compute.jobs.echo.commands]
say = ["python", "-c", "import os; print('word', os.environ['WORD'], os.environ['KEEP'])"]
"""

SWEEP_LINE = re.compile(r"Submitted sweep (sweep-[\w.-]+): (\d+) runs? of (\S+) to local\.")


def _submitted(stdout: str) -> tuple[str, list[tuple[str, str]]]:
    lines = stdout.splitlines()
    match = SWEEP_LINE.fullmatch(lines[0])
    assert match is not None, stdout
    runs = [tuple(line.split()) for line in lines[1:] if line.startswith("  ")]
    assert len(runs) == int(match[2])
    return match[1], runs  # type: ignore[return-value]


def _wait_until_final(cli: Cli, sweep_id: str) -> dict[str, str]:
    def final_states() -> dict[str, str]:
        runs = json.loads(cli("status", "--sweep", sweep_id, "--json").stdout)["runs"]
        states = {run["run_id"]: run["state"] for run in runs}
        ended = all(state in ("succeeded", "failed", "cancelled") for state in states.values())
        return states if ended else {}

    return wait_for(final_states, f"every run of {sweep_id} to end", every=0.1)


def test_a_detached_sweep_makes_one_run_per_value_under_one_id_and_cancels_as_a_group(
    cli: Cli,
) -> None:
    result = cli("run", "slow", "--sweep", "LR=1e-4,3e-4", "--detach")

    assert result.returncode == 0, result.stderr
    sweep_id, runs = _submitted(result.stdout)
    assert [values for _, values in runs] == ["LR=1e-4", "LR=3e-4"]
    (first, _), (second, _) = runs
    # Each run is an ordinary run whose spec carries its value in env, and nothing else new.
    for run_id, value in ((first, "1e-4"), (second, "3e-4")):
        spec = json.loads((cli.state / "compute" / "local" / run_id / "spec.json").read_text())
        assert spec["env"] == {"LR": value}
        handle = json.loads((cli.runs / f"{run_id}.json").read_text())
        assert sweep_id not in json.dumps(handle)
        assert set(handle) == {
            "schema_version", "run_id", "backend", "job", "project", "submitted_at", "settings",
            "details",
        }  # fmt: skip
    record = json.loads((cli.state / "x-tui" / "sweeps" / f"{sweep_id}.json").read_text())
    assert [(run["run_id"], run["parameters"]) for run in record["runs"]] == [
        (first, {"LR": "1e-4"}),
        (second, {"LR": "3e-4"}),
    ]

    # status groups them under the sweep; JSON names the sweep of each run.
    listed = cli("status").stdout.splitlines()
    assert listed == [
        f"sweep {sweep_id}  slow  2 runs: 2 running",
        f"  {first}  local  slow  running  LR=1e-4",
        f"  {second}  local  slow  running  LR=3e-4",
    ]
    document = json.loads(cli("status", "--json").stdout)
    assert {run["run_id"]: (run["sweep_id"], run["parameters"]) for run in document["runs"]} == {
        first: (sweep_id, {"LR": "1e-4"}),
        second: (sweep_id, {"LR": "3e-4"}),
    }
    assert document["sweeps"][0]["axes"] == {"LR": ["1e-4", "3e-4"]}

    # One run cancels alone; the sweep's cancel then stops the other and leaves that one.
    assert cli("cancel", first).stdout == f"Cancelled {first}.\n"
    cancelled = cli("cancel", sweep_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.splitlines() == [
        f"{first} already ended (cancelled); nothing to cancel.",
        f"Cancelled {second}.",
        f"Cancelled sweep {sweep_id} (2 runs).",
    ]
    assert _wait_until_final(cli, sweep_id) == {first: "cancelled", second: "cancelled"}
    assert cli("status", sweep_id).stdout.splitlines()[0] == (
        f"sweep {sweep_id}  slow  2 runs: 2 cancelled"
    )


def test_a_followed_sweep_prefixes_each_line_with_its_values_and_fetches_every_run(
    cli: Cli, tmp_path: Path
) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    into = tmp_path / "fetched"

    result = cli("run", "echo", "--sweep", "WORD=alpha,beta", "--into", str(into))

    assert result.returncode == 0, result.stderr
    sweep_id, runs = _submitted(result.stdout)
    lines = result.stdout.splitlines()
    assert "[WORD=alpha] [say] word alpha kept" in lines
    assert "[WORD=beta] [say] word beta kept" in lines
    for run_id, values in runs:
        assert f"{run_id} succeeded ({values}); outputs in {into / run_id}." in lines
        assert (into / run_id / "manifest.json").is_file()
    assert lines[-1] == f"Sweep {sweep_id}: 2 of 2 runs succeeded."


def test_a_grid_of_two_sweeps_makes_every_combination(cli: Cli) -> None:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')

    planned = cli("plan", "echo", "--sweep", "WORD=a,b", "--sweep", "KEEP=x,y,z", "--json")

    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["sweep"]["runs"] == [
        {"WORD": "a", "KEEP": "x"},
        {"WORD": "a", "KEEP": "y"},
        {"WORD": "a", "KEEP": "z"},
        {"WORD": "b", "KEEP": "x"},
        {"WORD": "b", "KEEP": "y"},
        {"WORD": "b", "KEEP": "z"},
    ]
    text = cli("plan", "echo", "--sweep", "WORD=a,b", "--sweep", "KEEP=x,y,z").stdout
    assert "sweep        6 runs" in text.splitlines()
    assert "  WORD=b KEEP=z" in text.splitlines()
    assert not cli.runs.exists()


def test_a_malformed_sweep_is_refused_on_one_line_and_submits_nothing(cli: Cli) -> None:
    for argv, expected in (
        (("--sweep", "LR"), "x-tui: --sweep 'LR' is not NAME=V1,V2,... such as LR=1e-4,3e-4\n"),
        (("--sweep", "LR=1", "--sweep", "LR=2"), "x-tui: --sweep LR=... is given twice;"),
        (("--sweep", "lr-rate=1"), "'lr-rate' is not an environment variable name"),
    ):
        result = cli("run", "slow", *argv, "--detach")
        assert result.returncode == 2
        assert len(result.stderr.splitlines()) == 1
        assert expected in result.stderr
    assert not cli.runs.exists()


def test_an_unknown_sweep_is_refused_by_status_and_cancel(cli: Cli) -> None:
    missing = "sweep-slow-20260101T000000Z-0000abcd"
    for verb in (("status", "--sweep", missing), ("cancel", missing)):
        result = cli(*verb)
        assert result.returncode == 2
        assert result.stderr == f"x-tui: no sweep '{missing}' in {cli.state / 'x-tui' / 'sweeps'}\n"
