"""The exceptions of ``sky.exceptions`` the fake raises, with SkyPilot 0.14.1's bases."""

from __future__ import annotations

import enum


class ClusterDoesNotExist(ValueError):
    """The cluster is not known (never launched, torn down, or autodowned)."""


class ClusterNotUpError(Exception):
    """The cluster is not UP."""


class NoCloudAccessError(Exception):
    """No cloud is enabled."""


class CloudError(Exception):
    """A cloud call failed."""


class ResourcesUnavailableError(Exception):
    """No cloud could provision the resources."""


class RequestCancelled(Exception):
    """The request was cancelled."""


class JobExitCode(enum.IntEnum):
    """``sky logs`` exit codes."""

    SUCCEEDED = 0
    FAILED = 100
    NOT_FINISHED = 101
    NOT_FOUND = 102
    CANCELLED = 103


class CommandError(Exception):
    """A command run on the cluster failed."""
