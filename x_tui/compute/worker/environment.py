"""What a task or the device probe runs with: its environment variables and its command.

The environment is built in substrax's three layers: the worker's own variables without any
``JAX_*`` or ``XLA_*``, then the job's ``env``, then the job's JAX runtime settings. The run's
process marker (``X_TUI_RUN``), when the worker has one, is kept over anything the job's ``env``
says, so every process of the run can be found and stopped. A leading ``"python"`` in a task's
command becomes the worker's interpreter.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. It never
starts a process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from x_tui.compute.worker.run_processes import MARKER_VARIABLE
from x_tui.compute.worker.spec import JaxRuntime

OUTPUT_DIR_VARIABLE = "AVITAI_OUTPUT_DIR"
"""The variable that gives each task its own directory under the run's outputs."""


class EnvironmentConflict(ValueError):
    """The job's ``env`` and ``runtime`` ask for two different values of one setting."""


def child_environment(
    runtime: JaxRuntime, env: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a task or the probe runs in, in substrax's three layers.

    Args:
        runtime: The job's JAX settings, applied last.
        env: The job's variables (and a task's ``AVITAI_OUTPUT_DIR``), over the base.
        base: The worker's own environment; ``os.environ`` when ``None``. Every ``JAX_*`` and
            ``XLA_*`` variable in it is dropped.

    Returns:
        The variables, with the runtime's ``XLA_FLAGS`` merged by flag name into any ``env`` gave,
        and the base's run marker (``X_TUI_RUN``), if any, whatever ``env`` says.

    Raises:
        EnvironmentConflict: If an XLA flag gets two values, or ``memory_fraction`` meets an
            ``XLA_PYTHON_CLIENT_MEM_FRACTION`` from ``env``.
    """
    source = os.environ if base is None else base
    result = {
        name: value for name, value in source.items() if not name.startswith(("JAX_", "XLA_"))
    }
    result.update(env)
    marker = source.get(MARKER_VARIABLE)
    if marker is not None:
        result[MARKER_VARIABLE] = marker
    inherited = result.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
    if runtime.memory_fraction is not None and inherited is not None:
        raise EnvironmentConflict(
            f"the job's env sets XLA_PYTHON_CLIENT_MEM_FRACTION={inherited!r}, which overrides"
            f" its runtime memory_fraction {runtime.memory_fraction}; keep one of them"
        )
    result.update(runtime.environment())
    if runtime.xla_flags:
        existing = result.get("XLA_FLAGS", "")
        try:
            result["XLA_FLAGS"] = runtime.merge_xla_flags(existing)
        except ValueError as error:
            raise EnvironmentConflict(
                f"{error}: the job's env sets XLA_FLAGS={existing!r} and its runtime xla_flags"
                f" {' '.join(runtime.xla_flags)!r}"
            ) from None
    return result


def resolve_argv(argv: Sequence[str], python: str) -> tuple[str, ...]:
    """A task's command as it runs: a leading ``"python"`` becomes the worker's interpreter.

    Args:
        argv: The task's command.
        python: The interpreter that replaces ``"python"``.

    Returns:
        The command.
    """
    return (python, *argv[1:]) if argv and argv[0] == "python" else tuple(argv)
