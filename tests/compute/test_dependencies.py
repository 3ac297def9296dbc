"""A job's ``dependencies``: read from its table, kept out of spec.json, refused when malformed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from x_tui.compute.config import read_compute_config, resolve_request
from x_tui.compute.dependencies import Dependencies, read_dependencies
from x_tui.compute.worker.errors import ConfigError
from x_tui.compute.worker.records import dumps_compact

WHERE = "pyproject.toml: [tool.substrax.compute.jobs.train]"


def _project(root: Path, dependencies: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [tool.substrax.compute.jobs.train]
            commands = {{ train = ["python", "train.py"] }}
            timeout_seconds = 60
            dependencies = {dependencies}
            """
        )
    )
    return root


def test_a_jobs_dependencies_are_read_and_never_reach_its_spec(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        '{ python = ["torch==2.7.1", "transformers>=4.40"], apt = ["ffmpeg", "libgl1-mesa-glx"],'
        ' post_install = ["python -m nltk.downloader punkt"] }',
    )
    resolved = resolve_request(read_compute_config(root), "train", project=root)

    assert resolved.extensions.dependencies == Dependencies(
        python=("torch==2.7.1", "transformers>=4.40"),
        apt=("ffmpeg", "libgl1-mesa-glx"),
        post_install=("python -m nltk.downloader punkt",),
    )
    assert "dependencies" not in json.loads(dumps_compact(resolved.spec))
    assert "torch" not in dumps_compact(resolved.spec)


def test_the_summary_is_one_line_for_the_plan() -> None:
    declared = Dependencies(python=("torch==2.7.1",), apt=("ffmpeg",), post_install=("a", "b"))
    assert declared.summary() == "python torch==2.7.1; apt ffmpeg; 2 post_install commands"
    assert Dependencies().summary() == "none"
    assert not Dependencies()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["torch"]', "dependencies: expected a table"),
        ('{ pip = ["torch"] }', "unknown key 'pip'"),
        ('{ python = "torch" }', "dependencies.python: expected an array"),
        ("{ python = [1] }", "dependencies.python[0]: expected a string"),
        ('{ python = ["torch==2", "torch==2"] }', "python[1]: 'torch==2' is listed twice"),
        ('{ python = ["--index-url x"] }', "python[0]: '--index-url x' is not a PEP 508"),
        ('{ apt = ["FFmpeg"] }', "apt[0]: 'FFmpeg' is not a Debian package name"),
        ('{ apt = ["ffmpeg; rm -rf /"] }', "apt[0]: 'ffmpeg; rm -rf /' is not a Debian"),
        ('{ post_install = [""] }', "post_install[0]: '' is not a shell command"),
        ('{ post_install = ["a\\nb"] }', "post_install[0]: 'a\\nb' is not a shell command"),
    ],
)
def test_a_malformed_declaration_is_refused_naming_the_key_and_value(
    tmp_path: Path, value: str, expected: str
) -> None:
    root = _project(tmp_path, value)
    with pytest.raises(ConfigError) as refused:
        resolve_request(read_compute_config(root), "train", project=root)
    message = str(refused.value)
    assert f"{root / 'pyproject.toml'}: [tool.substrax.compute.jobs.train]" in message
    assert expected in message


def test_read_dependencies_names_where_it_was_read() -> None:
    with pytest.raises(ConfigError, match=r"^pyproject.toml: \[tool.*train\] dependencies.apt"):
        read_dependencies({"apt": "ffmpeg"}, where=WHERE)
