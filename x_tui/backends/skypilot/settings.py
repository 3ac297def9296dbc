"""The skypilot backend's settings: ``[tool.substrax.compute.backends.skypilot]``, checked strictly.

Every key of the seed's table is read here and nothing else: an unknown key, in the table or in
its ``bucket`` / ``copy`` sub-table, is refused naming the accepted ones, and exactly one of
``bucket`` and ``copy`` must be set. The checked table, defaults filled in, is what a run's handle
freezes (:meth:`SkyPilotSettings.table`), so a run is always followed with the settings it was
submitted with.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from x_tui.compute.worker.errors import ConfigError, did_you_mean
from x_tui.compute.worker.records import JsonValue
from x_tui.compute.worker.spec import NAME_PATTERN

TABLE: Final = "[tool.substrax.compute.backends.skypilot]"
"""The settings table, as messages name it."""

KEYS: Final = (
    "infra",
    "use_spot",
    "setup_commands",
    "sky",
    "sky_python",
    "worker_python",
    "state_dir",
    "bucket",
    "copy",
)
"""The settings this backend reads; any other key is refused."""

BUCKET_KEYS: Final = ("outputs_bucket", "buckets")
COPY_KEYS: Final = ("sources", "disk_size", "lifetime_minutes", "network_isolation")

BUCKET_SCHEMES: Final = ("gs://", "s3://")
"""The bucket URIs the transport mounts and downloads: ``gcloud storage`` and ``aws s3``."""

DEFAULT_WORKER_PYTHON: Final = "uv run --no-sync python"
_INFRA = re.compile(r"[A-Za-z0-9*][A-Za-z0-9*._:@-]*(?:/[A-Za-z0-9*._:@-]+){0,2}")
_BUCKET = re.compile(r"(gs|s3)://[a-z0-9][a-z0-9._-]{1,220}(?:/[^\s]*)?")


def _where(key: str, sub: str | None = None) -> str:
    return f"{TABLE[:-1]}.{sub}] {key}" if sub else f"{TABLE} {key}"


def _refuse_unknown(table: Mapping[str, object], accepted: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in accepted:
            raise ConfigError(f"{where} unknown key {key!r}{did_you_mean(str(key), accepted)}")


def _string(value: object, key: str, *, sub: str | None = None, optional: bool = False) -> str:
    if (value is None and optional) or (isinstance(value, str) and value.strip()):
        return value  # type: ignore[return-value]
    wanted = "a non-empty string or nothing" if optional else "a non-empty string"
    raise ConfigError(f"{_where(key, sub)}: expected {wanted}, got {value!r}")


def _bool(value: object, key: str, *, sub: str | None = None) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{_where(key, sub)}: expected true or false, got {value!r}")
    return value


def _positive_int(value: object, key: str, *, sub: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{_where(key, sub)}: expected a whole number of at least 1, got {value!r}"
        )
    return value


def _mount_table(value: object, key: str, *, sub: str, what: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{_where(key, sub)}: expected a table of mount name = {what}, got {value!r}"
        )
    table: dict[str, str] = {}
    for mount, target in value.items():
        if not isinstance(mount, str) or not NAME_PATTERN.fullmatch(mount):
            raise ConfigError(f"{_where(key, sub)}: {mount!r} is not a mount name")
        if not isinstance(target, str) or not target.strip():
            raise ConfigError(f"{_where(f'{key}.{mount}', sub)}: expected {what}, got {target!r}")
        table[mount] = target
    return table


def check_bucket_uri(uri: str, key: str) -> str:
    """Refuse a bucket URI this backend cannot mount and download.

    Args:
        uri: The URI, such as ``gs://my-runs`` or ``s3://my-runs/prefix``.
        key: The key it was read from, for the message.

    Returns:
        ``uri``.

    Raises:
        ConfigError: If it is not a ``gs://`` or ``s3://`` bucket URI; the message names the key,
            the value and the accepted schemes.
    """
    if not _BUCKET.fullmatch(uri):
        raise ConfigError(
            f"{_where(key, 'bucket')}: {uri!r} is not a bucket this backend can mount and"
            f" download; use {' or '.join(BUCKET_SCHEMES)} followed by a bucket name, such as"
            " 'gs://my-runs' (fetched with `gcloud storage`) or 's3://my-runs' (`aws s3`)"
        )
    return uri


@dataclass(frozen=True, kw_only=True, slots=True)
class BucketSettings:
    """``[...skypilot.bucket]``: buckets SkyPilot mounts.

    Attributes:
        outputs_bucket: The ``gs://`` or ``s3://`` URI the runs' outputs go to.
        buckets: The bucket URI behind each of a job's mounts, by mount name.
    """

    outputs_bucket: str
    buckets: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, value: object) -> BucketSettings:
        """Read and check the ``bucket`` table.

        Raises:
            ConfigError: If a key is unknown, ``outputs_bucket`` is missing, or a URI is not a
                ``gs://`` or ``s3://`` bucket.
        """
        if not isinstance(value, Mapping):
            raise ConfigError(f"{TABLE} bucket: expected a table, got {value!r}")
        _refuse_unknown(value, BUCKET_KEYS, f"{TABLE[:-1]}.bucket]")
        if value.get("outputs_bucket") is None:
            raise ConfigError(
                f"{TABLE[:-1]}.bucket] missing required key 'outputs_bucket': the bucket the runs'"
                ' outputs go to, such as outputs_bucket = "gs://my-runs"'
            )
        outputs = check_bucket_uri(
            _string(value["outputs_bucket"], "outputs_bucket", sub="bucket"), "outputs_bucket"
        )
        buckets = _mount_table(
            value.get("buckets") or {}, "buckets", sub="bucket", what="a bucket URI"
        )
        for mount, uri in buckets.items():
            check_bucket_uri(uri, f"buckets.{mount}")
        return cls(outputs_bucket=outputs, buckets=buckets)

    def table(self) -> dict[str, JsonValue]:
        """The table, every key present."""
        return {"outputs_bucket": self.outputs_bucket, "buckets": dict(self.buckets)}


@dataclass(frozen=True, kw_only=True, slots=True)
class CopySettings:
    """``[...skypilot.copy]``: local inputs copied to the cluster, outputs fetched over SSH.

    Attributes:
        sources: The local directory behind each of a job's mounts, by mount name; read-only.
        disk_size: The disk the cluster is asked for, in GB.
        lifetime_minutes: How long the cluster may idle after setup before it removes itself.
        network_isolation: Run the worker without network access.
    """

    sources: Mapping[str, str] = field(default_factory=dict)
    disk_size: int = 60
    lifetime_minutes: int = 60
    network_isolation: bool = False

    @classmethod
    def read(cls, value: object) -> CopySettings:
        """Read and check the ``copy`` table.

        Raises:
            ConfigError: If a key is unknown, a source is not an absolute path (or ``~/...``),
                or a number is not a whole number of at least one.
        """
        if not isinstance(value, Mapping):
            raise ConfigError(f"{TABLE} copy: expected a table, got {value!r}")
        _refuse_unknown(value, COPY_KEYS, f"{TABLE[:-1]}.copy]")
        sources = _mount_table(
            value.get("sources") or {}, "sources", sub="copy", what="a local directory"
        )
        for mount, path in sources.items():
            if not (path.startswith("/") or path.startswith("~/")):
                raise ConfigError(
                    f"{_where(f'sources.{mount}', 'copy')}: {path!r} is not an absolute path;"
                    " write it from / or ~/ (a run's settings outlive the directory it was"
                    " submitted from)"
                )
        return cls(
            sources=sources,
            disk_size=_positive_int(value.get("disk_size", 60), "disk_size", sub="copy"),
            lifetime_minutes=_positive_int(
                value.get("lifetime_minutes", 60), "lifetime_minutes", sub="copy"
            ),
            network_isolation=_bool(
                value.get("network_isolation", False), "network_isolation", sub="copy"
            ),
        )

    def table(self) -> dict[str, JsonValue]:
        """The table, every key present."""
        return {
            "sources": dict(self.sources),
            "disk_size": self.disk_size,
            "lifetime_minutes": self.lifetime_minutes,
            "network_isolation": self.network_isolation,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class SkyPilotSettings:
    """The skypilot backend's settings (the seed's table).

    Attributes:
        bucket: The bucket transport's settings; exactly one of ``bucket`` and ``copy`` is set.
        copy: The copy transport's settings.
        setup_commands: Commands run before the locked environment is synced.
        infra: Where to run, in SkyPilot's ``infra`` syntax (``gcp``, ``gcp/us-central1``);
            any enabled cloud when ``None``.
        use_spot: Run on spot instances.
        sky: The ``sky`` command, used to find SkyPilot's interpreter beside it.
        sky_python: SkyPilot's interpreter; the ``python`` beside ``sky`` when ``None``.
        worker_python: The command that starts Python in the cluster's synced environment.
        state_dir: Where task files, launch records and cancellations are kept; the default
            state directory when ``None``.
    """

    bucket: BucketSettings | None = None
    copy: CopySettings | None = None
    setup_commands: tuple[str, ...] = ()
    infra: str | None = None
    use_spot: bool = False
    sky: str = "sky"
    sky_python: str | None = None
    worker_python: str = DEFAULT_WORKER_PYTHON
    state_dir: str | None = None

    @property
    def transport_name(self) -> str:
        """``"bucket"`` or ``"copy"``."""
        return "bucket" if self.bucket is not None else "copy"

    @property
    def cloud(self) -> str | None:
        """The cloud ``infra`` names, lower-cased (``k8s`` read as ``kubernetes``), if any."""
        if self.infra is None:
            return None
        cloud = self.infra.split("/", 1)[0].lower()
        return {"k8s": "kubernetes"}.get(cloud, cloud)

    @classmethod
    def read(cls, table: Mapping[str, JsonValue] | None) -> SkyPilotSettings:
        """Read and check the settings table.

        Args:
            table: The table, as ``pyproject.toml`` or a run handle holds it.

        Returns:
            The settings.

        Raises:
            ConfigError: If a key is unknown, a value is of the wrong type, or the transport is
                not exactly one of ``bucket`` and ``copy``; the message names the table, key and
                value.
        """
        table = dict(table or {})
        _refuse_unknown(table, KEYS, TABLE)
        bucket, copy = table.get("bucket"), table.get("copy")
        if (bucket is None) == (copy is None):
            both = "both" if bucket is not None else "neither"
            raise ConfigError(
                f"{TABLE} sets {both} of 'bucket' and 'copy'; set exactly one transport:"
                f' {TABLE[:-1]}.bucket] with outputs_bucket = "gs://my-runs", or'
                f" {TABLE[:-1]}.copy] (inputs copied, outputs fetched over SSH)"
            )
        setup = table.get("setup_commands") or []
        if not isinstance(setup, list):
            raise ConfigError(
                f"{TABLE} setup_commands: expected an array of shell commands, got {setup!r}"
            )
        infra = _string(table.get("infra"), "infra", optional=True)
        if infra is not None and not _INFRA.fullmatch(infra):
            raise ConfigError(
                f"{TABLE} infra: {infra!r} is not in SkyPilot's infra syntax, such as 'gcp',"
                " 'gcp/us-central1', 'aws/us-east-1/us-east-1a' or 'k8s/my-context'"
            )
        worker_python = _string(table.get("worker_python", DEFAULT_WORKER_PYTHON), "worker_python")
        sky = _string(table.get("sky", "sky"), "sky")
        for key, command in (("worker_python", worker_python), ("sky", sky)):
            try:
                shlex.split(command)
            except ValueError as error:
                raise ConfigError(
                    f"{TABLE} {key}: {command!r} is not a command line ({error})"
                ) from None
        return cls(
            bucket=BucketSettings.read(bucket) if bucket is not None else None,
            copy=CopySettings.read(copy) if copy is not None else None,
            setup_commands=tuple(
                _string(command, f"setup_commands[{index}]") for index, command in enumerate(setup)
            ),
            infra=infra,
            use_spot=_bool(table.get("use_spot", False), "use_spot"),
            sky=sky,
            sky_python=_string(table.get("sky_python"), "sky_python", optional=True),
            worker_python=worker_python,
            state_dir=_string(table.get("state_dir"), "state_dir", optional=True),
        )

    def table(self) -> dict[str, JsonValue]:
        """The settings as a table, every key present but the unused transport's."""
        table: dict[str, JsonValue] = {
            "infra": self.infra,
            "use_spot": self.use_spot,
            "setup_commands": list(self.setup_commands),
            "sky": self.sky,
            "sky_python": self.sky_python,
            "worker_python": self.worker_python,
            "state_dir": self.state_dir,
        }
        if self.bucket is not None:
            table["bucket"] = self.bucket.table()
        if self.copy is not None:
            table["copy"] = self.copy.table()
        return table
