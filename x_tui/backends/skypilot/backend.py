"""``SkyPilotBackend``: submit, follow, fetch, cancel and tear down runs through SkyPilot.

Each run gets a cluster of its own. ``submit`` stages the spec and the worker, writes the task
file and the launch intent, and sends the launch through the bridge; it returns once SkyPilot's
API server has named the request (provisioning goes on there, whatever becomes of x-tui), with
the cluster, the request id and the transport in the handle's details. The launch's answer (the
job on its cluster, or why not) is reconciled from SkyPilot's request records the next time the
run is looked at, and recorded beside the task file, so an interrupted x-tui never launches a run
twice. Status comes from the cluster's queue while it is up, else from the outputs; logs from
SkyPilot's log stream. See :mod:`.launch_records` for the files, :mod:`.transports` for how files
move.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from x_tui.backends.skypilot import catalog, logs
from x_tui.backends.skypilot.bridge import Bridge, ClusterGone, failure
from x_tui.backends.skypilot.copy_transport import CopyTransport
from x_tui.backends.skypilot.launch_records import (
    INTENT,
    LAUNCH_LOG,
    REQUEST,
    Launch,
    RunRecords,
)
from x_tui.backends.skypilot.planning import check_job, plan_document
from x_tui.backends.skypilot.reconcile import (
    launch_from_answer,
    reconcile_launch,
    request_id_of,
    state_in_jobs,
    stop_run,
)
from x_tui.backends.skypilot.settings import SkyPilotSettings
from x_tui.backends.skypilot.task import TASK_NAME, cluster_name, task_for
from x_tui.backends.skypilot.transports import BucketTransport, Transport
from x_tui.compute.backend import Capability, RunState, new_run, stage_run
from x_tui.compute.estimate import AcceleratorOffer, check_offer
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.launches import LaunchRecord, RunLaunch
from x_tui.compute.retries import write_retries_file
from x_tui.compute.run_endings import EndingBook, RunEnding
from x_tui.compute.secrets import SecretValues
from x_tui.compute.store import RunHandle, backend_state_dir, new_run_id
from x_tui.compute.worker.errors import ProviderError, UserError
from x_tui.compute.worker.manifest import MANIFEST_NAME, parse_manifest
from x_tui.compute.worker.records import JsonValue, RecordError, dump_record
from x_tui.compute.worker.spec import JobSpec
from x_tui.compute.worker_bundle import write_worker_zipapp

NAME: Final = "skypilot"

OBJECT_SECONDS: Final = 300.0
"""How long reading one bucket object through the bridge may take (as the tool may)."""


class CancelFailed(ExceptionGroup[Exception], ProviderError):
    """Some steps of a cancel failed; it holds each failure, and its message names them all."""

    def __str__(self) -> str:
        return f"{self.message}: " + "; ".join(str(error) for error in self.exceptions)


class SkyPilotBackend:
    """Runs jobs through SkyPilot's public SDK, in SkyPilot's own interpreter."""

    name: str = NAME

    def __init__(self, settings: Mapping[str, JsonValue] | None = None) -> None:
        """Read the backend's settings; SkyPilot is not looked for until it is needed.

        Args:
            settings: The ``[tool.substrax.compute.backends.skypilot]`` table, with exactly one
                of ``bucket`` and ``copy``.

        Raises:
            ConfigError: If a setting is missing, unknown or of the wrong type, the transport is
                not exactly one of ``bucket`` and ``copy``, or its own checks fail.
        """
        self.settings = SkyPilotSettings.read(settings)
        self.bridge = Bridge(
            sky=self.settings.sky, sky_python=self.settings.sky_python, cloud=self.settings.cloud
        )
        self.runs = backend_state_dir(self.settings.state_dir, NAME)
        self._ssh_configs: dict[str, Path] = {}
        self._launching: set[str] = set()
        """The runs whose launch the last poll found still going (their job has not started)."""
        self.transport: Transport
        if self.settings.bucket is not None:
            self.transport = BucketTransport(
                self.settings.bucket, cloud=self.settings.cloud, read_object=self._read_object
            )
        else:
            assert self.settings.copy is not None
            self.transport = CopyTransport(
                self.settings.copy, runs=self.runs, ssh_config=self._ssh_config
            )
        self.capabilities = frozenset(
            {
                Capability.PLAN,
                Capability.PEEK,
                Capability.REQUEST,
                Capability.ACCELERATORS,
                Capability.EXTENSIONS,
                Capability.TEARDOWN,
                Capability.LAUNCH,
                Capability.STATUSES,
            }
        )

    def _ssh_config(self, cluster: str) -> Path:
        # Where SkyPilot writes a cluster's SSH configuration never changes: ask once.
        known = self._ssh_configs.get(cluster)
        if known is None:
            answer = self.bridge.call(
                "ssh_config", {"cluster": cluster}, what=f"finding the SSH config of {cluster}"
            )
            known = self._ssh_configs[cluster] = Path(str(answer))
        return known

    def _read_object(self, uri: str) -> bytes | None:
        # A bucket object through the bridge's interpreter: no tool started per read.
        answer = self.bridge.call(
            "read_object", {"uri": uri}, what=f"reading {uri}", seconds=OBJECT_SECONDS
        )
        if answer is None:
            return None
        if not isinstance(answer, str):
            raise ProviderError(f"SkyPilot's bridge answered {answer!r} while reading {uri}")
        try:
            return base64.b64decode(answer, validate=True)
        except ValueError:
            raise ProviderError(
                f"SkyPilot's bridge answered no base64 while reading {uri}"
            ) from None

    def _records(self, handle: RunHandle) -> RunRecords:
        return RunRecords(self.runs / handle.run_id)

    @staticmethod
    def _cluster(handle: RunHandle) -> str:
        return handle.details.get("cluster") or cluster_name(handle.run_id)

    # Planning and submitting -------------------------------------------------------------------

    def _check(
        self,
        spec: JobSpec,
        project: Path,
        request: ResourceRequest | None,
        extensions: JobExtensions,
    ) -> ResourceRequest:
        return check_job(
            spec,
            project=project.resolve(),
            request=request,
            extensions=extensions,
            transport=self.transport,
            backend=NAME,
        )

    def _task(
        self,
        spec: JobSpec,
        *,
        project: Path,
        run_id: str,
        run_dir: Path,
        request: ResourceRequest,
        extensions: JobExtensions,
    ) -> dict[str, JsonValue]:
        return task_for(
            spec,
            project=project,
            run_id=run_id,
            run_dir=run_dir,
            request=request,
            settings=self.settings,
            transport=self.transport,
            extensions=extensions,
        )

    def plan(
        self,
        spec: JobSpec,
        *,
        project: Path,
        request: ResourceRequest | None = None,
        extensions: JobExtensions | None = None,
    ) -> Mapping[str, JsonValue]:
        """The SkyPilot task ``submit`` would launch, and its hourly cost when the catalog says.

        Nothing is launched. The run id (and so the cluster's name) is an example: each submit
        names a fresh one.

        Args:
            spec: The job.
            project: The project root.
            request: The job's resources as written (alternatives, nodes); the spec's when
                ``None``.
            extensions: The job's dependencies (setup), secrets (named only) and retries.

        Returns:
            ``cluster``, ``transport``, ``launch`` (``down``, ``idle_minutes_to_autostop``),
            ``task``, ``secrets`` (the names the tasks see; the values go with the launch), and
            ``cost`` (the catalog's estimate, or why there is none).

        Raises:
            ConfigError: If the job cannot run on this backend (no uv.lock, a mount the
                transport cannot carry, SkyPilot-side secrets).
        """
        wanted_extensions = extensions if extensions is not None else JobExtensions()
        wanted = self._check(spec, project, request, wanted_extensions)
        run_id = new_run_id(spec.name)
        task = self._task(
            spec,
            project=project.resolve(),
            run_id=run_id,
            run_dir=self.runs / run_id,
            request=wanted,
            extensions=wanted_extensions,
        )
        return plan_document(
            run_id=run_id,
            task=task,
            transport=self.transport,
            extensions=wanted_extensions,
            request=wanted,
            offers=self.offers,
            spot=self.settings.use_spot,
        )

    def offers(self) -> tuple[catalog.Offer, ...]:
        """The machine shapes and hourly prices in SkyPilot's catalog cache, for ``infra``'s cloud.

        Raises:
            BackendUnavailableError: If SkyPilot is not installed.
            ProviderError: If the catalog cannot be read in time.
        """
        return catalog.cached_offers(self.bridge, cloud=self.settings.cloud)

    def accelerators(self) -> list[AcceleratorOffer]:
        """The accelerator kinds SkyPilot's catalog cache prices, their counts per node and price.

        Returns:
            One offer per kind; empty when SkyPilot has no catalog cached yet.

        Raises:
            BackendUnavailableError: If SkyPilot is not installed.
            ProviderError: If the catalog cannot be read in time.
        """
        where = self.settings.infra or "every cloud"
        return catalog.accelerator_offers(
            self.offers(),
            spot=self.settings.use_spot,
            source=f"SkyPilot's catalog cache ({where})",
        )

    def check_offer(self, request: ResourceRequest) -> None:
        """Refuse an accelerator kind or count per node the cached catalogs do not list.

        Nothing is refused when there is nothing to check against: SkyPilot not installed here,
        or no catalog cached yet (SkyPilot itself decides at launch then).

        Args:
            request: The run's resources.

        Raises:
            ResourceError: Naming the alternative refused and what the catalogs list.
        """
        try:
            offers = self.accelerators()
        except UserError:
            return
        if offers:
            check_offer(request, offers, backend=NAME)

    def submit(
        self,
        spec: JobSpec,
        *,
        project: Path,
        request: ResourceRequest | None = None,
        extensions: JobExtensions | None = None,
        secrets: SecretValues | None = None,
        launch: RunLaunch | None = None,
    ) -> RunHandle:
        """Write the task file and the launch intent, then launch it on a cluster of its own.

        Returns as soon as SkyPilot names the launch's request: provisioning goes on in
        SkyPilot's API server, and the run is pending until its job is on the cluster.

        Args:
            spec: The job.
            project: The project root, synced as the task's workdir.
            request: The job's resources as written; the spec's when ``None``.
            extensions: The job's dependencies (setup), secrets and retries (``retries.json``
                beside the spec, for the worker).
            secrets: The captured values, by their name in the task: sent to SkyPilot with the
                launch as the task's secrets (redacted in its logs), never written to a file.
            launch: The shared submit path's launch record: the run's directory is named in it
                before it is made, and the cluster once the intent is written (from then on
                the launch may be sent, so the run is never forgotten).

        Returns:
            The run's handle; its details hold ``cluster``, ``request_id`` and ``transport``.

        Raises:
            ConfigError: If the job cannot run on this backend; nothing is staged.
            BackendUnavailableError: If SkyPilot is not installed or has no enabled cloud.
            ProviderError: If SkyPilot refused the launch.
        """
        wanted_extensions = extensions if extensions is not None else JobExtensions()
        wanted = self._check(spec, project, request, wanted_extensions)
        run = new_run(spec, project, settings=self.settings.table(), launch=launch)
        run_dir = stage_run(self.runs, run)
        write_worker_zipapp(run_dir, step=run.step)
        write_retries_file(
            run_dir,
            wanted_extensions.retries.worker_table([task.name for task in spec.tasks]),
            step=run.step,
        )
        cluster = cluster_name(run.run_id)
        task = self._task(
            spec,
            project=run.project,
            run_id=run.run_id,
            run_dir=run_dir,
            request=wanted,
            extensions=wanted_extensions,
        )
        (run_dir / TASK_NAME).write_text(json.dumps(task, indent=2), encoding="utf-8")
        run.step("task file written")
        records = RunRecords(run_dir)
        details = {"cluster": cluster, "request_id": "", "transport": self.transport.name}
        records.write_intent(
            cluster=cluster, task=TASK_NAME, handle=dump_record(run.handle(NAME, details))
        )
        run.step("launch intent written")
        run.started(details)
        try:
            request_id = self.bridge.launch(
                {
                    "task": task,
                    "cluster": cluster,
                    "down": True,
                    "idle_minutes": self.transport.idle_minutes,
                    "record": str(records.path(REQUEST)),
                    "cloud": self.settings.cloud,
                    "secrets": dict(secrets or {}),
                },
                log=run_dir / LAUNCH_LOG,
                what=f"launching {cluster}",
            )
        except UserError as error:
            records.record_failed(request_id=None, message=str(error))
            raise
        return run.handle(NAME, {**details, "request_id": request_id})

    def adopt(self, record: LaunchRecord) -> RunHandle | str:
        """The run a submitter that died left, from its launch record.

        A run whose launch intent was written may have been sent to SkyPilot: it is adopted,
        with the request id the bridge recorded, and reconciled like any run x-tui stopped
        following while it launched. One without an intent never reached SkyPilot: its
        half-staged directory is removed.

        Args:
            record: The launch record; only its run id locates the run's directory.

        Returns:
            The run's handle, or why there is no run.
        """
        run_dir = self.runs / record.run_id
        records = RunRecords(run_dir)
        if not records.path(INTENT).exists():
            shutil.rmtree(run_dir, ignore_errors=True)
            return "the submitting process died before the launch was sent (nothing ran)"
        request_id, _ = records.request()
        details = {
            "cluster": cluster_name(record.run_id),
            "request_id": request_id or "",
            "transport": self.transport.name,
        }
        return record.handle(details, settings=self.settings.table())

    # Following ---------------------------------------------------------------------------------

    def launch(self, handle: RunHandle) -> Launch:
        """What is known of the run's launch, reconciled with SkyPilot when it is not recorded.

        Raises:
            BackendUnavailableError: If SkyPilot is not installed here.
            ProviderError: If SkyPilot cannot say.
        """
        return reconcile_launch(
            self.bridge, handle, self._records(handle), cluster=self._cluster(handle)
        )

    def status(self, handle: RunHandle) -> RunState:
        """The job's state from its cluster's queue while it is up, else from its outputs.

        Args:
            handle: The run.

        Returns:
            ``cancelled`` when it was cancelled from here, ``pending`` while it is launched or
            set up, else what the queue says, or the outputs once the cluster is gone.

        Raises:
            BackendUnavailableError: If SkyPilot is not installed here.
            ProviderError: If SkyPilot reports a job status this backend does not know, or the
                queue cannot be read and the outputs cannot answer for the run.
        """
        state = self.statuses([handle])[handle.run_id]
        if isinstance(state, UserError):
            raise state
        return state

    def statuses(self, handles: Sequence[RunHandle]) -> dict[str, RunState | UserError]:
        """The state of many runs, with one request to SkyPilot for all their clusters.

        What the run's own files record answers first (cancelled from here, a final state, a
        failed launch); the others' launches and queues are read by one ``poll`` of the bridge.

        Args:
            handles: The runs.

        Returns:
            By run id: its state as :meth:`status` gives it, or the error that kept it unknown.
        """
        results: dict[str, RunState | UserError] = {}
        asking: list[tuple[RunHandle, RunRecords, Launch | None]] = []
        for handle in handles:
            records = self._records(handle)
            known = self._recorded(handle, records)
            if isinstance(known, RunState):
                results[handle.run_id] = known
            else:
                asking.append((handle, records, known))
        if not asking:
            return results
        runs: list[JsonValue] = [
            {
                "cluster": self._cluster(handle),
                "request_id": request_id_of(handle, records),
                "launched": known is not None,
            }
            for handle, records, known in asking
        ]
        what = (
            f"reading the state of {self._cluster(asking[0][0])}"
            if len(asking) == 1
            else f"reading the state of {len(asking)} clusters"
        )
        try:
            answer = self.bridge.call("poll", {"runs": runs}, what=what)
            if not isinstance(answer, Mapping):
                raise ProviderError(f"SkyPilot's bridge answered {answer!r} while {what}")
        except UserError as error:
            return {**results, **{handle.run_id: error for handle, _, _ in asking}}
        for handle, records, known in asking:
            try:
                results[handle.run_id] = self._polled(handle, records, known, answer)
            except UserError as error:
                results[handle.run_id] = error
        return results

    def _recorded(self, handle: RunHandle, records: RunRecords) -> RunState | Launch | None:
        """The state the run's files settle, else its launch as recorded (``None``: unknown)."""
        if records.cancelled():
            return RunState.CANCELLED
        final = records.final()
        if final is not None:
            return final
        known = records.known_launch()
        if known is None and records.request()[1]:
            known = records.record_failed(
                request_id=request_id_of(handle, records),
                message="x-tui stopped before it recorded the launch, which was undone",
            )
        if known is not None and known.state == "failed":
            records.record_final(RunState.FAILED, seen="launch")
            return RunState.FAILED
        return known

    def _polled(
        self,
        handle: RunHandle,
        records: RunRecords,
        known: Launch | None,
        answer: Mapping[str, JsonValue],
    ) -> RunState:
        cluster = self._cluster(handle)
        entry = answer.get(cluster)
        if not isinstance(entry, Mapping):
            raise ProviderError(f"SkyPilot's bridge said nothing of {cluster}")
        launch = known
        if launch is None:
            launch = launch_from_answer(
                entry.get("launch"), records, request_id=request_id_of(handle, records)
            )
        if launch.state == "launching":
            self._launching.add(handle.run_id)
            return RunState.PENDING
        self._launching.discard(handle.run_id)
        if launch.state == "failed":
            records.record_final(RunState.FAILED, seen="launch")
            return RunState.FAILED
        cluster_status = entry.get("cluster_status")
        if launch.state == "launched":
            error = entry.get("error")
            if cluster_status == "STOPPED":
                pass  # its queue cannot be read: only the outputs can tell
            elif isinstance(error, Mapping):
                raised = failure(error, what=f"reading the queue of {cluster}")
                if not isinstance(raised, ClusterGone):
                    raise raised
            else:
                state = state_in_jobs(entry.get("queue"), cluster=cluster, job_id=launch.job_id)
                if state is not None:
                    records.record_final(state, seen="queue")
                    return state
            taken = cluster_status in (None, "STOPPED")  # gone or stopped under its job
            if taken and self.settings.use_spot and not self._finished_in_outputs(handle):
                return self._preempted(handle, records, cluster, cluster_status)
        state = self.transport.state_from_outputs(handle)
        records.record_final(state, seen="outputs")
        return state

    def _finished_in_outputs(self, handle: RunHandle) -> bool:
        """Whether the run's saved outputs hold a finished manifest (its tasks all ended)."""
        try:
            data = self.transport.saved_output(handle, MANIFEST_NAME)
            return data is not None and parse_manifest(data, source=MANIFEST_NAME).finished
        except (UserError, ValueError, OSError, RecordError):
            return False

    def _preempted(
        self, handle: RunHandle, records: RunRecords, cluster: str, cluster_status: object
    ) -> RunState:
        """Record that the provider took the run's spot cluster away before its job ended.

        The reason (SkyPilot's word on the cluster) goes to the run's ending side file first,
        then the final state, so the state is never read without its reason.
        """
        seen = (
            f"SkyPilot reads it {cluster_status}"
            if isinstance(cluster_status, str)
            else "SkyPilot no longer lists it"
        )
        reason = (
            f"spot cluster {cluster} was taken away by its provider before the job ended ({seen})"
        )
        EndingBook(self.runs.parent.parent).record(
            handle.run_id,
            RunEnding(state=RunState.PREEMPTED.value, reason=reason, by="provider", at=time.time()),
        )
        records.record_final(RunState.PREEMPTED, seen="cluster")
        return RunState.PREEMPTED

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        """The job's lines from SkyPilot's log stream, the launch's provisioning output first.

        Args:
            handle: The run.
            follow: Keep reading until the job ends.

        Yields:
            Each line, without its line ending, each task's prefixed ``[<task>] ``.

        Raises:
            BackendUnavailableError: If SkyPilot is not installed here.
            ProviderError: If the log stream fails.
        """
        launch = self.launch(handle)
        if launch.state == "launching" and launch.request_id:
            yield from logs.lines_of(
                self.bridge.stream(
                    "launch_wait",
                    {"request_id": launch.request_id, "follow": follow},
                    what=f"reading the launch of {self._cluster(handle)}",
                    seconds=None if follow else self.bridge.call_seconds,
                )
            )
            if not follow:
                return
            launch = self.launch(handle)
        if launch.state == "failed":
            yield f"x-tui: run {handle.run_id} did not start: {launch.message}"
            return
        if launch.state == "launched":
            cluster = self._cluster(handle)
            try:
                yield from logs.lines_of(
                    self.bridge.stream(
                        "logs",
                        {"cluster": cluster, "job_id": launch.job_id, "follow": follow},
                        what=f"reading the log of {cluster}",
                        seconds=None if follow else self.bridge.call_seconds,
                    )
                )
                return
            except ClusterGone:
                pass
        yield from logs.lines_from_outputs(
            lambda relative: self.transport.saved_output(handle, relative),
            source=f"run {handle.run_id}'s outputs",
        )

    def peek(self, handle: RunHandle, path: str) -> bytes | None:
        """Read one file of the run's outputs while it runs (or after, where the transport can).

        Args:
            handle: The run.
            path: The file, relative to the run's outputs.

        Returns:
            Its bytes, or ``None`` when it is not there (yet). A run whose launch the last
            poll found still going, and whose files record no launch since, is not read at
            all: its job has not started, so nothing of its outputs exists yet, and the read
            would cost a request (or, where SkyPilot's environment lacks the bucket's SDK, a
            cloud command line) per file for nothing.

        Raises:
            ValueError: If ``path`` leads outside the run's outputs.
            ProviderError: If the outputs cannot be read.
        """
        if handle.run_id in self._launching:
            if self._records(handle).known_launch() is None:
                return None
            self._launching.discard(handle.run_id)  # its launch was recorded since (its log)
        return self.transport.peek(handle, path)

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        """Copy the run's outputs to ``destination / handle.run_id``.

        Args:
            handle: The run.
            destination: The directory to copy into.

        Returns:
            The copy.

        Raises:
            ProviderError: If the outputs cannot be fetched (with the copy transport: if they
                changed during the copy or the copy differs; the cluster is left up).
        """
        target = destination / handle.run_id
        self.transport.fetch(handle, target)
        return target

    # Stopping ----------------------------------------------------------------------------------

    def cancel(self, handle: RunHandle) -> None:
        """Cancel the launch request and the job, and tear the cluster down; leave an ended run.

        Every step is attempted, whatever the one before it did.

        Args:
            handle: The run.

        Raises:
            CancelFailed: If any step failed (a ``ProviderError`` and an ``ExceptionGroup``); it
                holds each failure. The run stays marked cancelled unless neither the job's
                cancel nor the teardown succeeded.
        """
        try:
            if self.status(handle).is_final:
                return
        except ProviderError:
            pass  # a run whose state cannot be read is cancelled all the same
        records = self._records(handle)
        records.mark_cancelled()
        attempted, failures = stop_run(
            self.bridge,
            handle,
            records,
            cluster=self._cluster(handle),
            cancel_request=True,
            cancel_job=True,
        )
        if "job" in failures and "teardown" in failures:
            records.unmark_cancelled()
        if failures:
            raise CancelFailed(
                f"cancelling run {handle.run_id}: {len(failures)} of {attempted} steps failed",
                list(failures.values()),
            )

    def teardown(self, handle: RunHandle, *, force: bool = False) -> None:
        """Remove the run's cluster, and with it anything left on it (fetch copies first).

        Unlike :meth:`cancel`, this removes the cluster of a run that already ended too; a run
        that has not ended is cancelled. With the copy transport, a cluster that holds the only
        copy of the run's outputs (never fetched) is left up unless ``force``.

        Args:
            handle: The run.
            force: Remove the cluster even where it holds the only copy of the outputs.

        Raises:
            OutputsOnlyOnCluster: If the outputs exist only on the cluster and not ``force``.
            CancelFailed: If the teardown (or the cancel) failed.
        """
        if not force and isinstance(self.transport, CopyTransport):
            self.transport.check_teardown(handle)
        try:
            ended = self.status(handle).is_final
        except ProviderError:
            ended = True
        if not ended:
            self.cancel(handle)
            return
        _, failures = stop_run(
            self.bridge,
            handle,
            self._records(handle),
            cluster=self._cluster(handle),
            cancel_request=False,
            cancel_job=False,
        )
        if failures:
            raise CancelFailed(f"tearing down run {handle.run_id}", list(failures.values()))
