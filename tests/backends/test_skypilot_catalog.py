"""Accelerators and hourly prices from SkyPilot's catalog cache, read offline; the plan's cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.backends.skypilot.backend import SkyPilotBackend
from x_tui.backends.skypilot.catalog import accelerator_kinds
from x_tui.compute.extensions import ResourceRequest
from x_tui.compute.resources import ResourceError, parse_accelerators
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import JobSpec, Task

from .fake_sky.catalogs import seed
from .fake_sky.harness import FakeSky, make_locked_project


def make_backend(fake: FakeSky, **settings: JsonValue) -> SkyPilotBackend:
    return SkyPilotBackend(
        {"sky": str(fake.tool.link), "bucket": {"outputs_bucket": "s3://runs"}, **settings}
    )


def cost(
    fake: FakeSky, tmp_path: Path, accelerator: str | list[str] | None, **settings: JsonValue
) -> JsonValue:
    project = make_locked_project(tmp_path / "project", {})
    spec = JobSpec(
        name="priced",
        tasks=(Task(name="t", argv=("python", "t.py"), timeout_seconds=60.0),),
        timeout_seconds=60.0,
    )
    request = ResourceRequest(
        accelerator=parse_accelerators(accelerator) if accelerator is not None else None
    )
    return make_backend(fake, **settings).plan(spec, project=project, request=request)["cost"]


def test_the_offers_are_each_cached_catalogs_accelerators(fake_sky: FakeSky) -> None:
    seed(fake_sky)
    offers = make_backend(fake_sky).offers()
    assert accelerator_kinds(offers) == {"A10G": (1,), "H100": (8,), "L4": (1,)}
    h100 = sorted((offer.cloud, offer.price) for offer in offers if offer.accelerator == "H100")
    assert h100 == [("aws", 98.32), ("gcp", 88.49)]  # each shape at its cheapest region


def test_the_configured_infra_limits_the_offers_to_its_cloud(fake_sky: FakeSky) -> None:
    seed(fake_sky)
    offers = make_backend(fake_sky, infra="aws/us-east-1").offers()
    assert {offer.cloud for offer in offers} == {"aws"}


def test_the_plan_prices_every_node_at_the_cheapest_offer(
    fake_sky: FakeSky, tmp_path: Path
) -> None:
    seed(fake_sky)
    assert cost(fake_sky, tmp_path, "H100:16") == {
        "hourly_cost_usd": 176.98,
        "accelerator": "H100:8",
        "nodes": 2,
        "spot": False,
        "cloud": "gcp",
        "instance_type": "a3-highgpu-8g",
        "region": "us-central1",
    }


def test_spot_runs_are_priced_at_spot_prices(fake_sky: FakeSky, tmp_path: Path) -> None:
    seed(fake_sky)
    priced = cost(fake_sky, tmp_path, "A10G", use_spot=True)
    assert isinstance(priced, dict)
    assert priced["hourly_cost_usd"] == 0.4
    assert priced["spot"] is True


def test_the_first_priced_alternative_is_the_estimate(fake_sky: FakeSky, tmp_path: Path) -> None:
    seed(fake_sky)
    priced = cost(fake_sky, tmp_path, ["B200:8", "L4"])
    assert isinstance(priced, dict)
    assert (priced["accelerator"], priced["hourly_cost_usd"]) == ("L4:1", 0.85)


@pytest.mark.parametrize(
    ("accelerator", "says"),
    [
        ("H100:8", "no estimate: SkyPilot's catalog cache has no price for H100:8"),
        (
            None,
            "no estimate: the catalog prices machines by accelerator, and this job asks for none",
        ),
    ],
)
def test_without_a_price_the_plan_says_why(
    fake_sky: FakeSky, tmp_path: Path, accelerator: str | None, says: str
) -> None:
    said = cost(fake_sky, tmp_path, accelerator)
    assert isinstance(said, str)
    assert said.startswith(says)


def test_the_picker_gets_each_kind_its_counts_and_a_price_per_accelerator(
    fake_sky: FakeSky,
) -> None:
    seed(fake_sky)
    offers = {offer.kind: offer for offer in make_backend(fake_sky).accelerators()}
    assert sorted(offers) == ["A10G", "H100", "L4"]
    assert offers["H100"].counts == (8,)
    assert offers["H100"].hourly_usd == round(88.49 / 8, 4)
    assert offers["A10G"].hourly_usd == 1.006
    assert offers["H100"].source == "SkyPilot's catalog cache (every cloud)"


def test_an_accelerator_the_catalogs_do_not_list_is_refused_before_submitting(
    fake_sky: FakeSky,
) -> None:
    seed(fake_sky)
    backend = make_backend(fake_sky)
    with pytest.raises(ResourceError, match=r"skypilot does not offer B200.*H100:8"):
        backend.check_offer(ResourceRequest(accelerator=parse_accelerators("H100:8,B200:8")))
    with pytest.raises(ResourceError, match=r"offers H100 in counts of 8 per node, not 4"):
        backend.check_offer(ResourceRequest(accelerator=parse_accelerators("H100:4")))
    backend.check_offer(ResourceRequest(accelerator=parse_accelerators("H100:16")))


def test_without_catalogs_or_skypilot_nothing_is_refused(fake_sky: FakeSky) -> None:
    request = ResourceRequest(accelerator=parse_accelerators("B200:8"))
    make_backend(fake_sky).check_offer(request)  # no catalog cached yet
    SkyPilotBackend({"sky": "/nowhere/sky", "bucket": {"outputs_bucket": "s3://runs"}}).check_offer(
        request
    )
