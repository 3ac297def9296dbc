"""Offers, the offer check, the cost bound, Modal's dated table and this machine's GPU names."""

from __future__ import annotations

import math
import re

import pytest

from x_tui.backends.local.machine import gpu_kind, offers, runs_on
from x_tui.compute.estimate import AcceleratorOffer, check_offer, estimate_cost
from x_tui.compute.extensions import CpuRequest, ResourceRequest
from x_tui.compute.prices import MODAL, MODAL_DATE, table_for
from x_tui.compute.resources import KINDS, ResourceError, parse_accelerators

OFFERS = (
    AcceleratorOffer(kind="H100", counts=(1, 2, 4, 8), hourly_usd=4.0, source="catalog"),
    AcceleratorOffer(kind="A100-80GB", counts=(1, 2, 4, 8), hourly_usd=2.5, source="catalog"),
    AcceleratorOffer(kind="L4", counts=(1,), hourly_usd=None, source="catalog"),
)


def _request(accelerator: str, **fields: object) -> ResourceRequest:
    return ResourceRequest(accelerator=parse_accelerators(accelerator), **fields)  # type: ignore[arg-type]


def test_an_offered_kind_and_count_passes_in_any_alternative_order() -> None:
    check_offer(_request("h100!:8,A100-80GB:4"), OFFERS, backend="skypilot")
    check_offer(_request("H100:16"), OFFERS, backend="skypilot")  # 2 nodes of 8
    check_offer(ResourceRequest(), OFFERS, backend="skypilot")


def test_a_kind_not_offered_is_refused_with_the_nearest_and_the_whole_offer() -> None:
    with pytest.raises(ResourceError) as refused:
        check_offer(_request("H100:8,H200:8"), OFFERS, backend="skypilot")
    assert str(refused.value) == (
        "accelerator 'H200:8': skypilot does not offer H200; did you mean 'H100'? (offered, per"
        " node: H100:1, 2, 4, 8, A100-80GB:1, 2, 4, 8, L4:1; see x-tui backends --accelerators"
        " --backend skypilot)"
    )


def test_a_count_per_node_not_offered_is_refused_naming_the_counts() -> None:
    with pytest.raises(ResourceError, match=r"offers H100 in counts of 1, 2, 4, 8 per node, not 3"):
        check_offer(_request("H100:3"), OFFERS, backend="skypilot")
    with pytest.raises(ResourceError, match=r"offers L4 in counts of 1 per node, not 2"):
        check_offer(_request("L4:2"), OFFERS, backend="skypilot")


def test_the_bound_is_price_times_count_times_the_timeout_for_the_dearest_alternative() -> None:
    estimate = estimate_cost(
        _request("H100!:8,A100-80GB:8"), timeout_seconds=6 * 3600, offers=OFFERS, source="catalog"
    )
    assert estimate.max_usd == pytest.approx(4.0 * 8 * 6)
    assert estimate.hours == 6
    assert estimate.lines == ("H100 x 8 at $4.0000/h for 6 h = $192.00 (the dearest alternative)",)
    assert estimate.text() == "at most $192.00 (the timeout, 6 h, at list prices)"
    assert estimate.describe()["source"] == "catalog"


def test_several_nodes_count_every_node_s_accelerators() -> None:
    estimate = estimate_cost(_request("H100:16"), timeout_seconds=1800, offers=OFFERS)
    assert estimate.max_usd == pytest.approx(4.0 * 16 * 0.5)
    assert estimate.lines[0].startswith("H100 x 16 on 2 nodes")


def test_cpu_and_memory_count_where_priced_apart() -> None:
    request = _request("H100", cpu=CpuRequest(per_node=8), memory_mib=32 * 1024)
    estimate = estimate_cost(
        request,
        timeout_seconds=3600,
        offers=OFFERS,
        cpu_core_hour_usd=0.05,
        memory_gib_hour_usd=0.01,
    )
    assert estimate.max_usd == pytest.approx(4.0 + 8 * 0.05 + 32 * 0.01)
    assert len(estimate.lines) == 3


def test_an_unpriced_alternative_makes_the_bound_unknown_and_says_why() -> None:
    estimate = estimate_cost(_request("H100,L4"), timeout_seconds=3600, offers=OFFERS)
    assert estimate.max_usd is None
    assert estimate.text() == "unknown: no price is known for L4"


def test_a_run_that_asks_for_nothing_priced_has_no_bound() -> None:
    estimate = estimate_cost(ResourceRequest(), timeout_seconds=3600, offers=OFFERS)
    assert estimate.max_usd is None
    assert estimate.unknown is not None
    assert "billed by use" in estimate.unknown


def test_modal_s_table_is_dated_priced_and_spelled_in_the_grammar() -> None:
    assert table_for("modal") is MODAL
    assert table_for("skypilot") is None
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", MODAL_DATE)
    assert MODAL.source == "https://modal.com/pricing"
    by_kind = {offer.kind: offer for offer in MODAL.accelerators}
    assert set(by_kind) <= set(KINDS)
    assert by_kind["H100"].hourly_usd == pytest.approx(0.001097 * 3600)
    assert by_kind["A10G"].counts == (1, 2, 3, 4)
    assert by_kind["H100"].counts == tuple(range(1, 9))
    assert all(MODAL_DATE in offer.source for offer in MODAL.accelerators)
    assert MODAL.cpu_core_hour_usd is not None
    assert math.isclose(MODAL.cpu_core_hour_usd, 0.0000131 * 3600, rel_tol=1e-3)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100 PCIe", "H100"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("Tesla T4", "T4"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_a_gpu_name_from_nvidia_smi_reads_as_the_grammar_s_kind(
    name: str, kind: str | None
) -> None:
    assert gpu_kind(name) == kind


def test_this_machine_s_gpus_are_one_offer_per_kind_with_the_count_it_has() -> None:
    names = ("NVIDIA H100 80GB HBM3",) * 8 + ("NVIDIA GeForce RTX 4090",)
    listed = offers(names)
    assert [(offer.kind, offer.counts, offer.hourly_usd) for offer in listed] == [
        ("H100", (8,), None),
        ("NVIDIA GeForce RTX 4090", (1,), None),
    ]
    assert runs_on(names) == (
        "this machine: 8 x H100 (NVIDIA H100 80GB HBM3), 1 x NVIDIA GeForce RTX 4090"
    )
    assert runs_on(()) == "this machine, without a GPU (nvidia-smi lists none)"
