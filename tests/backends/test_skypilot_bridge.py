"""The bridge: SkyPilot's interpreter found as a tool install lays it out, JSON across a real
process boundary, and one clear line when SkyPilot is missing, unusable or has no cloud."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.bridge import Bridge, find_interpreter
from x_tui.compute.worker.errors import BackendUnavailableError, ProviderError
from x_tui.compute.worker.spec import JobSpec, Task

from .fake_sky.harness import (
    FakeSky,
    SkyTool,
    make_locked_project,
    run_cli,
    sky_pyproject,
)

JOB = """\
[tool.substrax.compute.jobs.hello]
commands = { hi = ["python", "-c", "print('hi')"] }
timeout_seconds = 120
"""


def imports_sky(python: str) -> bool:
    done = subprocess.run([python, "-I", "-c", "import sky"], capture_output=True, check=False)
    return done.returncode == 0


def test_the_python_beside_the_sky_link_is_used_without_resolving_it(sky_tool: SkyTool) -> None:
    found = find_interpreter(str(sky_tool.link), None)
    assert found == [str(sky_tool.venv / "bin" / "python")]
    assert Path(found[0]).is_symlink()
    assert imports_sky(found[0])
    # Resolving the python too would land on the base interpreter, which has no sky.
    assert not imports_sky(os.path.realpath(found[0]))


def test_sky_is_found_on_path_by_name(sky_tool: SkyTool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{sky_tool.link.parent}{os.pathsep}{os.environ['PATH']}")
    assert find_interpreter("sky", None) == [str(sky_tool.venv / "bin" / "python")]


def test_without_a_python_beside_it_the_sky_scripts_shebang_names_the_interpreter(
    sky_tool: SkyTool, tmp_path: Path
) -> None:
    script = tmp_path / "elsewhere" / "sky"
    script.parent.mkdir()
    script.write_text(f"#!{sky_tool.python}\nimport sky\n")
    script.chmod(0o755)
    assert find_interpreter(str(script), None) == [str(sky_tool.python)]


def test_the_sky_python_setting_wins(sky_tool: SkyTool) -> None:
    assert find_interpreter("no-such-sky", str(sky_tool.python)) == [str(sky_tool.python)]


def test_without_skypilot_one_line_says_how_to_install_it_for_the_configured_cloud(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BackendUnavailableError) as refused:
        find_interpreter("sky", None, cloud="gcp")
    message = str(refused.value)
    assert "\n" not in message
    assert "SkyPilot is not installed here (no 'sky' command on PATH)" in message
    assert 'uv tool install "skypilot[gcp]"' in message


def test_a_sky_python_that_does_not_exist_is_named() -> None:
    with pytest.raises(BackendUnavailableError, match=r"sky_python = '/no/python' does not exist"):
        find_interpreter("sky", "/no/python")


def test_the_answer_is_read_past_what_skypilot_prints_on_stdout(fake_sky: FakeSky) -> None:
    bridge = Bridge(sky=str(fake_sky.tool.link), sky_python=None)
    answer = bridge.call("launch_state", {"cluster": "sx-none", "request_id": None}, what="asking")
    assert answer == {"state": "unknown", "request_id": None, "cluster_exists": False}


def test_an_interpreter_that_dies_without_answering_is_a_provider_error(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'Segmentation fault (core dumped)' >&2\nexit 139\n")
    python.chmod(0o755)
    bridge = Bridge(sky="sky", sky_python=str(python))
    with pytest.raises(ProviderError, match=r"ended without an answer.*Segmentation fault"):
        bridge.call("queue", {"cluster": "c"}, what="reading the queue of c")


def test_an_interpreter_that_never_answers_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexec sleep 600\n")
    python.chmod(0o755)
    bridge = Bridge(sky="sky", sky_python=str(python))
    with pytest.raises(ProviderError, match=r"did not answer within 0.5 s while reading"):
        bridge.call("queue", {"cluster": "c"}, what="reading the queue of c", seconds=0.5)


def test_a_log_read_that_never_ends_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text(
        f"#!{sys.executable}\nimport json, sys, time\n"
        "request = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'id': request['id'], 'event': 'chunk', 'text': 'a\\n'}), flush=True)\n"
        "time.sleep(600)\n"
    )
    python.chmod(0o755)
    bridge = Bridge(sky="sky", sky_python=str(python))
    chunks: list[str] = []
    stream = bridge.stream("logs", {}, what="reading the log of c", seconds=0.5)
    with pytest.raises(ProviderError, match=r"did not answer within 0.5 s while reading the log"):
        chunks.extend(stream)
    assert chunks == ["a\n"]


def test_a_skypilot_without_the_sdk_the_bridge_calls_is_refused_naming_what_it_lacks(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old-sky"
    (old / "sky").mkdir(parents=True)
    (old / "sky" / "__init__.py").write_text("__version__ = '0.9.3'\ndef launch(): pass\n")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "old_sky.pth").write_text(f"{old}\n")
    bridge = Bridge(sky="sky", sky_python=str(venv / "bin" / "python"))
    with pytest.raises(BackendUnavailableError) as refused:
        bridge.call("queue", {"cluster": "c"}, what="reading the queue of c")
    assert "SkyPilot 0.9.3 lacks get, stream_and_get" in str(refused.value)
    assert "x-tui needs SkyPilot 0.14" in str(refused.value)


def test_with_no_cloud_enabled_submit_says_so_in_one_line_and_launches_nothing(
    fake_sky: FakeSky, tmp_path: Path
) -> None:
    fake_sky.enable_clouds()
    project = make_locked_project(tmp_path / "project", {})
    backend = SkyPilotBackend(
        {
            "sky": str(fake_sky.tool.link),
            "state_dir": str(tmp_path / "state"),
            "bucket": {"outputs_bucket": "s3://runs"},
        }
    )
    spec = JobSpec(
        name="hello",
        tasks=(Task(name="hi", argv=("python", "-c", "print(1)"), timeout_seconds=60.0),),
        timeout_seconds=60.0,
    )
    with pytest.raises(BackendUnavailableError) as refused:
        backend.submit(spec, project=project)
    assert str(refused.value) == "SkyPilot has no cloud enabled; run `sky check` to see why"
    assert fake_sky.launches() == []
    assert fake_sky.requests("launch") == []


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """The environment of an x-tui subprocess: its own state."""
    return {**os.environ, "SUBSTRAX_STATE_DIR": str(tmp_path / "state")}


def test_the_cli_refuses_a_run_without_skypilot_with_one_line_and_exit_2(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    project = make_locked_project(tmp_path / "project", {})
    (project / "pyproject.toml").write_text(
        sky_pyproject(tmp_path / "no-such" / "sky", "bucket", {"outputs_bucket": "s3://runs"}, JOB)
    )
    done = run_cli(["run", "hello"], cwd=project, env=cli_env)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("x-tui: SkyPilot is not installed here")
    assert 'uv tool install "skypilot[<cloud>]"' in lines[0]
    assert "Traceback" not in done.stderr


def test_the_cli_refuses_a_run_with_no_cloud_enabled_with_one_line_and_exit_2(
    fake_sky: FakeSky, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    fake_sky.enable_clouds()
    project = make_locked_project(tmp_path / "project", {})
    (project / "pyproject.toml").write_text(
        sky_pyproject(fake_sky.tool.link, "bucket", {"outputs_bucket": "s3://runs"}, JOB)
    )
    done = run_cli(["run", "hello"], cwd=project, env=cli_env)
    assert done.returncode == 2
    assert done.stderr == "x-tui: SkyPilot has no cloud enabled; run `sky check` to see why\n"
    assert fake_sky.launches() == []
