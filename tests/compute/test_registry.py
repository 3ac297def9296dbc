"""Backends are found through the ``x_tui.backends`` entry-point group, read once per process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from x_tui.compute import registry
from x_tui.compute.worker.errors import UnknownBackendError


@pytest.fixture
def counted_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, str]]]:
    """Each read of the installed distributions' entry points, from a fresh process's start."""
    reads: list[dict[str, str]] = []
    real = registry.entry_points

    def counting(**selection: str) -> object:
        reads.append(selection)
        return real(**selection)

    monkeypatch.setattr(registry, "entry_points", counting)
    registry._by_name.cache_clear()  # as in a process that has built no backend yet
    yield reads
    registry._by_name.cache_clear()  # the next test reads the real ones again


def test_the_installed_backends_are_read_once_however_many_are_built(
    counted_reads: list[dict[str, str]],
) -> None:
    assert {"local", "modal", "skypilot"} <= set(registry.backend_names())
    first = registry.load_backend("local", {})
    second = registry.load_backend("local", {})
    assert first is not second  # each build is a backend of its own settings
    with pytest.raises(UnknownBackendError, match=r"^no compute backend named 'nosuch'"):
        registry.load_backend("nosuch")
    assert counted_reads == [{"group": registry.GROUP}]
