"""A job's ``secrets``: names read from its table, values captured at submit and shown nowhere."""

from __future__ import annotations

import textwrap
import traceback
from pathlib import Path

import pytest

from x_tui.compute.config import read_compute_config, resolve_request
from x_tui.compute.secrets import (
    MissingSecretError,
    SecretsRequest,
    SecretValues,
    capture,
    read_secrets,
)
from x_tui.compute.worker.errors import ConfigError, UserError
from x_tui.compute.worker.records import dumps_compact

VALUE = "s3cr3t-value-9f2e"
WHERE = "pyproject.toml: [tool.substrax.compute.jobs.train]"


def _project(root: Path, secrets: str, *, env: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [tool.substrax.compute.jobs.train]
            commands = {{ train = ["python", "train.py"] }}
            timeout_seconds = 60
            secrets = {secrets}
            {env}
            """
        )
    )
    return root


def test_the_four_sources_are_read_in_urun_s_shape(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        '{ env = ["WANDB_API_KEY"], optional_env = ["HF_TOKEN"],'
        ' env_mapping = { HF_TOKEN = "HUGGING_FACE_HUB_TOKEN" }, platform = ["hf-token"] }',
    )
    resolved = resolve_request(read_compute_config(root), "train", project=root)
    secrets = resolved.extensions.secrets

    assert secrets.sources == ("WANDB_API_KEY", "HF_TOKEN")
    assert secrets.required == ("WANDB_API_KEY",)
    assert secrets.task_names == ("WANDB_API_KEY", "HUGGING_FACE_HUB_TOKEN")
    assert secrets.platform == ("hf-token",)
    assert "WANDB_API_KEY" not in dumps_compact(resolved.spec)


def test_capture_takes_required_and_set_optional_values_under_their_task_names() -> None:
    request = SecretsRequest(
        env=("WANDB_API_KEY",),
        optional_env=("HF_TOKEN", "OPENAI_API_KEY"),
        env_mapping={"HF_TOKEN": "HUGGING_FACE_HUB_TOKEN"},
    )
    shell = {"WANDB_API_KEY": VALUE, "HF_TOKEN": "hf-value", "UNRELATED": "x"}

    values = capture(request, shell)

    assert dict(values) == {"WANDB_API_KEY": VALUE, "HUGGING_FACE_HUB_TOKEN": "hf-value"}
    assert values.skipped == ("OPENAI_API_KEY",)


def test_a_mapped_source_not_listed_elsewhere_is_required() -> None:
    request = SecretsRequest(env_mapping={"GH_TOKEN": "GITHUB_TOKEN"})
    with pytest.raises(MissingSecretError, match="GH_TOKEN"):
        capture(request, {})
    assert dict(capture(request, {"GH_TOKEN": VALUE})) == {"GITHUB_TOKEN": VALUE}


def test_every_unset_required_variable_is_named_in_one_user_error() -> None:
    request = SecretsRequest(env=("WANDB_API_KEY", "OPENAI_API_KEY"), optional_env=("HF_TOKEN",))
    with pytest.raises(MissingSecretError) as refused:
        capture(request, {"OPENAI_API_KEY": "set"}, job="train")
    assert isinstance(refused.value, UserError)
    assert str(refused.value) == (
        "job 'train' needs WANDB_API_KEY from this shell (secrets.env), and it is not set;"
        " export it, or list it in secrets.optional_env"
    )


def test_a_captured_value_never_shows_in_a_repr_a_str_or_a_traceback() -> None:
    values = SecretValues({"WANDB_API_KEY": VALUE})
    assert VALUE not in repr(values)
    assert VALUE not in str(values)
    assert "WANDB_API_KEY" in repr(values)
    try:
        raise RuntimeError(f"submit failed with {values}")
    except RuntimeError:
        assert VALUE not in traceback.format_exc()


def test_describe_gives_names_and_which_are_unset_never_a_value() -> None:
    request = SecretsRequest(env=("WANDB_API_KEY",), optional_env=("HF_TOKEN",))
    described = request.describe({"WANDB_API_KEY": VALUE})
    assert described == {
        "env": ["WANDB_API_KEY"],
        "optional_env": ["HF_TOKEN"],
        "env_mapping": {},
        "platform": [],
        "unset": ["HF_TOKEN"],
    }
    assert VALUE not in repr(described)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["WANDB_API_KEY"]', 'secrets: expected a table such as { env = ["WANDB_API_KEY"] }'),
        ('{ environment = ["X"] }', "unknown key 'environment'"),
        ('{ env = "WANDB_API_KEY" }', "secrets.env: expected an array"),
        ('{ env = ["WANDB-KEY"] }', "env[0]: 'WANDB-KEY' is not an environment variable name"),
        ('{ env = ["A"], optional_env = ["A"] }', "optional_env[0]: 'A' is already listed in env"),
        ('{ env = ["A", "B"], env_mapping = { A = "C", B = "C" } }', "would both be 'C'"),
        ('{ env = ["A"], env_mapping = { A = "AVITAI_OUTPUT_DIR" } }', "the worker sets"),
        ('{ env = ["XLA_FLAGS"] }', "drops JAX_*, XLA_*"),
        ('{ platform = ["has space"] }', "platform[0]: 'has space' is not a secret name"),
        ('{ platform = ["a", "a"] }', "platform[1]: 'a' is listed twice"),
    ],
)
def test_a_malformed_declaration_is_refused_naming_the_file_key_and_value(
    tmp_path: Path, value: str, expected: str
) -> None:
    root = _project(tmp_path, value)
    with pytest.raises(ConfigError) as refused:
        resolve_request(read_compute_config(root), "train", project=root)
    assert f"{root / 'pyproject.toml'}: [tool.substrax.compute.jobs.train]" in str(refused.value)
    assert expected in str(refused.value)


def test_a_secret_the_job_s_env_also_sets_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path, '{ env = ["HF_TOKEN"] }', env='env = { HF_TOKEN = "public" }')
    with pytest.raises(ConfigError, match="'HF_TOKEN' is also set in env"):
        resolve_request(read_compute_config(root), "train", project=root)


def test_read_secrets_names_where_it_was_read() -> None:
    with pytest.raises(ConfigError, match=r"^pyproject.toml: \[tool.*train\] secrets.platform"):
        read_secrets({"platform": "name"}, where=WHERE)
