"""The skypilot backend's settings: the seed's table, one transport, refusals that say why."""

from __future__ import annotations

import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.settings import SkyPilotSettings
from x_tui.compute.worker.errors import ConfigError, UserError
from x_tui.compute.worker.records import JsonValue

BUCKET: dict[str, JsonValue] = {"bucket": {"outputs_bucket": "gs://my-runs"}}


def refusal(settings: dict[str, JsonValue]) -> str:
    with pytest.raises(ConfigError) as refused:
        SkyPilotBackend(settings)
    assert isinstance(refused.value, UserError)
    return str(refused.value)


def test_the_defaults_are_the_seeds_and_the_handle_freezes_every_key() -> None:
    table = SkyPilotSettings.read(BUCKET).table()
    assert table == {
        "infra": None,
        "use_spot": False,
        "setup_commands": [],
        "sky": "sky",
        "sky_python": None,
        "worker_python": "uv run --no-sync python",
        "state_dir": None,
        "bucket": {"outputs_bucket": "gs://my-runs", "buckets": {}},
    }
    assert SkyPilotSettings.read(table) == SkyPilotSettings.read(BUCKET)


def test_a_copy_table_gets_the_seeds_disk_lifetime_and_network_defaults() -> None:
    settings = SkyPilotSettings.read({"copy": {}})
    assert settings.transport_name == "copy"
    assert settings.table()["copy"] == {
        "sources": {},
        "disk_size": 60,
        "lifetime_minutes": 60,
        "network_isolation": False,
    }


def test_an_unknown_key_is_refused_naming_it_the_nearest_and_the_accepted_ones() -> None:
    message = refusal({**BUCKET, "use_spots": True})
    assert "[tool.substrax.compute.backends.skypilot]" in message
    assert "'use_spots'" in message
    assert "did you mean 'use_spot'" in message
    assert "infra, use_spot, setup_commands" in message


def test_an_unknown_key_of_a_transport_table_is_refused_naming_that_table() -> None:
    message = refusal({"bucket": {"outputs_bucket": "gs://b", "bucket": "gs://c"}})
    assert "[tool.substrax.compute.backends.skypilot.bucket]" in message
    assert "'bucket'" in message
    message = refusal({"copy": {"lifetime": 5}})
    assert "[tool.substrax.compute.backends.skypilot.copy]" in message
    assert "did you mean 'lifetime_minutes'" in message


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({}, "sets neither of 'bucket' and 'copy'"),
        ({**BUCKET, "copy": {}}, "sets both of 'bucket' and 'copy'"),
    ],
)
def test_exactly_one_transport_is_required(settings: dict[str, JsonValue], says: str) -> None:
    message = refusal(settings)
    assert says in message
    assert "outputs_bucket" in message


def test_the_outputs_bucket_is_required() -> None:
    assert "missing required key 'outputs_bucket'" in refusal({"bucket": {}})


@pytest.mark.parametrize("uri", ["az://container", "https://bucket", "gs:/x", "my-bucket", "s3://"])
def test_an_unknown_bucket_scheme_is_refused(uri: str) -> None:
    message = refusal({"bucket": {"outputs_bucket": uri}})
    assert repr(uri) in message
    assert "gs:// or s3://" in message


def test_an_input_bucket_with_an_unknown_scheme_is_refused_naming_its_mount() -> None:
    message = refusal({"bucket": {"outputs_bucket": "gs://runs", "buckets": {"data": "r2://data"}}})
    assert "buckets.data" in message


@pytest.mark.parametrize("infra", ["runpod", "vast", "RunPod/US"])
def test_providers_that_cannot_mount_buckets_are_refused_for_the_bucket_transport(
    infra: str,
) -> None:
    message = refusal({**BUCKET, "infra": infra})
    assert "cannot mount buckets" in message
    assert "copy" in message
    SkyPilotBackend({"copy": {}, "infra": infra})  # the copy transport is fine there


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({**BUCKET, "use_spot": "yes"}, "use_spot: expected true or false, got 'yes'"),
        ({**BUCKET, "infra": "gcp us"}, "is not in SkyPilot's infra syntax"),
        ({**BUCKET, "setup_commands": "apt-get update"}, "expected an array of shell commands"),
        ({**BUCKET, "setup_commands": ["ok", ""]}, "setup_commands[1]: expected a non-empty"),
        ({**BUCKET, "worker_python": "python 'unclosed"}, "is not a command line"),
        ({**BUCKET, "sky_python": 3}, "sky_python: expected a non-empty string or nothing"),
        ({"copy": {"disk_size": 0}}, "disk_size: expected a whole number of at least 1, got 0"),
        ({"copy": {"lifetime_minutes": 1.5}}, "lifetime_minutes: expected a whole number"),
        ({"copy": {"network_isolation": 1}}, "network_isolation: expected true or false"),
        ({"copy": {"sources": {"data": "data/dir"}}}, "is not an absolute path"),
        ({"copy": {"sources": {"../x": "/data"}}}, "is not a mount name"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_naming_key_and_value(
    settings: dict[str, JsonValue], says: str
) -> None:
    assert says in refusal(settings)


def test_building_the_backend_looks_for_no_skypilot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = SkyPilotBackend({**BUCKET, "sky": "no-such-sky"})
    assert backend.name == "skypilot"
