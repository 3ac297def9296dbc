"""Backends by name, from the ``x_tui.backends`` entry-point group.

x-tui registers its own backends (local, modal, skypilot) in that group, and any distribution adds
one by registering a :data:`~x_tui.compute.backend.BackendFactory` there, so a built-in backend and
a third-party one load the same way. A backend's module is imported only when its name is chosen.

The group is read once per process: listing entry points reads every installed distribution's
metadata (4-5 ms with the hundred distributions of x-tui's own environment, more in a large
machine-learning one), and one process builds backends many times (three in one ``x-tui run``,
one per backend and settings in the TUI). A distribution installed while an x-tui process runs is
seen by the next one.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

from x_tui.compute.backend import ComputeBackend
from x_tui.compute.worker.errors import BackendUnavailableError, UnknownBackendError, close_name
from x_tui.compute.worker.records import JsonValue

GROUP = "x_tui.backends"
"""The entry-point group backends register in."""


@functools.cache
def _by_name() -> dict[str, EntryPoint]:
    """The group's entry points by name, read once per process (see the module documentation)."""
    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=GROUP):
        found[entry.name] = entry
    return found


def backend_names() -> tuple[str, ...]:
    """The names of the registered backends, sorted."""
    return tuple(sorted(_by_name()))


def load_backend(
    name: str,
    settings: Mapping[str, JsonValue] | None = None,
) -> ComputeBackend:
    """Build the backend registered under ``name`` from its settings.

    Args:
        name: The backend's name.
        settings: Its settings table; empty when ``None``.

    Returns:
        The backend.

    Raises:
        UnknownBackendError: If no backend has that name; the message lists the registered ones.
        BackendUnavailableError: If the backend's module cannot be imported (a missing extra).
        TypeError: If the entry point builds something that is not a backend.
    """
    found = _by_name()
    entry = found.get(name)
    if entry is None:
        registered = ", ".join(sorted(found)) or "none"
        raise UnknownBackendError(
            f"no compute backend named '{name}'{close_name(name, found)}; registered: {registered}"
        )
    try:
        factory = entry.load()
    except ImportError as error:
        raise BackendUnavailableError(str(error)) from None
    backend = factory(dict(settings or {}))
    if not isinstance(backend, ComputeBackend):
        raise TypeError(
            f"entry point '{entry.value}' built {type(backend).__name__}, not a backend"
        )
    return backend
