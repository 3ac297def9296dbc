"""The device probe: the program a child runs to report a run's devices, and how to read it.

The worker never imports JAX itself. Before the first task it runs ``<python> -c PROGRAM`` with
the job's runtime environment, and this module holds that program and the reading of its answer:
one JSON line ``{"platform": ..., "kinds": [...]}`` on stdout. Standard library only, for
Python 3.10 and later, because it ships inside the worker zipapp.
"""

from __future__ import annotations

import json

from x_tui.compute.worker.manifest import RunDevices
from x_tui.compute.worker.records import RecordError, read_record

PROBE_LIMIT_SECONDS = 300.0
"""The longest the probe may run, whatever the job's budget."""

PROGRAM = """\
import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]  # the project's own files must not shadow json or jax
import json
import subprocess
try:
    import jax
except ModuleNotFoundError as error:
    if error.name != "jax":
        raise
    jax = None
if jax is not None:
    platform = jax.default_backend()
    kinds = [device.device_kind for device in jax.devices()]
else:
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        )
    except FileNotFoundError:
        listed = None
    if listed is not None and listed.returncode != 0:
        sys.stdout.write(listed.stdout)
        sys.stderr.write(listed.stderr)
        sys.stderr.write("nvidia-smi exited with %d\\n" % listed.returncode)
        sys.exit(1)
    names = [line.strip() for line in (listed.stdout if listed else "").splitlines()]
    names = [name for name in names if name]
    platform, kinds = ("gpu", names) if names else ("cpu", ["cpu"])
print(json.dumps({"platform": platform, "kinds": kinds}))
"""
"""What the probe child runs with ``-c``.

JAX's default backend and each device's kind when ``import jax`` works; without JAX installed,
the GPUs ``nvidia-smi`` lists (platform ``gpu``), or ``cpu`` when there is no ``nvidia-smi`` or it
lists none. JAX that is installed but fails to start (``JAX_PLATFORMS=tpu`` on a machine without
TPUs), or an ``nvidia-smi`` that fails, exits non-zero: a probe failure, not a guess.
"""


def probe_limit(job_timeout_seconds: float) -> float:
    """The probe's time limit for a job: the job's budget, at most five minutes.

    Args:
        job_timeout_seconds: The job's ``timeout_seconds``.

    Returns:
        ``min(300.0, job_timeout_seconds)`` as a float.
    """
    return float(min(PROBE_LIMIT_SECONDS, job_timeout_seconds))


def timeout_message(limit_seconds: float) -> str:
    """What ``devices.log`` says when the probe ran out of time (substrax's wording).

    Args:
        limit_seconds: The limit it ran past.

    Returns:
        ``the device probe ran past <seconds> s`` and a newline, seconds as a Python float repr.
    """
    return f"the device probe ran past {float(limit_seconds)!r} s\n"


def read_probe_output(stdout: str) -> RunDevices | None:
    """Read the probe's answer from its standard output.

    Args:
        stdout: Everything the probe printed; its last non-blank line is the answer.

    Returns:
        The devices, or ``None`` when there is no answer or it is not a ``RunDevices`` object
        (the caller then keeps the probe's output in ``devices.log``).
    """
    lines = stdout.strip().splitlines()
    if not lines:
        return None
    try:
        return read_record(RunDevices, json.loads(lines[-1]))
    except (ValueError, RecordError):
        return None
