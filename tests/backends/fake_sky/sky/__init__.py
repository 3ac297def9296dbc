"""A fake ``sky`` (SkyPilot 0.14.1) for x-tui's tests, run by a real second interpreter.

It answers the SDK calls x-tui's bridge makes, as SkyPilot 0.14.1 does (request ids, ``get``,
``JobStatus`` values, ``ClusterDoesNotExist`` after autodown), and launches each task on this
machine: a cluster is a directory under ``$FAKE_SKY_ROOT``, its job a process group running the
task's ``setup`` and ``run``. See ``sky._fake.state`` for the files and the switches tests use.
"""

from __future__ import annotations

from sky import exceptions, sky_logging
from sky.client.sdk import (
    api_cancel,
    api_status,
    cancel,
    down,
    get,
    job_status,
    launch,
    queue,
    status,
    stream_and_get,
    tail_logs,
)
from sky.jobs_status import ClusterStatus, JobStatus
from sky.task import Task

__version__ = "0.14.1"

__all__ = [
    "ClusterStatus", "JobStatus", "Task", "__version__", "api_cancel", "api_status", "cancel",
    "down", "exceptions", "get", "job_status", "launch", "queue", "sky_logging", "status",
    "stream_and_get", "tail_logs",
]  # fmt: skip
