"""``ModalBackend``: submit, follow, fetch and cancel runs on Modal.

A run is one detached app holding one function, spawned once: the worker zipapp on the project's
interpreter, the outputs Volume at ``/outputs`` and each of the job's mounts at its path. The
handle's details name the app (``app_id``) and the call (``call_id``).

The backend declares ``Capability.REQUEST`` (accelerator alternatives and exact kinds reach
Modal's ``gpu``), ``Capability.EXTENSIONS`` (dependencies as image layers, secrets as
``modal.Secret`` objects of the function, retries through the worker's ``--retries``) and
``Capability.ACCELERATORS`` (what Modal offers, from x-tui's dated price table).

Every call that reaches Modal first checks that credentials are configured (no RPC, no import of
``modal``), then runs with a deadline. Status is ``running`` while the call has no result, then
what the manifest on the outputs Volume says; a call that ended without a finished manifest is
``failed``, and a cancellation made here (a marker under the state directory) is ``cancelled``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

from x_tui.backends.modal import credentials, logs, outputs, sdk
from x_tui.backends.modal.container import container_function
from x_tui.backends.modal.request import (
    OUTPUTS_DIR,
    PROJECT_DIR,
    ModalRequest,
    app_name,
    build_request,
)
from x_tui.backends.modal.settings import ModalSettings
from x_tui.compute import deadline, prices
from x_tui.compute.backend import Capability, RunState, new_run
from x_tui.compute.estimate import AcceleratorOffer, check_offer
from x_tui.compute.extensions import JobExtensions, ResourceRequest
from x_tui.compute.launches import LaunchRecord, RunLaunch
from x_tui.compute.resources import request_from_resources
from x_tui.compute.secrets import SecretValues
from x_tui.compute.store import RunHandle, backend_state_dir, run_id_time
from x_tui.compute.worker.errors import (
    BackendUnavailableError,
    BadRecordError,
    ProviderError,
    UserError,
)
from x_tui.compute.worker.manifest import MANIFEST_NAME, parse_manifest
from x_tui.compute.worker.records import JsonValue, RecordError, dumps_compact
from x_tui.compute.worker.spec import JobSpec
from x_tui.compute.worker_bundle import WORKER_NAME, worker_digest, worker_zipapp_bytes

NAME: Final = "modal"
CANCELLED: Final = "cancelled"
"""The directory, under the backend's state directory, of the runs cancelled from here."""


class ModalBackend:
    """Runs jobs on Modal.

    The deadlines are attributes, so a caller (or a test) may shorten them on an instance.
    """

    name: str = NAME
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.PEEK,
            Capability.PLAN,
            Capability.REQUEST,
            Capability.EXTENSIONS,
            Capability.ACCELERATORS,
            Capability.LAUNCH,
        }
    )

    rpc_seconds: float = 30.0
    """How long one call to Modal (a status, a cancel, a chunk of a file) may take."""
    submit_seconds: float = 3600.0
    """How long building the image and spawning the run may take."""
    logs_seconds: float = 120.0
    """How long fetching a run's logs without following may take."""
    poll_seconds: float = 2.0
    """How often a followed log asks whether the run is final."""
    drain_seconds: float = 5.0
    """How long a followed log must be silent, once the run is final, before it is stopped."""

    def __init__(self, settings: Mapping[str, JsonValue] | None = None) -> None:
        """Read the backend's settings.

        Args:
            settings: The ``[tool.substrax.compute.backends.modal]`` table.

        Raises:
            BackendUnavailableError: If ``modal`` is not installed, saying how to install it.
            ConfigError: If ``outputs_volume`` is missing, or a setting is unknown or invalid.
        """
        if not sdk.modal_installed():
            raise BackendUnavailableError(sdk.INSTALL_HINT)
        self.settings = ModalSettings.read(settings)

    # Planning --------------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        """Where this backend keeps its local files: ``<state_dir>/compute/modal``."""
        return backend_state_dir(self.settings.state_dir, NAME)

    def accelerators(self) -> list[AcceleratorOffer]:
        """What Modal offers: each GPU kind, its counts per container and its hourly price.

        Returns:
            The offers of x-tui's dated table of Modal's prices (:data:`prices.MODAL`); no
            call reaches Modal.
        """
        return list(prices.MODAL.accelerators)

    def check_offer(self, request: ResourceRequest) -> None:
        """Refuse an accelerator kind, or a count per container, that Modal does not offer.

        Args:
            request: The run's resources.

        Raises:
            ResourceError: Naming the alternative refused and what Modal offers.
        """
        check_offer(request, prices.MODAL.accelerators, backend=NAME)

    def request(
        self,
        spec: JobSpec,
        *,
        project: Path,
        request: ResourceRequest | None = None,
        extensions: JobExtensions | None = None,
    ) -> ModalRequest:
        """What submitting ``spec`` would ask Modal for.

        Args:
            spec: The job.
            project: The project root.
            request: The job's resources as written (alternatives, exact kinds); the spec's when
                ``None``.
            extensions: The job's dependencies, secrets (by name) and retries.

        Raises:
            ResourceError: If Modal does not offer the accelerator (a ``ConfigError``).
            ConfigError: If Modal would refuse the job (timeout, mounts, accelerator).
        """
        self.check_offer(request if request is not None else request_from_resources(spec.resources))
        digest = worker_digest()
        return build_request(
            spec,
            project=project,
            settings=self.settings,
            worker_file=self.state_dir / "worker" / digest / WORKER_NAME,
            worker_digest=digest,
            request=request,
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
        """The image layers, function options, Volumes and secret names ``submit`` would use.

        No Modal call is made and no secret's value is read.

        Args:
            spec: The job.
            project: The project root.
            request: The job's resources as written; the spec's when ``None``.
            extensions: The job's dependencies, secrets (by name) and retries.

        Returns:
            The request as JSON.

        Raises:
            ResourceError: If Modal does not offer the accelerator (a ``ConfigError``).
            ConfigError: If Modal would refuse the job (timeout, mounts, accelerator).
        """
        return self.request(spec, project=project, request=request, extensions=extensions).to_json()

    # Submitting ------------------------------------------------------------------------------

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
        """Build the image and spawn the worker in a detached app; return at once.

        Args:
            spec: The job.
            project: The project root.
            request: The job's resources as written; the spec's when ``None``.
            extensions: The job's dependencies (image layers), secrets (by name) and retries
                (the worker's ``--retries``).
            secrets: The captured values, by their name in the task: given to Modal in
                ``Secret.from_dict`` only, never written to a file, a handle or an argument.
            launch: The shared submit path's launch record: the app and call ids are written
                in it the moment Modal names them.

        Returns:
            The run's handle; its details name the app and the call.

        Raises:
            ResourceError: If Modal does not offer the accelerator; nothing is built.
            ConfigError: If Modal would refuse the job; nothing is built.
            BackendUnavailableError: If Modal has no credentials here, or refuses them.
            ProviderError: If Modal did not answer in time or failed (the image did not build,
                the image builder is too old for ``Image.uv_sync``, a named Secret is missing...).
        """
        planned = self.request(spec, project=project, request=request, extensions=extensions)
        run = new_run(spec, project, settings=self.settings.table(), launch=launch)
        credentials.require_credentials()
        modal = sdk.import_modal()
        _ensure_worker_file(planned.worker_file)
        outputs_volume, *mounts = [
            sdk.volume(modal, mount, planned.environment) for mount in planned.volumes
        ]
        self._ask(outputs_volume.hydrate, "creating the outputs Volume")
        app = modal.App(planned.app_name)
        function = app.function(
            image=sdk.build_image(modal, planned),
            volumes={
                mount.path: found
                for mount, found in zip(planned.volumes, [outputs_volume, *mounts], strict=True)
            },
            secrets=sdk.secrets(
                modal, secrets or {}, planned.platform_secrets, planned.environment
            ),
            **planned.function.keywords(),
        )(container_function())
        arguments: dict[str, str | None] = {
            "spec_json": dumps_compact(spec),
            "run_id": run.run_id,
            "python": planned.python,
            "worker": planned.worker_path,
            "project": PROJECT_DIR,
            "outputs": OUTPUTS_DIR,
            "volume": self.settings.outputs_volume,
            "environment": planned.environment,
        }
        if planned.retries:
            arguments["retries_json"] = json.dumps(dict(planned.retries))
        if planned.watch:
            arguments["watch_json"] = json.dumps(list(planned.watch))
        lock = threading.Lock()
        spawned: dict[str, tuple[str, str]] = {}
        abandoned = threading.Event()

        def spawn() -> tuple[str, str]:
            with app.run(detach=True, environment_name=planned.environment):
                call = function.spawn(**arguments)
            ids = (str(app.app_id or ""), str(call.object_id))
            with lock:
                if abandoned.is_set():  # the caller gave up: leave nothing running unseen
                    call.cancel(terminate_containers=True)
                    app.stop()
                else:
                    spawned["ids"] = ids
                    # Recorded at once: a submitter killed from here on leaves a run it can find.
                    with contextlib.suppress(UserError):
                        run.started({"app_id": ids[0], "call_id": ids[1]})
            return ids

        try:
            app_id, call_id = self._ask(
                spawn, "building the image and submitting the run", seconds=self.submit_seconds
            )
        except ProviderError:
            with lock:
                abandoned.set()
                late = spawned.get("ids")  # spawned just as the deadline passed: keep it
            if late is None:
                raise
            app_id, call_id = late
        return run.handle(NAME, {"app_id": app_id, "call_id": call_id})

    def adopt(self, record: LaunchRecord) -> RunHandle | str:
        """The run a submitter that died left, from its launch record.

        Args:
            record: The launch record.

        Returns:
            The run's handle when the record names its app and call; otherwise why there is
            none (Modal may still have started the app: the reason names it).
        """
        app_id = record.details.get("app_id", "")
        call_id = record.details.get("call_id", "")
        if app_id and call_id:
            return record.handle(
                {"app_id": app_id, "call_id": call_id}, settings=self.settings.table()
            )
        return (
            "the submitting process died before Modal named the run's app; if Modal started"
            f" it, it is an app named {app_name(Path(record.project), record.job)!r}"
            " (modal app list; modal app stop)"
        )

    def _ask(self, call: Any, what: str, *, seconds: float | None = None) -> Any:
        try:
            wait = self.rpc_seconds if seconds is None else seconds
            return deadline.call_with_deadline(
                call,
                seconds=wait,
                late=lambda: sdk.unanswered(wait, what),
                name=f"x-tui modal: {what}",
            )
        except Exception as error:
            if sdk.is_modal_error(error):
                raise sdk.provider_error(error, what=what) from None
            raise

    # Following -------------------------------------------------------------------------------

    def _marker(self, run_id: str) -> Path:
        return self.state_dir / CANCELLED / run_id

    def _volume(self) -> Any:
        modal = sdk.import_modal()
        return modal.Volume.from_name(
            self.settings.outputs_volume, environment_name=self.settings.environment
        )

    def _call_ended(self, handle: RunHandle) -> bool:
        modal = sdk.import_modal()
        call = modal.FunctionCall.from_id(_detail(handle, "call_id"))
        what = "reading the run's status"

        def poll() -> bool:
            try:
                call.get(timeout=0)
            except TimeoutError:  # the builtin one: the call has no result yet
                return False
            except Exception as error:
                exception = importlib.import_module("modal.exception")
                if isinstance(error, (exception.AuthError, exception.ConnectionError)):
                    raise
                return True  # it failed, expired, timed out or was cancelled: it ended
            return True

        return bool(self._ask(poll, what))

    def status(self, handle: RunHandle) -> RunState:
        """Where the run is: running while its call has no result, then from its manifest.

        Args:
            handle: The run.

        Returns:
            ``cancelled`` when it was cancelled from here; ``running`` while the call has no
            result; else ``succeeded`` or ``failed`` as its finished manifest says, and
            ``failed`` when the call ended without one.

        Raises:
            BackendUnavailableError: If Modal has no credentials here, or refuses them.
            ProviderError: If Modal did not answer in time.
            BadRecordError: If the handle names no call, or the manifest on the Volume cannot
                be read.
        """
        if self._marker(handle.run_id).exists():
            return RunState.CANCELLED
        credentials.require_credentials()
        if not self._call_ended(handle):
            return RunState.RUNNING
        text = self._read(handle, MANIFEST_NAME)
        if text is None:
            return RunState.FAILED
        source = f"Modal Volume {self.settings.outputs_volume}: {handle.run_id}/{MANIFEST_NAME}"
        try:
            manifest = parse_manifest(text, source=source)
        except RecordError as error:
            raise BadRecordError(str(error)) from None
        if not manifest.finished:
            return RunState.FAILED
        return RunState.SUCCEEDED if manifest.succeeded else RunState.FAILED

    def _read(self, handle: RunHandle, relative: str) -> bytes | None:
        volume = self._volume()
        path = f"{handle.run_id}/{relative}"
        try:
            return outputs.read_file(volume, path, seconds=self.rpc_seconds)
        except Exception as error:
            if sdk.is_modal_error(error):
                raise sdk.provider_error(error, what=f"reading {path}") from None
            raise

    def peek(self, handle: RunHandle, path: str) -> bytes | None:
        """Read one file of the run's outputs on the Volume, while it runs or after.

        Args:
            handle: The run.
            path: The file, relative to the run's outputs (``manifest.json``, ``devices.log``,
                ``<task>/stdout.log``).

        Returns:
            Its bytes as last committed, or ``None`` when it is not there (yet).

        Raises:
            ValueError: If ``path`` could lead outside the run's outputs.
            BackendUnavailableError: If Modal has no credentials here, or refuses them.
            ProviderError: If Modal did not answer in time.
        """
        relative = outputs.relative_path(path)
        credentials.require_credentials()
        return self._read(handle, relative.as_posix())

    def logs(self, handle: RunHandle, *, follow: bool) -> Iterator[str]:
        """The run's log lines from Modal's log stream, each task's prefixed with its name.

        Args:
            handle: The run.
            follow: Keep reading until the run is final.

        Yields:
            Each line, without its line ending.

        Raises:
            BackendUnavailableError: If Modal has no credentials here, or is not installed.
            ProviderError: If the stream failed or, without follow, did not end in time.
        """
        credentials.require_credentials()
        app_id = _detail(handle, "app_id")
        since = submitted_since(handle)
        environment = self.settings.environment
        every_line = logs.logs_command(app_id, environment=environment, follow=False, since=since)
        if not follow:
            yield from logs.fetch_lines(every_line, seconds=self.logs_seconds)
            return
        yield from logs.follow_lines(
            logs.logs_command(app_id, environment=environment, follow=True, since=since),
            is_final=lambda: self.status(handle).is_final,
            poll_seconds=self.poll_seconds,
            drain_seconds=self.drain_seconds,
            fetch_all=lambda: logs.fetch_lines(every_line, seconds=self.logs_seconds),
        )

    def fetch(self, handle: RunHandle, destination: Path) -> Path:
        """Copy ``<run_id>/`` of the outputs Volume to ``destination / handle.run_id``.

        Args:
            handle: The run.
            destination: The directory to copy into.

        Returns:
            The copy.

        Raises:
            BackendUnavailableError: If Modal has no credentials here, or refuses them.
            ProviderError: If the Volume holds no files of the run, an entry leads outside
                ``<run_id>/`` (nothing is fetched), or Modal did not answer in time.
        """
        credentials.require_credentials()
        volume = self._volume()
        try:
            return outputs.download_run(
                volume,
                volume=self.settings.outputs_volume,
                run_id=handle.run_id,
                destination=destination,
                seconds=self.rpc_seconds,
            )
        except Exception as error:
            if sdk.is_modal_error(error):
                raise sdk.provider_error(error, what=f"fetching {handle.run_id}") from None
            raise

    def cancel(self, handle: RunHandle) -> None:
        """Cancel the call, stop its containers and the app; a run that ended is left as it is.

        Cancelling twice is harmless: a run cancelled from here is final, and left alone.

        Args:
            handle: The run.

        Raises:
            BackendUnavailableError: If Modal has no credentials here, or refuses them.
            ProviderError: If Modal did not answer in time or refused; a call that could not be
                cancelled is not marked cancelled. A stopped call whose app could not be stopped
                stays cancelled, and the message says how to stop the app.
        """
        if self.status(handle).is_final:
            return
        modal = sdk.import_modal()
        call = modal.FunctionCall.from_id(_detail(handle, "call_id"))
        app_id = _detail(handle, "app_id")
        marker = self._marker(handle.run_id)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()  # first, so a status read meanwhile never reports the cancel as a failure
        try:
            self._ask(lambda: call.cancel(terminate_containers=True), "cancelling the run")
        except BaseException:
            marker.unlink(missing_ok=True)
            raise

        def stop_app() -> None:
            try:
                app = modal.App.lookup(app_id, environment_name=self.settings.environment)
            except modal.exception.NotFoundError:
                return  # gone already: nothing left to stop
            app.stop()

        try:
            self._ask(stop_app, f"stopping the app {app_id}")
        except ProviderError as error:
            raise ProviderError(
                f"run {handle.run_id} is cancelled, but its app was not stopped ({error}); stop it"
                f" with `modal app stop {app_id}`"
            ) from None


def _detail(handle: RunHandle, key: str) -> str:
    """One of the provider references a modal handle's details hold (``app_id``, ``call_id``).

    Raises:
        BadRecordError: If the handle does not hold it.
    """
    value = handle.details.get(key)
    if not value:
        raise BadRecordError(f"run {handle.run_id}: its handle's details have no Modal {key}")
    return value


def _ensure_worker_file(path: Path) -> None:
    """Write the worker zipapp at ``path`` unless it is there whole; never a torn file.

    Modal hashes the file to key the image's last layer, so two submits at once must never let
    it see a half-written one: the bytes go to a unique partial file, renamed into place.
    """
    data = worker_zipapp_bytes()
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_bytes(data)
    partial.chmod(0o755)
    os.replace(partial, path)


def submitted_since(handle: RunHandle) -> dt.datetime:
    """When the run's log range starts: its submission, or its id's time if that is earlier."""
    return min(handle.submitted_at, run_id_time(handle.run_id) or handle.submitted_at)
