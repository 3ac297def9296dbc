"""A backend's plan may carry a warning the user must acknowledge before submitting.

A backend that declares ``Capability.PLAN`` returns a mapping describing what it would ask for;
under :data:`WARNING_KEY` it may add one sentence saying why the run would not get what the job
asks for (the local backend: an accelerator this machine does not have). The submit screen shows
it and submits only once the user has acknowledged it with a key; ``x-tui plan`` prints it.
"""

from __future__ import annotations

from collections.abc import Mapping

from x_tui.compute.worker.records import JsonValue

WARNING_KEY = "warning"
"""The key of a plan's warning."""


def plan_warning(provider_request: Mapping[str, JsonValue] | None) -> str | None:
    """The warning a backend's plan carries, if any.

    Args:
        provider_request: The backend's plan (``RunPlan.provider_request``).

    Returns:
        The sentence, or ``None``.
    """
    if provider_request is None:
        return None
    warning = provider_request.get(WARNING_KEY)
    return warning if isinstance(warning, str) and warning else None
