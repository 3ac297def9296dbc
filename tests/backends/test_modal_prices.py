"""The Modal backend prices a plan from x-tui's one dated table of Modal's prices."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.backends.modal.backend import ModalBackend
from x_tui.backends.modal.request import build_request
from x_tui.backends.modal.settings import ModalSettings
from x_tui.compute.extensions import CpuRequest, ResourceRequest
from x_tui.compute.prices import MODAL, MODAL_DATE
from x_tui.compute.resources import ResourceError, parse_accelerators
from x_tui.compute.worker.spec import JobSpec, Task

H100 = 0.001097 * 3600
CPU = 0.0000131 * 3600
MEMORY = 0.00000222 * 3600


def _spec(timeout: float) -> JobSpec:
    return JobSpec(
        name="train",
        tasks=(Task(name="t", argv=("python", "-V"), timeout_seconds=60.0),),
        timeout_seconds=timeout,
    )


def _estimate(tmp_path: Path, request: ResourceRequest, timeout: float) -> dict[str, object]:
    planned = build_request(
        _spec(timeout),
        project=tmp_path,
        settings=ModalSettings(outputs_volume="runs"),
        worker_file=tmp_path / "worker.pyz",
        worker_digest="0" * 16,
        request=request,
    )
    estimate = planned.to_json()["estimate"]
    assert isinstance(estimate, dict)
    return estimate


def test_the_plan_says_the_most_a_run_can_cost_and_when_prices_were_read(tmp_path: Path) -> None:
    """Two hours of an H100 with 4 cores and 16 GiB, with the table's date and source."""
    request = ResourceRequest(
        accelerator=parse_accelerators("H100"), cpu=CpuRequest(per_node=4), memory_mib=16384
    )
    estimate = _estimate(tmp_path, request, 7200.0)
    hourly = H100 + 4 * CPU + 16 * MEMORY
    assert estimate["hourly_usd"] == pytest.approx(hourly, abs=1e-4)
    assert estimate["max_usd"] == pytest.approx(hourly * 2, abs=1e-4)
    assert estimate["timeout_hours"] == 2
    assert estimate["prices_as_of"] == MODAL_DATE
    assert estimate["source"] == f"https://modal.com/pricing, as of {MODAL_DATE}"
    assert estimate["unknown"] is None


def test_fallbacks_are_priced_as_the_dearest_and_exact_costs_the_kind(tmp_path: Path) -> None:
    """``H100!:8`` or ``A100-80GB:8``: the bound is eight H100s, whatever Modal picks."""
    request = ResourceRequest(accelerator=parse_accelerators(["A100-80GB:8", "H100!:8"]))
    estimate = _estimate(tmp_path, request, 3600.0)
    assert estimate["max_usd"] == pytest.approx(8 * H100, abs=1e-4)
    breakdown = estimate["breakdown"]
    assert isinstance(breakdown, list)
    assert breakdown[0].endswith("(the dearest alternative)")


def test_the_bound_covers_the_function_timeout_modal_is_given(tmp_path: Path) -> None:
    """Modal gets the timeout rounded up to whole seconds, and may bill all of it."""
    request = ResourceRequest(accelerator=parse_accelerators("H100"))
    estimate = _estimate(tmp_path, request, 3599.2)
    assert estimate["timeout_hours"] == 1
    assert estimate["max_usd"] == pytest.approx(H100, abs=1e-4)


def test_a_kind_without_a_price_has_no_bound_and_says_why(tmp_path: Path) -> None:
    """Better no figure than a wrong one (the backend refuses such a kind before planning)."""
    estimate = _estimate(tmp_path, ResourceRequest(accelerator=parse_accelerators("MI300X")), 60)
    assert estimate["max_usd"] is None
    assert estimate["hourly_usd"] is None
    assert estimate["unknown"] == "no price is known for MI300X"


def test_the_backend_offers_the_tables_kinds_and_refuses_others(tmp_path: Path) -> None:
    """``accelerators()`` is the table; ``check_offer`` refuses a kind or count it lacks."""
    backend = ModalBackend({"outputs_volume": "runs", "state_dir": str(tmp_path)})
    assert backend.accelerators() == list(MODAL.accelerators)
    backend.check_offer(ResourceRequest(accelerator=parse_accelerators("A10:4")))
    with pytest.raises(ResourceError, match="modal offers A10G in counts of 1-4 per node, not 8"):
        backend.check_offer(ResourceRequest(accelerator=parse_accelerators("A10G:8")))
    with pytest.raises(ResourceError, match="modal does not offer MI300X"):
        backend.plan(
            _spec(60),
            project=tmp_path,
            request=ResourceRequest(accelerator=parse_accelerators("MI300X")),
        )
