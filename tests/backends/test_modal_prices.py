"""The dated Modal price table, and the most a planned run can cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from x_tui.backends import modal_prices
from x_tui.backends.modal.request import build_request
from x_tui.backends.modal.settings import ModalSettings
from x_tui.compute.extensions import CpuRequest, ResourceRequest
from x_tui.compute.resources import parse_accelerators
from x_tui.compute.spec import JobSpec, Task

CPU = modal_prices.CPU_CORE_PER_HOUR
MEMORY = modal_prices.MEMORY_GIB_PER_HOUR


@pytest.mark.parametrize(
    ("shape", "price"),
    [
        ("H100", 3.9492),
        ("H100!", 3.9492),
        ("h100:8", 8 * 3.9492),
        ("A100-80GB:2", 2 * 2.4984),
        ("L4", 0.7992),
        ("B200+", 6.25),
        ("MI300X", None),
    ],
)
def test_a_gpu_shape_is_priced_per_gpu_and_count(shape: str, price: float | None) -> None:
    """Exact (!) and at-least (+) cost the kind's price; an unknown kind has none."""
    found = modal_prices.gpu_price(shape)
    assert found == (pytest.approx(price) if price is not None else None)


def test_fallbacks_are_priced_as_the_dearest_and_cpu_and_memory_are_added() -> None:
    """The most an hour can cost: the dearest alternative, plus the cores and memory."""
    hourly = modal_prices.hourly_price(("L4:2", "H100"), cpu=8.0, memory_mib=32768)
    assert hourly == pytest.approx(3.9492 + 8 * CPU + 32 * MEMORY)


def test_a_job_asking_for_no_cpu_or_memory_pays_modals_defaults() -> None:
    """0.125 cores and 128 MiB."""
    hourly = modal_prices.hourly_price(None, cpu=None, memory_mib=None)
    assert hourly == pytest.approx(0.125 * CPU + MEMORY / 8)


def test_the_plan_says_the_most_a_run_can_cost_and_when_prices_were_read(tmp_path: Path) -> None:
    """Two hours of an H100 with 4 cores and 16 GiB, with the table's date and source."""
    spec = JobSpec(
        name="train",
        tasks=(Task(name="t", argv=("python", "-V"), timeout_seconds=60.0),),
        timeout_seconds=7200.0,
    )
    request = ResourceRequest(
        accelerator=parse_accelerators("H100"), cpu=CpuRequest(per_node=4), memory_mib=16384
    )
    planned = build_request(
        spec,
        project=tmp_path,
        settings=ModalSettings(outputs_volume="runs"),
        worker_file=tmp_path / "worker.pyz",
        worker_digest="0" * 16,
        request=request,
    )
    estimate = planned.to_json()["estimate"]
    hourly = 3.9492 + 4 * CPU + 16 * MEMORY
    assert estimate == {
        "hourly_usd": round(hourly, 4),
        "max_usd": round(hourly * 2, 2),
        "prices_as_of": "2026-05-07",
        "source": modal_prices.SOURCE,
    }


def test_an_unknown_kind_has_no_estimate(tmp_path: Path) -> None:
    """Better no figure than a wrong one."""
    spec = JobSpec(
        name="train",
        tasks=(Task(name="t", argv=("python", "-V"), timeout_seconds=60.0),),
        timeout_seconds=60.0,
    )
    planned = build_request(
        spec,
        project=tmp_path,
        settings=ModalSettings(outputs_volume="runs"),
        worker_file=tmp_path / "worker.pyz",
        worker_digest="0" * 16,
        request=ResourceRequest(accelerator=parse_accelerators("MI300X")),
    )
    assert planned.estimate()["hourly_usd"] is None
    assert planned.estimate()["max_usd"] is None
