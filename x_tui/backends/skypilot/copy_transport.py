"""The copy transport: local inputs copied to the cluster, outputs fetched over SSH and verified.

SkyPilot copies each mount's local source onto the cluster; a writable mount is refused, since a
copy cannot be written back. The worker runs under bubblewrap, so the image has to provide
``bwrap`` with working user namespaces (the setup checks, and fails with a line saying so): the
system, the project and the inputs are read-only, ``/tmp`` and the run's outputs writable, and
with ``network_isolation`` the worker has no network.

The outputs stay on the cluster (``~/.x-tui/<run id>/outputs``) until it goes: an explicit
``teardown``, or its autostop timer (``lifetime_minutes`` idle after setup, then the cluster
removes itself; not a provisioning deadline or a cost cap). ``fetch`` copies them with rsync over
SSH (SkyPilot's own SSH configuration for the cluster), checked against complete listings of the
remote directory taken before and after the copy: files that changed meanwhile, or a copy that
differs from them, fail the fetch naming each difference and leave the cluster up. Symbolic links
are never copied. A verified copy answers for the run once its cluster is gone; until there is
one, a teardown of the run's cluster is refused unless forced.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from x_tui.backends.skypilot import listing
from x_tui.backends.skypilot.settings import CopySettings
from x_tui.backends.skypilot.ssh_mux import shared_connection_options
from x_tui.backends.skypilot.task import REMOTE_RUNS, cluster_name
from x_tui.backends.skypilot.tools import run_tool
from x_tui.backends.skypilot.transports import relative_output, state_of_manifest
from x_tui.compute.backend import RunState
from x_tui.compute.extensions import ResourceRequest
from x_tui.compute.outputs import OutputTooLargeError, read_output
from x_tui.compute.sanitize import one_line
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import ConfigError, ProviderError, UserError
from x_tui.compute.worker.manifest import MANIFEST_NAME
from x_tui.compute.worker.record_files import RECORD_BYTES, read_json_file
from x_tui.compute.worker.records import JsonValue, write_atomic
from x_tui.compute.worker.spec import JobSpec, MountAccess

FETCHED: Final = "fetched.json"
"""Beside a run's task file: where its last verified copy is."""

_LISTED = 6
_BWRAP_MISSING = (
    "command -v bwrap >/dev/null || { echo 'x-tui: the copy transport runs the worker under"
    " bubblewrap, and this image has no bwrap; install it in setup_commands, such as"
    ' "sudo apt-get install -y bubblewrap"\' >&2; exit 1; }'
)
_BWRAP_BROKEN = (
    "bwrap --ro-bind / / true || { echo 'x-tui: bubblewrap cannot make its sandbox on this"
    " image (are unprivileged user namespaces disabled?)' >&2; exit 1; }"
)


class FetchMismatch(ProviderError):
    """The outputs changed while they were fetched, or the copy differs from them."""


class OutputsOnlyOnCluster(UserError):
    """A teardown would remove the only copy of a run's outputs: they were never fetched."""


def differences(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Each entry that is not the same in two listings, as ``<path> (<what>)``."""
    lines = []
    for path in sorted(set(expected) | set(found)):
        if path not in found:
            lines.append(f"{path} (missing)")
        elif path not in expected:
            lines.append(f"{path} (added)")
        elif expected[path] != found[path]:
            was, now = expected[path], found[path]
            if was.get("type") != now.get("type"):
                lines.append(f"{path} (a {was.get('type')} became a {now.get('type')})")
            elif was.get("size") != now.get("size"):
                lines.append(f"{path} ({was.get('size')} bytes became {now.get('size')})")
            else:
                lines.append(f"{path} (content differs)")
    return lines


def _named(lines: list[str]) -> str:
    shown = ", ".join(lines[:_LISTED])
    more = len(lines) - _LISTED
    return shown + (f" and {more} more" if more > 0 else "")


class CopyTransport:
    """Local inputs copied to the cluster, outputs fetched over SSH; see the module documentation.

    ``ssh`` and ``rsync`` are attributes (the commands used), so a caller may point them elsewhere.
    """

    name = "copy"
    down_with_job = False
    ssh: str = "ssh"
    rsync: str = "rsync"
    remote_python: str = "python3"
    """The interpreter that lists the outputs on the cluster (SkyPilot's images all have one)."""

    def __init__(
        self, settings: CopySettings, *, runs: Path, ssh_config: Callable[[str], Path]
    ) -> None:
        """Keep the settings.

        Args:
            settings: The copy settings.
            runs: Where the backend keeps its runs' local files (a verified copy is noted there).
            ssh_config: The SSH configuration file SkyPilot wrote for a cluster, by its name.
        """
        self.settings = settings
        self.runs = runs
        self._ssh_config = ssh_config
        self.idle_minutes: int | None = settings.lifetime_minutes

    # The task ----------------------------------------------------------------------------------

    def check_job(self, spec: JobSpec, request: ResourceRequest) -> None:
        """Refuse what a copy cannot carry.

        Raises:
            ConfigError: If a mount is writable or has no source (or its source is not a
                directory here), or the job spans several nodes; the message names the setting.
        """
        where = "[tool.substrax.compute.backends.skypilot.copy]"
        for mount in spec.mounts:
            if mount.access is not MountAccess.READ_ONLY:
                raise ConfigError(
                    f"job {spec.name!r} mounts {mount.name!r} {mount.access.value}, and the copy"
                    " transport copies inputs to the cluster and cannot write them back; make"
                    " the mount read-only, or use the bucket transport"
                )
            source = self.settings.sources.get(mount.name)
            if source is None:
                raise ConfigError(
                    f"job {spec.name!r} mounts {mount.name!r} at {mount.path}, and {where}"
                    f" sources has no local directory for it; add sources = {{ {mount.name} ="
                    ' "/path/to/it" }'
                )
            if not Path(os.path.expanduser(source)).is_dir():
                raise ConfigError(f"{where} sources.{mount.name}: {source!r} is not a directory")
        if request.nodes > 1:
            raise ConfigError(
                f"job {spec.name!r} needs {request.nodes} nodes, and the copy transport fetches"
                " the outputs of one machine; use the bucket transport for several nodes"
            )

    def add_to_task(
        self, spec: JobSpec, resources: dict[str, JsonValue], mounts: dict[str, JsonValue]
    ) -> None:
        """Ask for the disk and the autostop timer, and copy each input mount's local source.

        Raises:
            ConfigError: If a mount is writable or has no source.
        """
        self.check_job(spec, ResourceRequest())
        resources["disk_size"] = self.settings.disk_size
        resources["autostop"] = {"idle_minutes": self.settings.lifetime_minutes, "down": True}
        for mount in spec.mounts:
            mounts[mount.path] = os.path.expanduser(self.settings.sources[mount.name])

    def setup_lines(self) -> list[str]:
        """Check that bubblewrap is there and can make its sandbox."""
        return [_BWRAP_MISSING, _BWRAP_BROKEN]

    def outputs_dir(self, run_id: str) -> str:
        """``$HOME/.x-tui/<run id>/outputs``, on the cluster's disk."""
        return f"$HOME/{REMOTE_RUNS.removeprefix('~/')}/{run_id}/outputs"

    def wrap_worker(self, worker: str, spec: JobSpec) -> str:
        """Run the worker under bubblewrap: everything read-only but ``/tmp`` and the outputs.

        Each mount is part of the read-only system; the devices are passed through, so the
        worker sees the machine's accelerators.
        """
        options = [
            "bwrap --die-with-parent --ro-bind / / --dev-bind /dev /dev --bind /proc /proc",
            '--tmpfs /tmp --bind "$OUTPUTS" "$OUTPUTS"',
            # The environment was synced in setup; uv only locks its (read-only) cache in here.
            "--setenv UV_CACHE_DIR /tmp/uv-cache",
        ]
        if self.settings.network_isolation:
            options.append("--unshare-net")
        return " ".join([*options, '--chdir "$PWD" --', worker])

    # Talking to the cluster ---------------------------------------------------------------------

    def _remote_dir(self, handle: RunHandle) -> str:
        return f"{REMOTE_RUNS.removeprefix('~/')}/{handle.run_id}/outputs"

    def _ssh_command(self, cluster: str) -> list[str]:
        config = self._ssh_config(cluster)
        if not config.is_file():
            raise ProviderError(
                f"cluster {cluster} cannot be reached: SkyPilot has no SSH configuration for it"
                f" ({config}); is it up? (`sky status {cluster}`)"
            )
        return [
            *shlex.split(self.ssh),
            "-F",
            str(config),
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=30",
            *shared_connection_options(cluster),
        ]

    def _remote(self, handle: RunHandle, *words: str, check: bool = True) -> tuple[int, bytes]:
        cluster = handle.details.get("cluster") or cluster_name(handle.run_id)
        remote = " ".join(
            [
                shlex.quote(self.remote_python),
                "-",
                *words[:1],
                f'"$HOME/{self._remote_dir(handle)}"',
            ]
            + [shlex.quote(word) for word in words[1:]]
        )
        source = Path(listing.__file__).read_bytes()
        done = run_tool(
            [*self._ssh_command(cluster), cluster, remote],
            what=f"reading the outputs of run {handle.run_id} on {cluster}",
            input_bytes=source,
            check=check,
            seconds=600,
        )
        return done.returncode, done.stdout

    def remote_listing(self, handle: RunHandle) -> dict[str, Any] | None:
        """The complete listing of the run's outputs on its cluster; ``None`` when there are none.

        Raises:
            ProviderError: If the cluster cannot be reached or the listing cannot be read.
        """
        _, output = self._remote(handle, "list")
        try:
            entries = json.loads(output)["entries"]
        except (ValueError, KeyError, TypeError):
            raise ProviderError(
                f"the listing of run {handle.run_id}'s outputs is not JSON: "
                + one_line(output.decode("utf-8", "replace"), keep_end=True)
            ) from None
        return entries if isinstance(entries, dict) else None

    # Fetching ----------------------------------------------------------------------------------

    def fetch(self, handle: RunHandle, target: Path) -> None:
        """Copy the outputs with rsync and verify them against the remote directory's listings.

        Raises:
            FetchMismatch: If the outputs changed during the copy, or the copy differs from
                them; each difference is named and the cluster is left up.
            ProviderError: If the cluster holds no outputs of the run or cannot be reached.
        """
        cluster = handle.details.get("cluster") or cluster_name(handle.run_id)
        before = self.remote_listing(handle)
        if before is None:
            raise ProviderError(
                f"cluster {cluster} holds no outputs of run {handle.run_id}"
                f" (~/{self._remote_dir(handle)})"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.fetching-{secrets.token_hex(4)}")
        try:
            ssh = shlex.join(self._ssh_command(cluster))
            run_tool(
                [
                    *shlex.split(self.rsync),
                    "-rtS",  # S: a sparse output stays sparse here
                    "-e",
                    ssh,
                    f"{cluster}:{self._remote_dir(handle)}/",
                    f"{staging}/",
                ],
                what=f"copying the outputs of run {handle.run_id} from {cluster}",
            )
            after = self.remote_listing(handle) or {}
            changed = differences(before, after)
            kept = f"; cluster {cluster} is left up, fetch again once the run has ended"
            if changed:
                raise FetchMismatch(
                    f"the outputs of run {handle.run_id} changed while they were fetched: "
                    + _named(changed)
                    + kept
                )
            expected = {
                path: entry
                for path, entry in before.items()
                if entry.get("type") in ("file", "dir")
            }
            copied = differences(expected, listing.listing(str(staging)) or {})
            if copied:
                raise FetchMismatch(
                    f"the copy of run {handle.run_id}'s outputs differs from them: "
                    + _named(copied)
                    + kept
                )
            _replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        record = {"path": str(target), "files": sum(e["type"] == "file" for e in before.values())}
        write_atomic(self.runs / handle.run_id / FETCHED, json.dumps(record, indent=2))

    def _verified_copy(self, handle: RunHandle) -> Path | None:
        try:
            record = read_json_file(self.runs / handle.run_id / FETCHED, max_bytes=RECORD_BYTES)
            path = Path(record["path"]) if isinstance(record, dict) else None
        except (OSError, ValueError, KeyError, TypeError):  # a RecordError is a ValueError
            return None
        if path is None:
            return None
        return path if path.is_dir() else None

    def check_teardown(self, handle: RunHandle) -> None:
        """Refuse to remove the run's cluster while its outputs exist only there.

        A run with a verified copy of its outputs (``fetch``), or whose cluster is already gone,
        passes.

        Args:
            handle: The run.

        Raises:
            OutputsOnlyOnCluster: If the cluster is up and the outputs were never fetched.
            ProviderError: If SkyPilot cannot say where the cluster's SSH configuration is.
        """
        if self._verified_copy(handle) is not None:
            return
        cluster = handle.details.get("cluster") or cluster_name(handle.run_id)
        if not self._ssh_config(cluster).is_file():
            return  # the cluster, and the outputs on it, are gone already
        raise OutputsOnlyOnCluster(
            f"the outputs of run {handle.run_id} exist only on cluster {cluster}: run"
            f" `x-tui fetch {handle.run_id}` first, or pass --force to tear down anyway"
        )

    def peek(self, handle: RunHandle, relative: str) -> bytes | None:
        """Read one file of the run's outputs on its cluster (the verified copy once it is gone).

        Raises:
            ValueError: If ``relative`` leads outside the run's outputs or through a link.
            ProviderError: If the cluster cannot be reached.
        """
        normal = relative_output(relative)
        config = self._ssh_config(handle.details.get("cluster") or cluster_name(handle.run_id))
        if not config.is_file():
            return self.saved_output(handle, normal)
        code, output = self._remote(handle, "read", normal, check=False)
        if code == 0:
            return output
        if code == listing.EXIT_MISSING:
            return None
        if code == listing.EXIT_REFUSED:
            raise ValueError(f"{relative!r} is a link or not a regular file of the run's outputs")
        if code == listing.EXIT_TOO_LARGE:
            raise OutputTooLargeError(
                f"{relative!r} in the run's outputs is larger than the {listing.READ_LIMIT} bytes"
                " read of it; fetch the run to read it whole"
            )
        self._remote(handle, "read", normal)  # raises, with the message
        return None

    def saved_output(self, handle: RunHandle, relative: str) -> bytes | None:
        """One file of the run's last verified copy, if it was fetched."""
        copy = self._verified_copy(handle)
        return None if copy is None else read_output(copy, relative_output(relative))

    def state_from_outputs(self, handle: RunHandle) -> RunState:
        """The state of the run's verified local copy of its outputs.

        Raises:
            ProviderError: If no verified copy exists: the cluster, and the outputs on it, are
                gone without the run's end having been seen.
        """
        copy = self._verified_copy(handle)
        if copy is None:
            cluster = handle.details.get("cluster") or cluster_name(handle.run_id)
            raise ProviderError(
                f"cluster {cluster} of run {handle.run_id} is gone, and with it the run's"
                " outputs; they were never fetched, so its end is unknown"
            )
        return state_of_manifest(read_output(copy, MANIFEST_NAME), source=str(copy / MANIFEST_NAME))


def _replace(staging: Path, target: Path) -> None:
    """Put the verified copy at ``target``, replacing an earlier one."""
    old = None
    if target.exists() or target.is_symlink():
        old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
        target.rename(old)
    staging.rename(target)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
