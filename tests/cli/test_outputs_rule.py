"""One rule for a run's outputs, end to end: real runs, real files, faults put in by hand.

A task's outputs may hold a 50 GiB sparse file, a link to a directory outside them, a FIFO; the
state directory may be given as a relative path; a fetch destination may be a file, a link, a
read-only or a full file system. Each is met by ``python -m x_tui`` as a user would meet it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tests.cli.cli_support import Cli, Result

pytestmark = pytest.mark.timeout(300)

GIB = 1 << 30

SPARSE = """\
import os, pathlib
out = pathlib.Path(os.environ["AVITAI_OUTPUT_DIR"])
with open(out / "big.bin", "wb") as big:
    big.write(b"head")
    big.seek(25 << 30)
    big.write(b"middle")
    big.truncate(50 << 30)
(out / "small.txt").write_text("kept")
print("wrote a sparse file", flush=True)
"""

JOBS = """
[tool.substrax.compute.jobs.sparse]
timeout_seconds = 120
commands = { writes = ["python", "sparse.py"] }

[tool.substrax.compute.jobs.flaky]
timeout_seconds = 120
retries = 1
commands = { flaky = ["python", "-c", "import sys; print('own line'); sys.exit(3)"] }
"""


@pytest.fixture
def project_cli(cli: Cli) -> Cli:
    cli.write_pyproject(jobs=JOBS, top='backend = "local"')
    (cli.project / "sparse.py").write_text(SPARSE)
    return cli


def _outputs(cli: Cli, run_id: str) -> Path:
    return cli.state / "compute" / "local" / run_id / "outputs"


def _one_line_refusal(result: Result, *says: str) -> None:
    stderr = result.stderr
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    for wanted in says:
        assert wanted in lines[0], lines[0]


def test_a_50_gib_sparse_output_is_fetched_sparse(project_cli: Cli, guarded_disk: Path) -> None:
    into = guarded_disk / "fetched"

    result = project_cli("run", "sparse", "--into", str(into))

    assert result.returncode == 0, result.stderr
    run_id = project_cli.submitted_id(result.stdout)
    source = _outputs(project_cli, run_id) / "writes" / "big.bin"
    copy = into / run_id / "writes" / "big.bin"
    assert copy.stat().st_size == 50 * GIB
    assert copy.stat().st_blocks * 512 <= source.stat().st_blocks * 512 + (1 << 20)
    assert copy.stat().st_blocks * 512 < 16 << 20, "the holes must stay holes"
    with copy.open("rb") as data:
        assert data.read(4) == b"head"
        data.seek(25 * GIB)
        assert data.read(6) == b"middle"
        data.seek(40 * GIB)
        assert data.read(16) == bytes(16)
    assert (into / run_id / "writes" / "small.txt").read_text() == "kept"


def _small_disk(mount: Path, size: str) -> Iterator[Path]:
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"no tmpfs can be mounted here: {made.stderr!r}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, or a skip where this machine cannot mount one."""
    yield from _small_disk(tmp_path / "tiny", "1m")


@pytest.fixture
def guarded_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs: a copy that is not sparse fails there instead of filling the machine."""
    yield from _small_disk(tmp_path / "guarded", "64m")


def _finished_run(cli: Cli, job: str) -> str:
    result = cli("run", job, "--detach")
    assert result.returncode == 0, result.stderr
    run_id = cli.submitted_id(result.stdout)
    cli("logs", run_id, "--follow")
    return run_id


def test_logs_attempts_never_follows_a_linked_directory_out_of_the_outputs(
    project_cli: Cli, tmp_path: Path
) -> None:
    run_id = _finished_run(project_cli, "flaky")
    outputs = _outputs(project_cli, run_id)
    kept = outputs / "attempts" / "flaky"
    assert (kept / "1" / "stdout.log").read_text() == "own line\n"
    outside = tmp_path / "outside"
    (outside / "1").mkdir(parents=True)
    (outside / "1" / "stdout.log").write_text("SECRET from outside the outputs\n")
    real = outputs / "attempts" / "moved"
    kept.rename(real)
    kept.symlink_to(outside, target_is_directory=True)

    result = project_cli("logs", run_id, "--attempts")

    assert "SECRET" not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "flaky: attempt 1 of 2" in result.stdout


def test_logs_attempts_shows_a_fifo_as_refused_and_never_blocks(project_cli: Cli) -> None:
    run_id = _finished_run(project_cli, "flaky")
    log = _outputs(project_cli, run_id) / "attempts" / "flaky" / "1" / "stdout.log"
    log.unlink()
    os.mkfifo(log)

    result = project_cli("logs", run_id, "--attempts")

    assert result.returncode == 0, result.stderr
    assert "(not shown: 'attempts/flaky/1/stdout.log' in the run's outputs is not a regular" in (
        result.stdout
    )


def test_fetch_leaves_out_a_linked_directory_and_a_fifo(project_cli: Cli, tmp_path: Path) -> None:
    run_id = _finished_run(project_cli, "flaky")
    outputs = _outputs(project_cli, run_id)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    (outputs / "flaky" / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(outputs / "flaky" / "pipe")

    result = project_cli("fetch", run_id, "--into", str(tmp_path / "into"))

    _one_line_refusal(result, "left out 2 entries", "flaky/linked (a symbolic link", "flaky/pipe")
    copy = tmp_path / "into" / run_id
    assert (copy / "flaky" / "stdout.log").read_text() == "own line\n"
    assert not (copy / "flaky" / "linked").exists()
    assert not (copy / "flaky" / "pipe").exists()


# --- destinations ---------------------------------------------------------------------------


def _nothing_submitted(cli: Cli) -> None:
    assert not cli.runs.exists() or not list(cli.runs.iterdir())
    assert not (cli.state / "compute" / "local").exists()


def test_run_into_a_file_is_refused_before_anything_is_submitted(project_cli: Cli) -> None:
    afile = project_cli.project / "afile"
    afile.write_text("not a directory")

    _one_line_refusal(project_cli("run", "flaky", "--into", str(afile)), str(afile), "a file")
    _one_line_refusal(
        project_cli("run", "flaky", "--into", str(afile / "below")), str(afile), "not a directory"
    )

    _nothing_submitted(project_cli)
    assert afile.read_text() == "not a directory"


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a read-only file system (a bind mount), or a skip where none can be made."""
    source = tmp_path / "ro-source"
    source.mkdir()
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(source), str(mount)], capture_output=True, check=False
    )
    if made.returncode != 0:
        if os.geteuid() == 0:
            pytest.skip(f"no read-only bind mount here: {made.stderr!r}")
        mount.chmod(0o500)
        yield mount
        mount.chmod(0o700)
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_run_into_an_unwritable_directory_is_refused_before_anything_is_submitted(
    project_cli: Cli, read_only_dir: Path
) -> None:
    result = project_cli("run", "flaky", "--into", str(read_only_dir / "out"))

    _one_line_refusal(result, str(read_only_dir), "not writable")
    _nothing_submitted(project_cli)


def test_fetch_refuses_a_destination_that_is_a_link_and_outputs_replaced_by_a_link(
    project_cli: Cli, tmp_path: Path
) -> None:
    run_id = _finished_run(project_cli, "flaky")
    into = tmp_path / "into"
    into.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (into / run_id).symlink_to(elsewhere, target_is_directory=True)

    _one_line_refusal(
        project_cli("fetch", run_id, "--into", str(into)), str(into / run_id), "symbolic link"
    )
    assert list(elsewhere.iterdir()) == []

    (into / run_id).unlink()
    outputs = _outputs(project_cli, run_id)
    outputs.rename(outputs.with_name("moved"))
    outputs.symlink_to(elsewhere, target_is_directory=True)
    _one_line_refusal(
        project_cli("fetch", run_id, "--into", str(into)), str(outputs), "symbolic link"
    )


def test_fetch_onto_a_full_disk_says_so_in_one_line(project_cli: Cli, tiny_disk: Path) -> None:
    run_id = _finished_run(project_cli, "flaky")
    (_outputs(project_cli, run_id) / "flaky" / "dense.bin").write_bytes(os.urandom(4 << 20))

    result = project_cli("fetch", run_id, "--into", str(tiny_disk))

    _one_line_refusal(result, str(tiny_disk), "No space left on device")


# --- absolute state paths ---------------------------------------------------------------------


def test_a_relative_state_dir_is_stored_absolute_and_read_from_anywhere(
    project_cli: Cli, tmp_path: Path
) -> None:
    relative = {**project_cli.env, "SUBSTRAX_STATE_DIR": "relative-state"}
    done = subprocess.run(
        [*_python_x_tui(), "run", "flaky"],
        cwd=project_cli.project,
        env=relative,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    state = project_cli.project / "relative-state"
    (handle,) = (state / "compute" / "runs").glob("*.json")
    run_id = handle.stem
    assert Path(json.loads(handle.read_text())["details"]["run_dir"]).is_absolute()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    absolute = {**project_cli.env, "SUBSTRAX_STATE_DIR": str(state)}
    status = subprocess.run(
        [*_python_x_tui(), "status", run_id],
        cwd=elsewhere,
        env=absolute,
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.stdout == f"{run_id}  local  flaky  failed\n", status.stderr
    logs = subprocess.run(
        [*_python_x_tui(), "logs", run_id],
        cwd=elsewhere,
        env=absolute,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "[flaky] own line" in logs.stdout


def test_a_relative_state_dir_setting_is_taken_from_the_project_root(
    new_cli: Callable[..., Cli], tmp_path: Path
) -> None:
    cli = new_cli(tmp_path)
    cli.write_pyproject(
        jobs=JOBS,
        top='backend = "local"',
        local=f'python = {json.dumps(sys.executable)}\nstate_dir = "local-state"',
    )
    below = cli.project / "sub"
    below.mkdir()

    result = cli("run", "flaky", "--detach", cwd=below)

    assert result.returncode == 0, result.stderr
    run_id = cli.submitted_id(result.stdout)
    handle = json.loads((cli.runs / f"{run_id}.json").read_text())
    assert handle["settings"]["state_dir"] == str(cli.project / "local-state")
    assert handle["details"]["run_dir"].startswith(str(cli.project / "local-state") + "/")
    cli("logs", run_id, "--follow")


def _python_x_tui() -> list[str]:
    return [sys.executable, "-m", "x_tui"]
