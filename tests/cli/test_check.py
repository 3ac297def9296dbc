"""``x-tui check`` and the ``jobs`` marking: each x-tui extension, inline and in the overlay table.

Inline, in ``[tool.substrax.compute.jobs.<name>]``, an extension makes the job one substrax 0.1.x
refuses: ``jobs`` marks it with the key, ``check`` exits 1 and prints the two tables that fix it.
In x-tui's overlay, ``[tool.x-tui.jobs.<name>]``, the substrax table stays runnable by both: no
mark, ``check`` exits 0, and x-tui still reads the extension. The printed fix, applied, is such a
project, and x-tui resolves it to the same job.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from x_tui.cli import main
from x_tui.compute.config import read_compute_config, resolve_request
from x_tui.compute.worker.records import dump_record

HEAD = """\
[project]
name = "demo"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.jobs.train]
commands = { train = ["python", "-c", "pass"] }
"""

# Each extension: the key, its x-tui value (as TOML), and what substrax reads in its place.
EXTENSIONS = {
    "timeout_seconds": ('"6h"', "21600"),
    "task_timeout_seconds": ('"10m"', "600"),
    "resources.accelerator": ('"H100:8,A100-80GB:8"', '{ kind = "H100", count = 8 }'),
    "resources.cpu": ('"8"', "8"),
    "resources.memory": ('"256Gi"', None),
    "retries": ("2", None),
    "secrets": ('{ env = ["WANDB_API_KEY"] }', None),
    "dependencies": ('{ apt = ["ffmpeg"] }', None),
}


def _body(key: str, value: str) -> str:
    timeout = "" if key == "timeout_seconds" else "timeout_seconds = 600\n"
    return f"{timeout}{key} = {value}\n"


def _run(project: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--project", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("key", EXTENSIONS)
def test_an_inline_extension_is_marked_and_check_prints_the_fix(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value, _ = EXTENSIONS[key]
    (tmp_path / "pyproject.toml").write_text(HEAD + _body(key, value))

    code, out, err = _run(tmp_path, capsys, "jobs")
    assert code == 0, err
    marks = [line for line in out.splitlines() if "substrax cannot run it" in line]
    assert len(marks) == 1
    assert marks[0].startswith(f"  substrax cannot run it: {key} = ")
    assert marks[0].endswith("; see x-tui check")
    code, out, err = _run(tmp_path, capsys, "jobs", "--json")
    assert json.loads(out)["substrax_cannot_run"] == {"train": [key]}

    code, out, err = _run(tmp_path, capsys, "check")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith(f"job train: substrax cannot run it: {key} = ")
    assert "    [tool.x-tui.jobs.train]" in lines
    assert f"    {key} = {value}" in lines[lines.index("    [tool.x-tui.jobs.train]") :]

    # The fix, applied: check passes, and x-tui resolves the very same job.
    code, out, err = _run(tmp_path, capsys, "check", "--json")
    fix = json.loads(out)["jobs"]["train"]["fix"]
    before = resolve_request(read_compute_config(tmp_path), "train", project=tmp_path)
    rest = "" if key == "timeout_seconds" else "timeout_seconds = 600\n"
    substrax_part = fix[: fix.index("[tool.x-tui.jobs.train]")]
    overlay_part = fix[fix.index("[tool.x-tui.jobs.train]") :]
    fixed = HEAD + rest + "\n".join(substrax_part[1:]) + "\n\n" + "\n".join(overlay_part) + "\n"
    (tmp_path / "pyproject.toml").write_text(fixed)
    code, out, err = _run(tmp_path, capsys, "check")
    assert code == 0, out + err
    assert out == "every job can be run by substrax too\n"
    after = resolve_request(read_compute_config(tmp_path), "train", project=tmp_path)
    assert dump_record(after.spec) == dump_record(before.spec)
    assert after.request == before.request
    assert after.extensions == before.extensions


@pytest.mark.parametrize("key", EXTENSIONS)
def test_an_extension_in_the_overlay_leaves_the_job_runnable_by_substrax(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value, _ = EXTENSIONS[key]
    overlay = f"\n[tool.x-tui.jobs.train]\n{key} = {value}\n"
    (tmp_path / "pyproject.toml").write_text(HEAD + "timeout_seconds = 600\n" + overlay)

    code, out, err = _run(tmp_path, capsys, "jobs")
    assert code == 0, err
    assert "substrax cannot run it" not in out
    code, out, err = _run(tmp_path, capsys, "check")
    assert (code, out) == (0, "every job can be run by substrax too\n")

    inline = tmp_path / "inline"
    inline.mkdir()
    (inline / "pyproject.toml").write_text(HEAD + _body(key, value))
    ours = resolve_request(read_compute_config(tmp_path), "train", project=tmp_path)
    theirs = resolve_request(read_compute_config(inline), "train", project=inline)
    assert dump_record(ours.spec) == dump_record(theirs.spec)
    assert ours.request == theirs.request
    assert ours.extensions == theirs.extensions


def test_check_exits_2_on_a_bad_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        HEAD + "timeout_seconds = 600\n[tool.x-tui]\njbos = 1\n"
    )
    code, out, err = _run(tmp_path, capsys, "check")
    assert code == 2
    assert out == ""
    assert "[tool.x-tui] unknown key 'jbos'; did you mean 'jobs'?" in err


def test_an_overlay_of_no_job_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = HEAD + "timeout_seconds = 600\n[tool.x-tui.jobs.trian]\nretries = 1\n"
    (tmp_path / "pyproject.toml").write_text(text)
    code, _, err = _run(tmp_path, capsys, "check")
    assert code == 2
    assert "[tool.x-tui.jobs.trian] overlays no job of [tool.substrax.compute.jobs]" in err
    assert "(configured: train)" in err
