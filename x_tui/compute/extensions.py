"""What x-tui reads from a job's ``resources`` beyond what substrax's ``Resources`` can say.

A :class:`ResourceRequest` holds the accelerator alternatives, whether a kind is exact, how many
nodes a shape spans and a CPU total. It travels beside the ``JobSpec`` (``ResolvedJob`` in
:mod:`x_tui.compute.config`), never inside it: ``spec.json`` stays readable by substrax, whose
readers refuse unknown keys. Its :meth:`~ResourceRequest.to_resources` is the ``Resources`` the
spec holds. These are records: :func:`~x_tui.compute.worker.records.dump_record` writes them and
:func:`~x_tui.compute.worker.records.read_record` reads them back, validated.

The grammar that reads them from what users write is :mod:`x_tui.compute.resources`.

A :class:`JobExtensions` holds the job-table keys x-tui reads beyond substrax's (``dependencies``,
``secrets``, ``retries``), names only, never a secret's value. It also travels beside the spec:
in a run's plan, and to a backend that declares ``Capability.EXTENSIONS``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from x_tui.compute.dependencies import Dependencies
from x_tui.compute.retries import RetryPolicy
from x_tui.compute.secrets import SecretsRequest
from x_tui.compute.worker.records import JsonValue, dump_record
from x_tui.compute.worker.spec import Accelerator, Resources
from x_tui.compute.worker.telemetry import WatchSettings


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True, kw_only=True, slots=True)
class AcceleratorChoice:
    """One acceptable accelerator shape.

    Attributes:
        kind: The kind, spelled as providers spell it (``"H100"``, ``"A100-80GB"``).
        count: How many in all, across every node.
        exact: Exactly this kind: the provider may not upgrade it (Modal's ``H100!``).
        nodes: The machines the count spans: ``ceil(count / 8)`` for a GPU count above 8.
    """

    kind: str
    count: int = 1
    exact: bool = False
    nodes: int = 1

    def __post_init__(self) -> None:
        """Validate the shape.

        Raises:
            ValueError: If the kind is not one word, a count is below one, or the count does
                not split evenly over the nodes.
        """
        Accelerator(kind=self.kind, count=self.count)
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, int) or self.nodes < 1:
            raise ValueError(f"accelerator nodes must be at least 1, not {self.nodes!r}")
        if self.count % self.nodes:
            raise ValueError(
                f"{self.count} accelerators do not split evenly over {self.nodes} nodes"
            )
        if not isinstance(self.exact, bool):
            raise ValueError(f"accelerator exact must be true or false, not {self.exact!r}")

    @property
    def per_node(self) -> int:
        """How many accelerators each node has."""
        return self.count // self.nodes

    def accelerator(self) -> Accelerator:
        """The substrax ``Accelerator`` for this shape: its kind and whole count."""
        return Accelerator(kind=self.kind, count=self.count)

    def __str__(self) -> str:
        mark = "!" if self.exact else ""
        return f"{self.kind}{mark}" if self.count == 1 else f"{self.kind}{mark}:{self.count}"


@dataclass(frozen=True, kw_only=True, slots=True)
class AcceleratorRequest:
    """Accelerator shapes in order of preference; the provider gives the first it can.

    Attributes:
        alternatives: The shapes, at least one, all spanning the same number of nodes.
    """

    alternatives: tuple[AcceleratorChoice, ...]

    def __post_init__(self) -> None:
        """Validate the alternatives.

        Raises:
            ValueError: If there are none, two are the same, or they span different node counts.
        """
        if not self.alternatives:
            raise ValueError("an accelerator request needs at least one alternative")
        seen: set[str] = set()
        for choice in self.alternatives:
            if str(choice) in seen:
                raise ValueError(f"accelerator {str(choice)!r} is listed twice")
            seen.add(str(choice))
        if len({choice.nodes for choice in self.alternatives}) > 1:
            spans = ", ".join(f"{choice} needs {choice.nodes}" for choice in self.alternatives)
            raise ValueError(
                f"accelerator alternatives must span the same number of nodes ({spans})"
            )

    @property
    def first(self) -> AcceleratorChoice:
        """The preferred shape, the one ``spec.json`` records."""
        return self.alternatives[0]

    @property
    def nodes(self) -> int:
        """The machines every alternative spans."""
        return self.first.nodes

    def __str__(self) -> str:
        return ",".join(str(choice) for choice in self.alternatives)


@dataclass(frozen=True, kw_only=True, slots=True)
class CpuRequest:
    """CPU cores, each figure the least the job gets.

    Attributes:
        per_node: Cores on each machine, fractional allowed.
        total: Cores in all (``"PER_NODE:TOTAL"``), a whole multiple of ``per_node``; ``None``
            when only the per-node figure was given.
    """

    per_node: float
    total: float | None = None

    def __post_init__(self) -> None:
        """Validate the figures.

        Raises:
            ValueError: If a figure is not a positive finite number, or the total is not a whole
                multiple of the per-node figure.
        """
        for value in (self.per_node, self.total):
            if value is not None and not (_is_number(value) and math.isfinite(value) and value > 0):
                raise ValueError(f"a CPU request must be a positive finite number, not {value!r}")
        if self.total is not None:
            ratio = self.total / self.per_node
            if ratio < 1 or not math.isclose(ratio, round(ratio)):
                raise ValueError(
                    f"a CPU total of {self.total:g} is not a whole multiple of {self.per_node:g}"
                    " per node"
                )

    @property
    def nodes(self) -> int:
        """The machines the total spans (1 when there is no total)."""
        return 1 if self.total is None else round(self.total / self.per_node)

    def __str__(self) -> str:
        per_node = f"{self.per_node:g}"
        return per_node if self.total is None else f"{per_node}:{self.total:g}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ResourceRequest:
    """Everything a job asks of the machines it runs on, as the user wrote it.

    Attributes:
        accelerator: The accelerator shapes; ``None`` runs on CPUs.
        cpu: The CPU cores; ``None`` takes the provider's default.
        memory_mib: The memory of each machine, in MiB; ``None`` takes the provider's default.
    """

    accelerator: AcceleratorRequest | None = None
    cpu: CpuRequest | None = None
    memory_mib: int | None = None

    def __post_init__(self) -> None:
        """Validate the memory figure.

        Raises:
            ValueError: If ``memory_mib`` is not a positive integer.
        """
        Resources(memory_mib=self.memory_mib)

    @property
    def nodes(self) -> int:
        """The machines the run needs: the accelerator's shape decides; without one, the CPUs."""
        if self.accelerator is not None:
            return self.accelerator.nodes
        return self.cpu.nodes if self.cpu is not None else 1

    def to_resources(self) -> Resources:
        """The substrax ``Resources`` a ``spec.json`` holds.

        Returns:
            The first alternative's kind and count, the per-node cores and the memory.
        """
        return Resources(
            accelerator=self.accelerator.first.accelerator() if self.accelerator else None,
            cpu=self.cpu.per_node if self.cpu is not None else None,
            memory_mib=self.memory_mib,
        )


EXTENSION_KEYS = ("dependencies", "secrets", "retries")
"""The job-table keys a :class:`JobExtensions` holds."""
WATCH_KEYS = ("telemetry_seconds", "stall_seconds", "metric_patterns")
"""The job-table keys of how the worker watches a run (:class:`JobExtensions`'s ``watch``);
a backend that cannot pass them on runs the job with the worker's defaults."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JobExtensions:
    """What a job table declares beyond substrax's spec, for the backend to map.

    Attributes:
        dependencies: Python and apt packages and commands installed beyond the locked
            environment (Modal: image steps; SkyPilot: setup commands; local: not provisioned).
        secrets: The secrets the tasks need, by name (values are captured only at submit).
        retries: More attempts for a failed task (the worker's ``--retries`` file).
        watch: The pace of the worker's samples, the stall time and the job's metric patterns
            (:data:`WATCH_KEYS`); never makes a backend refuse the job.
    """

    dependencies: Dependencies = field(default_factory=Dependencies)
    secrets: SecretsRequest = field(default_factory=SecretsRequest)
    retries: RetryPolicy = field(default_factory=RetryPolicy)
    watch: WatchSettings = field(default_factory=WatchSettings)

    def __bool__(self) -> bool:
        """Whether any extension is declared."""
        return bool(self.dependencies or self.secrets or self.retries)

    @property
    def declared(self) -> tuple[str, ...]:
        """The keys that declare something, in :data:`EXTENSION_KEYS` order."""
        return tuple(key for key in EXTENSION_KEYS if getattr(self, key))

    def describe(self, tasks: Sequence[str]) -> dict[str, JsonValue]:
        """The extensions for a plan, names only.

        Args:
            tasks: The job's task names, to spell out each one's retries.

        Returns:
            ``dependencies``, ``secrets`` (with the sources unset in this shell) and ``retries``.
        """
        return {
            "dependencies": dump_record(self.dependencies),
            "secrets": self.secrets.describe(),
            "retries": self.retries.describe(tasks),
        }
