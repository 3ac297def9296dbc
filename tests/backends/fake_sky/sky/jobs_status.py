"""SkyPilot 0.14.1's ``JobStatus`` and ``ClusterStatus``, value for value, in the same order."""

from __future__ import annotations

import enum


class JobStatus(enum.Enum):
    """A job's status on its cluster (``sky.skylet.job_lib.JobStatus``)."""

    INIT = "INIT"
    PENDING = "PENDING"
    SETTING_UP = "SETTING_UP"
    RUNNING = "RUNNING"
    FAILED_DRIVER = "FAILED_DRIVER"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    FAILED_SETUP = "FAILED_SETUP"
    CANCELLED = "CANCELLED"

    @classmethod
    def nonterminal_statuses(cls) -> list[JobStatus]:
        return [cls.INIT, cls.SETTING_UP, cls.PENDING, cls.RUNNING]

    def is_terminal(self) -> bool:
        return self not in self.nonterminal_statuses()


class ClusterStatus(enum.Enum):
    """A cluster's status (``sky.utils.status_lib.ClusterStatus``)."""

    INIT = "INIT"
    UP = "UP"
    STOPPED = "STOPPED"
    AUTOSTOPPING = "AUTOSTOPPING"
    PENDING = "PENDING"
