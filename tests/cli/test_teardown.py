"""``x-tui teardown RUN_ID``: a SkyPilot run's cluster goes, also after the run ended.

The SkyPilot runs go through the real backend and the fake SkyPilot (its network boundary), with
the copy transport against a real sshd, so the cluster outlives the run until torn down; while it
holds the only copy of the outputs (never fetched), the teardown is refused unless ``--force``. The
local backend holds nothing once a run ends: the verb is refused there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from backends.fake_sky.harness import (
    FakeSky,
    make_locked_project,
    run_cli,
    sky_pyproject,
)

from tests.backends.fake_sky import fixtures

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

pytestmark = pytest.mark.slow  # a fake SkyPilot cluster per test, over a real sshd

fake = fixtures.fake_sky_over_ssh

JOB = """\
[tool.substrax.compute.jobs.hello]
commands = { hi = ["python", "-c", "print('hi from the cluster', flush=True)"] }
timeout_seconds = 120
"""


def test_teardown_removes_an_ended_runs_cluster_and_names_a_failed_step(
    fake: FakeSky, tmp_path: Path
) -> None:
    project = make_locked_project(tmp_path / "project", {})
    (project / "pyproject.toml").write_text(sky_pyproject(fake.tool.link, "copy", {}, JOB))
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(tmp_path / "state")}
    done = run_cli(["run", "hello", "--into", str(tmp_path / "runs")], cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = done.stdout.split()[1]
    (cluster,) = fake.clusters()  # the run ended; the copy transport's cluster stays up

    fake.fail("down", "Failed to terminate the instances: PermissionDenied")
    failed = run_cli(["teardown", run_id], cwd=project, env=env)
    assert failed.returncode == 1
    (line,) = failed.stderr.splitlines()
    assert line.startswith(
        f"x-tui: teardown {run_id}: SkyPilot failed while tearing down {cluster}"
    )
    assert line.endswith("Failed to terminate the instances: PermissionDenied")
    assert fake.clusters() == [cluster]

    fake.release("fail-down")
    torn = run_cli(["teardown", run_id], cwd=project, env=env)  # `run` fetched: no --force needed
    assert (torn.returncode, torn.stdout, torn.stderr) == (
        0,
        f"Tore down {run_id} on skypilot.\n",
        "",
    )
    assert fake.clusters() == []
    status = run_cli(["status", run_id], cwd=project, env=env)
    assert status.stdout.split()[-1] == "succeeded"  # the fetched copy still answers
    assert (tmp_path / "runs" / run_id / "hi" / "stdout.log").read_text() == "hi from the cluster\n"
    again = run_cli(["teardown", run_id], cwd=project, env=env)
    assert (again.returncode, again.stderr) == (0, "")  # nothing left is not a failure


def ended_unfetched_run(fake: FakeSky, tmp_path: Path) -> tuple[Path, dict[str, str], str, str]:
    """A copy-transport run that ended, never fetched: its project, env, id and cluster."""
    project = make_locked_project(tmp_path / "project", {})
    (project / "pyproject.toml").write_text(sky_pyproject(fake.tool.link, "copy", {}, JOB))
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(tmp_path / "state")}
    done = run_cli(["run", "hello", "--detach"], cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = done.stdout.split()[1]
    followed = run_cli(["logs", run_id, "--follow"], cwd=project, env=env)
    assert "hi from the cluster" in followed.stdout, followed.stdout + followed.stderr
    status = run_cli(["status", run_id], cwd=project, env=env)
    assert status.stdout.split()[-1] == "succeeded", status.stdout + status.stderr
    (cluster,) = fake.clusters()
    return project, env, run_id, cluster


def refusal(run_id: str, cluster: str) -> str:
    return (
        f"x-tui: the outputs of run {run_id} exist only on cluster {cluster}: run"
        f" `x-tui fetch {run_id}` first, or pass --force to tear down anyway\n"
    )


def test_teardown_before_a_fetch_is_refused_in_one_line_and_works_once_fetched(
    fake: FakeSky, tmp_path: Path
) -> None:
    project, env, run_id, cluster = ended_unfetched_run(fake, tmp_path)
    refused = run_cli(["teardown", run_id], cwd=project, env=env)
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        2,
        "",
        refusal(run_id, cluster),
    )
    assert fake.clusters() == [cluster]  # the outputs are still there to fetch

    fetched = run_cli(["fetch", run_id, "--into", str(tmp_path / "runs")], cwd=project, env=env)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    torn = run_cli(["teardown", run_id], cwd=project, env=env)
    assert (torn.returncode, torn.stdout, torn.stderr) == (
        0,
        f"Tore down {run_id} on skypilot.\n",
        "",
    )
    assert fake.clusters() == []
    assert (tmp_path / "runs" / run_id / "hi" / "stdout.log").read_text() == "hi from the cluster\n"


def test_teardown_with_force_removes_the_cluster_of_an_unfetched_run(
    fake: FakeSky, tmp_path: Path
) -> None:
    project, env, run_id, _ = ended_unfetched_run(fake, tmp_path)
    torn = run_cli(["teardown", run_id, "--force"], cwd=project, env=env)
    assert (torn.returncode, torn.stdout, torn.stderr) == (
        0,
        f"Tore down {run_id} on skypilot.\n",
        "",
    )
    assert fake.clusters() == []
    again = run_cli(["teardown", run_id], cwd=project, env=env)
    assert (again.returncode, again.stderr) == (0, "")  # nothing left to lose: not refused


def test_teardown_is_refused_in_one_line_for_the_local_backend(cli: Cli) -> None:
    done = cli("run", "hello")
    assert done.returncode == 0, done.stderr
    run_id = cli.submitted_id(done.stdout)
    before = cli.snapshot()
    refused = cli("teardown", run_id)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr == (
        f"x-tui: nothing to tear down for the local backend ({run_id}); to stop a run still"
        f" going: x-tui cancel {run_id}\n"
    )
    assert cli.snapshot() == before


def test_teardown_of_an_unknown_run_is_refused_in_one_line(cli: Cli) -> None:
    refused = cli("teardown", "hello-20260101T000000Z-abcdef")
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert "hello-20260101T000000Z-abcdef" in line
    assert "Traceback" not in refused.stderr
