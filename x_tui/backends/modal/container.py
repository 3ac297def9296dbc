"""The function the worker runs in, inside the Modal container, where x-tui is not installed.

``run_worker`` starts the worker zipapp on the project's interpreter (with ``--retries`` when the
job retries a task), commits the outputs Volume every few seconds while it runs (so a peek from
here sees the manifest and ``devices.log`` fill in) and once more at the end, and returns whether
every task succeeded. The job's secrets are in the container's environment (Modal puts them
there), which the worker and its tasks inherit; they are never arguments of the function.

It must never reference anything but builtins and the standard library, imported inside its body:
Modal pickles a ``serialized=True`` function *by reference* when its module is importable here
(``x_tui.backends.modal.container``), and the container could not import it. So
:func:`container_function` rebuilds it from its code in a namespace no module holds, which Modal's
cloudpickle pickles by value.
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable
from typing import Final

CONTAINER_MODULE: Final = "x_tui_modal_container"
"""The module name the rebuilt function claims; no module of that name exists anywhere."""

COMMIT_SECONDS: Final = 10.0
"""How often the outputs Volume is committed while the worker runs."""


def run_worker(
    *,
    spec_json: str,
    run_id: str,
    python: str,
    worker: str,
    project: str,
    outputs: str,
    volume: str,
    environment: str | None,
    retries_json: str | None = None,
    watch_json: str | None = None,
    commit_seconds: float = COMMIT_SECONDS,
) -> bool:
    """Run the job's worker in the container and commit its outputs.

    Args:
        spec_json: The job spec as JSON text.
        run_id: The run, whose directory under ``outputs`` the files go to.
        python: The project's interpreter in the container.
        worker: The worker zipapp's path in the container.
        project: The project's path in the container.
        outputs: The outputs Volume's mount path.
        volume: The outputs Volume's name, to commit it.
        environment: The Modal environment the Volume is in.
        retries_json: The worker's retries table as JSON text (``{"<task>": more attempts}``),
            written to a file given to the worker as ``--retries``; ``None`` retries nothing.
        watch_json: The worker's telemetry arguments as a JSON list of strings
            (``WatchSettings.worker_arguments``: ``--telemetry-seconds``, ``--stall-seconds``,
            ``--metric-pattern``); ``None`` keeps the worker's defaults.
        commit_seconds: How often to commit while the worker runs.

    Returns:
        Whether the worker reported every task succeeded.
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile

    def commit() -> None:
        try:
            import modal

            modal.Volume.from_name(volume, environment_name=environment).commit()
        except Exception as error:  # a failed commit must not lose the run; Modal commits at exit
            print(f"x-tui: could not commit the Volume {volume}: {error}", file=sys.stderr)

    run_dir = os.path.join(outputs, run_id)
    os.makedirs(run_dir, exist_ok=True)
    descriptor, spec_path = tempfile.mkstemp(prefix="x-tui-spec-", suffix=".json")
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(spec_json)
    command = [python, worker, "--spec", spec_path, "--project", project, "--outputs", run_dir]
    if retries_json is not None:
        descriptor, retries_path = tempfile.mkstemp(prefix="x-tui-retries-", suffix=".json")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(retries_json)
        command += ["--retries", retries_path]
    if watch_json is not None:
        command += [str(argument) for argument in json.loads(watch_json)]
    process = subprocess.Popen(command, cwd=project)
    while True:
        try:
            code = process.wait(timeout=commit_seconds)
        except subprocess.TimeoutExpired:
            commit()
        else:
            break
    commit()
    return code == 0


def container_function() -> Callable[..., bool]:
    """``run_worker`` rebuilt outside any importable module, so Modal pickles it by value.

    Returns:
        A function with ``run_worker``'s code, defaults and name, whose globals hold only the
        builtins and whose ``__module__`` is :data:`CONTAINER_MODULE`.
    """
    namespace: dict[str, object] = {"__builtins__": builtins, "__name__": CONTAINER_MODULE}
    rebuilt = types.FunctionType(
        run_worker.__code__, namespace, run_worker.__name__, run_worker.__defaults__
    )
    rebuilt.__kwdefaults__ = dict(run_worker.__kwdefaults__ or {})
    rebuilt.__qualname__ = run_worker.__qualname__
    rebuilt.__doc__ = run_worker.__doc__
    return rebuilt
