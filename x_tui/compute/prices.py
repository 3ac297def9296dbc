"""Dated price tables for backends that publish list prices but expose no catalog to read offline.

Modal publishes per-second list prices at https://modal.com/pricing and no API that lists them.
:data:`MODAL` holds them as hourly figures (per second x 3600), with the date they were read and
their source, so ``x-tui backends --accelerators`` and the cost estimate can say how old they are.

Modal's figures are its per-second list prices. This is the one table of them: x-tui once kept
a second one in the Modal backend, whose figures agreed with these to within a tenth of a cent an
hour, and which is merged here. Where each figure comes from:

- H100, A100-80GB, L40S, L4 and T4: modal.com/pricing, matched by a summary of it verified on
  2026-05-07 (techbytes.app, "Serverless GPU Pricing Matrix"); H100 and the CPU core rate again
  by one verified on 2026-06-27 (beam.cloud, "Modal Pricing Explained");
- B200, H200, A100-40GB, A10 (A10G) and memory: modal.com/pricing as read on 2026-05-07, not
  confirmed by a second source since.

:data:`MODAL_DATE` is the latest of those checks. They are base rates: Modal multiplies them for
region selection (1.5x-1.75x) and for non-preemptible capacity, which the estimate does not
apply. Counts per container (Modal's GPU guide): up to 8 of every kind, but up to 4 A10.

Update a table by replacing its figures and its date together. SkyPilot needs no table here: its
backend reads its own catalog (``Capability.ACCELERATORS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from x_tui.compute.estimate import AcceleratorOffer
from x_tui.compute.worker.records import JsonValue


@dataclass(frozen=True, kw_only=True, slots=True)
class PriceTable:
    """A backend's list prices on one date.

    Attributes:
        backend: The backend's registered name.
        date: When the figures were read, ``YYYY-MM-DD``.
        source: Where they were read.
        accelerators: Each kind, its counts per node and its hourly price.
        cpu_core_hour_usd: One CPU core for an hour, when billed apart.
        memory_gib_hour_usd: One GiB of memory for an hour, when billed apart.
        note: What the figures leave out.
    """

    backend: str
    date: str
    source: str
    accelerators: tuple[AcceleratorOffer, ...]
    cpu_core_hour_usd: float | None = None
    memory_gib_hour_usd: float | None = None
    note: str = ""

    @property
    def label(self) -> str:
        """``<source>, <date>``, the source an estimate names."""
        return f"{self.source}, as of {self.date}"

    def describe(self) -> dict[str, JsonValue]:
        """The table as JSON."""
        return {
            "backend": self.backend,
            "date": self.date,
            "source": self.source,
            "cpu_core_hour_usd": self.cpu_core_hour_usd,
            "memory_gib_hour_usd": self.memory_gib_hour_usd,
            "note": self.note,
            "accelerators": [offer.describe() for offer in self.accelerators],
        }


MODAL_DATE = "2026-06-27"
"""When :data:`MODAL`'s figures were last checked (some only on 2026-05-07; see above)."""

MODAL_SOURCE = "https://modal.com/pricing"

_PER_SECOND = {
    "B200": 0.001736,
    "H200": 0.001261,
    "H100": 0.001097,
    "A100-80GB": 0.000694,
    "A100-40GB": 0.000583,
    "A100": 0.000583,
    "L40S": 0.000542,
    "A10": 0.000306,
    "A10G": 0.000306,
    "L4": 0.000222,
    "T4": 0.000164,
}
_MAX_PER_CONTAINER = {"A10": 4, "A10G": 4}
_NOTES = {
    "H100": "may run on an H200 at the H100 price unless asked for as H100!",
    "A100": "an A100-40GB, or an A100-80GB at the 40 GB price",
    "A10G": "Modal's older name for the A10",
}


def _modal_offer(kind: str, per_second: float) -> AcceleratorOffer:
    most = _MAX_PER_CONTAINER.get(kind, 8)
    return AcceleratorOffer(
        kind=kind,
        counts=tuple(range(1, most + 1)),
        hourly_usd=round(per_second * 3600, 4),
        source=f"{MODAL_SOURCE}, as of {MODAL_DATE}",
        note=_NOTES.get(kind, ""),
    )


MODAL = PriceTable(
    backend="modal",
    date=MODAL_DATE,
    source=MODAL_SOURCE,
    accelerators=tuple(_modal_offer(kind, rate) for kind, rate in _PER_SECOND.items()),
    cpu_core_hour_usd=round(0.0000131 * 3600, 5),
    memory_gib_hour_usd=round(0.00000222 * 3600, 6),
    note="base rates; region selection and non-preemptible capacity multiply them",
)
"""Modal's list prices; see the module documentation for their date and source."""

TABLES: Mapping[str, PriceTable] = {MODAL.backend: MODAL}
"""The dated tables, by backend name."""


def table_for(backend: str) -> PriceTable | None:
    """The dated price table of a backend, or ``None`` when x-tui keeps none for it."""
    return TABLES.get(backend)
