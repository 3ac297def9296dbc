"""One store shared by substrax 0.1.22 and x-tui, in a project that locks substrax 0.1.22.

Each direction goes through the other tool's CLI (real processes) and API: a run substrax submits
is listed, followed, fetched and cancelled by x-tui; a run x-tui submits is listed, logged,
fetched and cancelled by substrax; the records compare byte for byte and substrax's own readers
read x-tui's; and ``substrax-compute status`` still lists every run after x-tui wrote handles.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.interop.harness import Substrax, submitted, substrax_line, xtui_state
from tests.support import wait_for
from x_tui.compute.backend import RunState
from x_tui.compute.operations import backend_for
from x_tui.compute.store import RunStore, SettingsOrigin, handle_json


def without_seconds(manifest: str) -> object:
    """A manifest's JSON with each task's measured seconds taken out."""
    data = json.loads(manifest)
    for task in data["tasks"]:
        task.pop("seconds")
    return data


def test_a_run_substrax_submits_is_listed_followed_and_fetched_by_x_tui(
    shared: Substrax, tmp_path: Path
) -> None:
    done = shared("run", "hello", "--detach")
    assert done.returncode == 0, done.stderr
    run_id = submitted(done.stdout)
    handle = json.loads((shared.cli.runs / f"{run_id}.json").read_text())
    assert handle["schema_version"] == 1
    assert "settings" not in handle

    listed = shared.cli("status")
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith(run_id))
    assert line.startswith(f"{run_id}  local  hello  ")
    assert line.endswith("(settings from the project, as substrax 0.1.x)")
    followed = shared.cli("logs", run_id, "--follow")
    assert followed.returncode == 0, followed.stderr
    assert "[writes] hello from the task" in followed.stdout.splitlines()
    assert xtui_state(shared, run_id) == "succeeded"
    assert substrax_line(shared, run_id) == f"{run_id}  local  hello  succeeded"

    into = tmp_path / "fetched"
    fetched = shared.cli("fetch", run_id, "--into", str(into))
    assert fetched.returncode == 0, fetched.stderr
    assert (into / run_id / "writes" / "result" / "value.txt").read_text() == "42"
    theirs = tmp_path / "theirs"
    assert shared("fetch", run_id, "--into", str(theirs)).returncode == 0
    assert (into / run_id / "manifest.json").read_bytes() == (
        theirs / run_id / "manifest.json"
    ).read_bytes()
    # x-tui never rewrote substrax's handle.
    assert json.loads((shared.cli.runs / f"{run_id}.json").read_text()) == handle

    # x-tui's API: the handle as read, its settings the project's, written back byte for byte.
    store = RunStore(shared.cli.runs)
    loaded = store.load(run_id)
    assert loaded.settings == {"python": str(shared.home / "bin" / "python")}
    assert store.settings_origin(loaded) is SettingsOrigin.PROJECT
    assert handle_json(loaded) == (shared.cli.runs / f"{run_id}.json").read_text()
    backend = backend_for(loaded)
    assert backend.status(loaded) is RunState.SUCCEEDED
    assert "[writes] hello from the task" in list(backend.logs(loaded, follow=False))


def test_a_run_substrax_submits_is_cancelled_by_x_tui(shared: Substrax) -> None:
    done = shared("run", "slow", "--detach")
    assert done.returncode == 0, done.stderr
    run_id = submitted(done.stdout)
    wait_for(lambda: xtui_state(shared, run_id) == "running", "x-tui to see it running")
    assert substrax_line(shared, run_id).endswith("  running")

    cancelled = shared.cli("cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr
    wait_for(lambda: xtui_state(shared, run_id) == "cancelled", "x-tui to see it cancelled")
    assert substrax_line(shared, run_id) == f"{run_id}  local  slow  cancelled"
    assert shared.cli("cancel", run_id).returncode == 0  # a second cancel changes nothing


def test_a_run_x_tui_submits_is_listed_logged_fetched_by_substrax(
    shared: Substrax, tmp_path: Path
) -> None:
    theirs = shared("run", "hello", "--detach")
    assert theirs.returncode == 0, theirs.stderr
    substrax_run = submitted(theirs.stdout)
    planned = shared.cli("plan", "hello")
    assert (
        "handle       version 1 (substrax 0.1.x's): the project locks substrax 0.1.22"
        in planned.stdout.splitlines()
    )

    done = shared.cli("run", "hello")
    assert done.returncode == 0, done.stderr
    run_id = submitted(done.stdout)
    path = shared.cli.runs / f"{run_id}.json"
    handle = json.loads(path.read_text())
    assert list(handle) == [
        "schema_version", "run_id", "backend", "job", "project", "submitted_at", "details"
    ]  # fmt: skip
    assert handle["schema_version"] == 1
    side = shared.cli.state / "x-tui" / "handles" / f"{run_id}.json"
    assert json.loads(side.read_text())["run_id"] == run_id

    # substrax lists every run, its own and x-tui's, and reads x-tui's handle byte for byte.
    listed = shared("status")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert f"{run_id}  local  hello  succeeded" in lines
    assert any(line.startswith(f"{substrax_run}  local  hello  ") for line in lines)
    logged = shared("logs", run_id)
    assert logged.returncode == 0, logged.stderr
    assert "[writes] hello from the task" in logged.stdout.splitlines()
    into = tmp_path / "by-substrax"
    fetched = shared("fetch", run_id, "--into", str(into))
    assert fetched.returncode == 0, fetched.stderr
    assert fetched.stdout.strip() == f"Fetched {run_id} to {into / run_id}."
    assert (into / run_id / "writes" / "result" / "value.txt").read_text() == "42"

    api = shared.api({"what": "store", "status": [run_id], "dump": [run_id]})
    assert {h["run_id"] for h in api["handles"]} >= {run_id, substrax_run}  # type: ignore[union-attr]
    assert api[run_id] == "succeeded"
    assert api[f"dump:{run_id}"] == path.read_text()  # substrax writes it back unchanged

    run_dir = Path(handle["details"]["run_dir"])
    records = shared.api(
        {
            "what": "records",
            "spec": str(run_dir / "spec.json"),
            "manifest": str(run_dir / "outputs" / "manifest.json"),
        }
    )
    assert records["spec"] == (run_dir / "spec.json").read_text()
    assert records["manifest"] == (run_dir / "outputs" / "manifest.json").read_text()

    # The same job submitted by each tool: the same spec bytes, the same manifest but seconds.
    their_dir = Path(
        json.loads((shared.cli.runs / f"{substrax_run}.json").read_text())["details"]["run_dir"]
    )
    assert (their_dir / "spec.json").read_bytes() == (run_dir / "spec.json").read_bytes()
    wait_for(lambda: substrax_line(shared, substrax_run).endswith("  succeeded"), "their run")
    assert without_seconds((their_dir / "outputs" / "manifest.json").read_text()) == (
        without_seconds((run_dir / "outputs" / "manifest.json").read_text())
    )


def test_a_run_x_tui_submits_is_cancelled_by_substrax(shared: Substrax) -> None:
    done = shared.cli("run", "slow", "--detach")
    assert done.returncode == 0, done.stderr
    run_id = submitted(done.stdout)
    wait_for(lambda: substrax_line(shared, run_id).endswith("  running"), "substrax: running")

    cancelled = shared("cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"Cancelled {run_id}."
    wait_for(lambda: xtui_state(shared, run_id) == "cancelled", "x-tui to see it cancelled")
    assert substrax_line(shared, run_id) == f"{run_id}  local  slow  cancelled"


def test_a_project_that_does_not_lock_substrax_gets_the_seeds_version_2(shared: Substrax) -> None:
    (shared.cli.project / "uv.lock").unlink()
    planned = shared.cli("plan", "hello")
    assert (
        "handle       version 2: the project does not lock substrax" in planned.stdout.splitlines()
    )
    done = shared.cli("run", "hello", "--detach")
    assert done.returncode == 0, done.stderr
    run_id = submitted(done.stdout)
    handle = json.loads((shared.cli.runs / f"{run_id}.json").read_text())
    assert handle["schema_version"] == 2
    assert handle["settings"] == {
        "python": str(shared.home / "bin" / "python"),
        "state_dir": None,
    }
    assert not (shared.cli.state / "x-tui" / "handles").exists()


def test_handle_version_in_x_tuis_settings_overrides_the_lock(shared: Substrax) -> None:
    (shared.cli.project / "uv.lock").unlink()
    Path(shared.cli.env["X_TUI_CONFIG"]).write_text("handle_version = 1\n")
    planned = shared.cli("plan", "hello")
    assert f"handle_version = 1 in {shared.cli.env['X_TUI_CONFIG']}" in planned.stdout
    done = shared.cli("run", "hello")
    assert done.returncode == 0, done.stderr
    run_id = submitted(done.stdout)
    assert json.loads((shared.cli.runs / f"{run_id}.json").read_text())["schema_version"] == 1
    assert shared("status").stdout.splitlines() == [f"{run_id}  local  hello  succeeded"]
