"""What a run asked the machine for, beside the devices its probe saw, a difference highlighted.

Providers may allocate something other than what was requested (an ``H100:8`` request has run
on H200s). The worker's device probe records what JAX saw in the manifest (``devices``); when the
probe failed, ``devices`` is null and ``devices.log`` holds its output, which is shown instead.
Everything read from the run's files is untrusted and goes through ``safe_text``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from x_tui.compute.backend import RunState
from x_tui.compute.worker.manifest import RunDevices
from x_tui.compute.worker.spec import Accelerator, Resources
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.spec_view import format_memory

_TOKEN = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceComparison:
    """How the devices a run saw compare with the accelerator it requested.

    Attributes:
        kind_matches: Whether every device is of the requested kind (``H100`` matches ``NVIDIA
            H100 80GB HBM3`` but not ``NVIDIA H200``; ``L4`` does not match ``L40S``).
        count_matches: Whether the run saw as many devices as it requested.
        verdict: One sentence for the user.
    """

    kind_matches: bool
    count_matches: bool
    verdict: str

    @property
    def matches(self) -> bool:
        """Whether the devices are what was asked for."""
        return self.kind_matches and self.count_matches


def _tokens(text: str) -> set[str]:
    return {token.upper() for token in _TOKEN.findall(text)}


def kind_matches(requested: str, seen: str) -> bool:
    """Whether a device named ``seen`` (as JAX names it) is of the requested ``kind``.

    Every word of the requested kind must be a word of the device's name, ignoring case:
    ``A100-80GB`` matches ``NVIDIA A100-SXM4-80GB``, ``L4`` matches ``NVIDIA L4`` but not
    ``NVIDIA L40S``.
    """
    wanted = _tokens(requested)
    return bool(wanted) and wanted <= _tokens(seen)


def seen_text(devices: RunDevices) -> str:
    """The devices a run saw, grouped: ``8x NVIDIA H200 (gpu)``; ``none (cpu)`` when empty."""
    groups = Counter(devices.kinds)
    listed = ", ".join(f"{count}x {kind}" for kind, count in groups.items()) or "none"
    return f"{listed} ({devices.platform})"


def compare_devices(requested: Accelerator | None, devices: RunDevices) -> DeviceComparison:
    """Compare what a run asked for with what its probe saw.

    Args:
        requested: The spec's accelerator; ``None`` when the job asked for none.
        devices: What the probe saw.

    Returns:
        The comparison, with a sentence that names both sides.
    """
    seen = seen_text(devices)
    if requested is None:
        return DeviceComparison(
            kind_matches=True,
            count_matches=True,
            verdict=f"No accelerator was requested; saw {seen}.",
        )
    kinds_ok = bool(devices.kinds) and all(
        kind_matches(requested.kind, kind) for kind in devices.kinds
    )
    count_ok = len(devices.kinds) == requested.count
    asked = str(requested)
    if kinds_ok and count_ok:
        verdict = f"Asked for {asked}; got {seen}."
    elif not devices.kinds:
        verdict = f"Asked for {asked}, but the run saw no devices ({devices.platform})."
    elif not kinds_ok:
        verdict = f"Asked for {asked}, but the provider gave {seen}."
    else:
        verdict = f"Asked for {asked}, but the run saw {len(devices.kinds)}: {seen}."
    return DeviceComparison(kind_matches=kinds_ok, count_matches=count_ok, verdict=verdict)


_MISMATCH = "bold black on dark_orange"
_MATCH = "green"


def devices_renderable(
    resources: Resources | None,
    devices: RunDevices | None,
    *,
    probe_log: str | None,
    manifest_present: bool,
    platforms: tuple[str, ...] | None = None,
    state: RunState | None = None,
) -> RenderableType:
    """The requested-versus-seen sheet.

    Args:
        resources: What the spec requested; ``None`` when the spec is not known here.
        devices: What the probe saw; ``None`` when it failed or has not run.
        probe_log: ``devices.log``, when the probe failed.
        manifest_present: Whether the run has a manifest yet (the probe runs before any task).
        platforms: The JAX platforms the spec's runtime asked for, if any.
        state: The run's state; once final, a missing answer is told in the past tense.

    Returns:
        A renderable of ``Text`` cells.
    """
    table = Table(box=None, padding=(0, 2, 0, 0), header_style="bold", expand=False)
    table.add_column(Text(""), style="bold", no_wrap=True)
    table.add_column(Text("requested"))
    table.add_column(Text("seen by the probe"))
    comparison: DeviceComparison | None = None
    accelerator = resources.accelerator if resources is not None else None
    if devices is not None and resources is not None:
        comparison = compare_devices(accelerator, devices)
    unknown = Text("not known here", style="dim")
    if resources is None:
        requested_acc = unknown
    elif accelerator is None:
        requested_acc = Text("none (CPU)")
    else:
        requested_acc = safe_text(str(accelerator))
    if devices is not None:
        grouped = Counter(devices.kinds).items()
        seen_acc = safe_text(", ".join(f"{n}x {k}" for k, n in grouped) or "none")
        seen_platform = safe_text(devices.platform)
    else:
        seen_acc = seen_platform = Text("-", style="dim")
    if comparison is not None and accelerator is not None:
        style = _MATCH if comparison.matches else _MISMATCH
        seen_acc.stylize(style)
    table.add_row(Text("accelerator"), requested_acc, seen_acc)
    table.add_row(
        Text("platform"),
        safe_text(",".join(platforms)) if platforms else Text("any", style="dim"),
        seen_platform,
    )
    if resources is not None:
        table.add_row(
            Text("cpu"),
            Text(f"{resources.cpu:g}")
            if resources.cpu is not None
            else Text("default", style="dim"),
            Text("-", style="dim"),
        )
        table.add_row(
            Text("memory"),
            Text(format_memory(resources.memory_mib))
            if resources.memory_mib is not None
            else Text("default", style="dim"),
            Text("-", style="dim"),
        )
    parts: list[RenderableType] = [table, Text("")]
    if comparison is not None:
        mark = "✓ " if comparison.matches else "⚠ "
        parts.append(
            safe_text(mark + comparison.verdict, "green" if comparison.matches else _MISMATCH)
        )
    elif devices is not None:
        parts.append(safe_text(f"The probe saw {seen_text(devices)}."))
    elif probe_log is not None:
        parts.append(Text("The device probe failed; devices.log says:", style="bold red"))
        parts.append(safe_text(probe_log.rstrip("\n") or "(empty)"))
    elif manifest_present:
        parts.append(Text("The probe recorded no devices and left no devices.log.", style="dim"))
    elif state is RunState.CANCELLED:
        parts.append(Text("The run was cancelled before its device probe answered.", style="bold"))
    elif state is not None and state.is_final:
        parts.append(
            Text("The run ended before its device probe answered; it left no manifest.", "bold")
        )
    else:
        parts.append(
            Text(
                "No manifest yet: the device probe runs first, and what it sees shows here "
                "as soon as it answers.",
                style="dim",
            )
        )
    return Group(*parts)


class DevicesView(Static):
    """A run's requested resources beside the devices its probe saw."""

    DEFAULT_CSS = """
    DevicesView {
        height: auto;
        padding: 0 1;
    }
    """

    _shown: tuple[object, ...] | None = None
    """The arguments last shown."""

    def show(
        self,
        resources: Resources | None,
        devices: RunDevices | None,
        *,
        probe_log: str | None,
        manifest_present: bool,
        platforms: tuple[str, ...] | None = None,
        state: RunState | None = None,
    ) -> None:
        """Show the comparison (see :func:`devices_renderable` for the arguments); nothing is
        redrawn when they are what was last shown."""
        shown = (resources, devices, probe_log, manifest_present, platforms, state)
        if shown == self._shown:
            return
        self._shown = shown
        self.update(
            devices_renderable(
                resources,
                devices,
                probe_log=probe_log,
                manifest_present=manifest_present,
                platforms=platforms,
                state=state,
            )
        )
