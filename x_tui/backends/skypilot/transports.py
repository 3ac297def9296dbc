"""How a SkyPilot run's inputs reach its cluster and its outputs come back: the bucket transport.

The backend runs every job the same way and leaves this to its transport, one of:

- :class:`BucketTransport` (here): inputs and outputs are object-store buckets SkyPilot mounts
  (``mode: MOUNT``), so the outputs outlive the cluster, which SkyPilot tears down when the job
  ends. Outputs are fetched with the bucket's own tool: ``gcloud storage`` for ``gs://``,
  ``aws s3`` for ``s3://``. Providers that cannot mount buckets (RunPod, Vast) are refused.
- :class:`~x_tui.backends.skypilot.copy_transport.CopyTransport`: local inputs copied onto the
  cluster read-only, the worker under bubblewrap, outputs fetched over SSH with rsync and
  verified against manifests of the remote directory taken before and after.

A bucket transport's peeks read through SkyPilot's long-lived bridge, with the cloud SDK
SkyPilot's cloud extra installs there (one client, its connections reused), and with the
bucket's command-line tool only where that SDK is missing.

Bucket mounts are read-write whatever a mount's ``access`` says (SkyPilot has no read-only
MOUNT); a read-only input is the job's promise, not enforced here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Protocol

from x_tui.backends.skypilot.bridge import Unsupported
from x_tui.backends.skypilot.settings import BucketSettings
from x_tui.backends.skypilot.tools import run_tool
from x_tui.compute.backend import RunState
from x_tui.compute.extensions import ResourceRequest
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import (
    BackendUnavailableError,
    BadRecordError,
    ConfigError,
    ProviderError,
)
from x_tui.compute.worker.manifest import MANIFEST_NAME, parse_manifest
from x_tui.compute.worker.records import JsonValue, RecordError
from x_tui.compute.worker.spec import JobSpec

OUTPUTS_MOUNT: Final = "/outputs"
"""Where the outputs bucket is mounted on the cluster; a run's outputs are ``/outputs/<run id>``."""

NO_BUCKET_MOUNTS: Final = ("runpod", "vast")
"""Providers SkyPilot cannot mount buckets on."""

_MISSING = (
    "NoSuchKey", "Not Found", "(404)", "does not exist", "No URLs matched", "NotFound",
    "matched no objects",
)  # fmt: skip


class Transport(Protocol):
    """The part of a SkyPilot run that depends on how its files move."""

    name: str
    """``bucket`` or ``copy``; the run screen shows it."""

    down_with_job: bool
    """Whether SkyPilot removes the cluster as soon as its job ends."""

    idle_minutes: int | None
    """The cluster's autostop (autodown) idle time, when it outlives its job."""

    def check_job(self, spec: JobSpec, request: ResourceRequest) -> None:
        """Refuse a job this transport cannot carry, naming the setting to change."""
        ...

    def add_to_task(
        self, spec: JobSpec, resources: dict[str, JsonValue], mounts: dict[str, JsonValue]
    ) -> None:
        """Add the transport's resources and the job's input and output mounts to the task."""
        ...

    def setup_lines(self) -> list[str]:
        """Shell lines the setup runs after the environment is synced."""
        ...

    def outputs_dir(self, run_id: str) -> str:
        """The run's outputs directory on the cluster, as a double-quotable shell word."""
        ...

    def wrap_worker(self, worker: str, spec: JobSpec) -> str:
        """The command that runs ``worker`` on the cluster."""
        ...

    def fetch(self, handle: RunHandle, target: Path) -> None:
        """Copy the run's outputs into ``target`` (``<destination>/<run id>``)."""
        ...

    def peek(self, handle: RunHandle, relative: str) -> bytes | None:
        """One file of the run's outputs while it runs; ``None`` when it is not there (yet)."""
        ...

    def saved_output(self, handle: RunHandle, relative: str) -> bytes | None:
        """One file of the run's outputs without its cluster; ``None`` when there is none."""
        ...

    def state_from_outputs(self, handle: RunHandle) -> RunState:
        """The run's state once its cluster no longer reports it, from what it left behind."""
        ...


def relative_output(path: str) -> str:
    """Check a path relative to a run's outputs.

    Args:
        path: Such as ``manifest.json`` or ``train/stdout.log``.

    Returns:
        The normalised path, ``/``-separated.

    Raises:
        ValueError: If it is empty, absolute, or climbs out with ``..``.
    """
    normal = posixpath.normpath(path)
    if not path or path.startswith("/") or normal == "." or normal.split("/")[0] == "..":
        raise ValueError(f"{path!r} is not a path inside a run's outputs")
    return normal


def state_of_manifest(data: bytes | None, *, source: str) -> RunState:
    """The state a run's manifest records: ``failed`` without one or while it is unfinished.

    Raises:
        BadRecordError: If the manifest cannot be read; the message names ``source``.
    """
    if data is None:
        return RunState.FAILED
    try:
        manifest = parse_manifest(data, source=source)
    except RecordError as error:
        raise BadRecordError(str(error)) from None
    if not manifest.finished:
        return RunState.FAILED
    return RunState.SUCCEEDED if manifest.succeeded else RunState.FAILED


def downloader(uri: str) -> tuple[str, ...]:
    """The command that copies a bucket directory to this machine, before source and target.

    Raises:
        ConfigError: If the scheme has no download tool.
    """
    if uri.startswith("gs://"):
        return ("gcloud", "storage", "rsync", "--recursive")
    if uri.startswith("s3://"):
        return ("aws", "s3", "sync", "--only-show-errors")
    raise ConfigError(f"no download tool for {uri!r}; use a gs:// or s3:// bucket")


def reader(uri: str) -> tuple[str, ...]:
    """The command that writes one bucket object to standard output (the URI goes last).

    Raises:
        ConfigError: If the scheme has no download tool.
    """
    if uri.startswith("gs://"):
        return ("gcloud", "storage", "cat")
    if uri.startswith("s3://"):
        return ("aws", "s3", "cp", "--only-show-errors")
    raise ConfigError(f"no download tool for {uri!r}; use a gs:// or s3:// bucket")


class BucketTransport:
    """Inputs and outputs on buckets SkyPilot mounts; see the module documentation."""

    name = "bucket"
    down_with_job = True
    idle_minutes: int | None = None

    def __init__(
        self,
        settings: BucketSettings,
        *,
        cloud: str | None,
        read_object: Callable[[str], bytes | None] | None = None,
    ) -> None:
        """Check the settings against where the run goes.

        Args:
            settings: The bucket settings.
            cloud: The cloud of the backend's ``infra``, if set.
            read_object: Reads one object without starting a tool (``None`` when it is not
                there); raises :class:`~x_tui.backends.skypilot.bridge.Unsupported` or
                ``BackendUnavailableError`` where it cannot, and the tool reads instead.

        Raises:
            ConfigError: If the provider cannot mount buckets.
        """
        if cloud in NO_BUCKET_MOUNTS:
            raise ConfigError(
                f"[tool.substrax.compute.backends.skypilot] infra: {cloud} cannot mount buckets;"
                " use the copy transport ([tool.substrax.compute.backends.skypilot.copy])"
                " instead of bucket"
            )
        self.settings = settings
        self._read_object = read_object

    def _run_uri(self, handle: RunHandle) -> str:
        return f"{self.settings.outputs_bucket.rstrip('/')}/{handle.run_id}"

    def check_job(self, spec: JobSpec, request: ResourceRequest) -> None:
        """Refuse a job with a mount that has no bucket.

        Raises:
            ConfigError: If a mount has no configured bucket; the message names it.
        """
        for mount in spec.mounts:
            if mount.name not in self.settings.buckets:
                raise ConfigError(
                    f"job {spec.name!r} mounts {mount.name!r} at {mount.path}, and"
                    " [tool.substrax.compute.backends.skypilot.bucket] buckets has no bucket for"
                    f' it; add buckets = {{ {mount.name} = "gs://..." }}'
                )

    def add_to_task(
        self, spec: JobSpec, resources: dict[str, JsonValue], mounts: dict[str, JsonValue]
    ) -> None:
        """Mount the outputs bucket at ``/outputs`` and each input mount's bucket at its path.

        Raises:
            ConfigError: If a mount has no configured bucket.
        """
        self.check_job(spec, ResourceRequest())
        mounts[OUTPUTS_MOUNT] = {"source": self.settings.outputs_bucket, "mode": "MOUNT"}
        for mount in spec.mounts:
            mounts[mount.path] = {"source": self.settings.buckets[mount.name], "mode": "MOUNT"}

    def setup_lines(self) -> list[str]:
        """Nothing more to set up."""
        return []

    def outputs_dir(self, run_id: str) -> str:
        """``/outputs/<run id>``, on the mounted bucket."""
        return f"{OUTPUTS_MOUNT}/{run_id}"

    def wrap_worker(self, worker: str, spec: JobSpec) -> str:
        """The worker runs as it is."""
        return worker

    def fetch(self, handle: RunHandle, target: Path) -> None:
        """Download the run's directory of the outputs bucket into ``target``.

        Raises:
            BackendUnavailableError: If the bucket's tool is not installed.
            ProviderError: If the download fails, or the bucket holds nothing of the run.
        """
        source = self._run_uri(handle)
        target.mkdir(parents=True, exist_ok=True)
        run_tool([*downloader(source), source, str(target)], what=f"downloading {source}")
        if not any(target.iterdir()):
            raise ProviderError(f"{source} holds no outputs of run {handle.run_id}")

    def peek(self, handle: RunHandle, relative: str) -> bytes | None:
        """Read one object of the run's outputs from the bucket.

        Raises:
            ValueError: If ``relative`` leads outside the run's outputs.
            BackendUnavailableError: If the bucket's tool is not installed.
            ProviderError: If the tool fails for another reason than a missing object.
        """
        uri = f"{self._run_uri(handle)}/{relative_output(relative)}"
        if self._read_object is not None:
            try:
                return self._read_object(uri)
            except (Unsupported, BackendUnavailableError):
                self._read_object = None  # not here: the tool reads from now on
        command: Sequence[str] = (*reader(uri), uri)
        if uri.startswith("s3://"):
            command = (*command, "-")
        done = run_tool(command, what=f"reading {uri}", check=False, seconds=300)
        if done.returncode == 0:
            return done.stdout
        if any(marker in done.stderr for marker in _MISSING):
            return None
        run_tool(command, what=f"reading {uri}", seconds=300)  # raises, with the message
        return None

    def saved_output(self, handle: RunHandle, relative: str) -> bytes | None:
        """The same object: the bucket outlives the cluster."""
        return self.peek(handle, relative)

    def state_from_outputs(self, handle: RunHandle) -> RunState:
        """The state the run's manifest in the outputs bucket records.

        Returns:
            Its state; ``failed`` when the run left no finished manifest.

        Raises:
            BadRecordError: If the manifest cannot be read.
            ProviderError: If the bucket cannot be read.
        """
        return state_of_manifest(
            self.peek(handle, MANIFEST_NAME), source=f"{self._run_uri(handle)}/{MANIFEST_NAME}"
        )
