"""The fake ``sky.client.sdk``: SkyPilot 0.14.1's SDK functions, with their signatures.

Every call returns a request id at once; ``get`` waits for the request and returns its value or
raises its error, as SkyPilot's client does. ``launch`` hands its request to a detached runner
(``sky._fake.server``); the other requests are answered before the call returns.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sky import exceptions
from sky._fake import state
from sky.jobs_status import ClusterStatus, JobStatus

_EXIT = {"SUCCEEDED": 0, "FAILED": 100, "FAILED_SETUP": 100, "CANCELLED": 103}


class RequestId(str):
    """A request's id: a ``str`` holding a UUID, as SkyPilot's ``RequestId[T]``."""


@dataclass
class RequestPayload:
    request_id: str
    name: str
    status: str
    cluster_name: str | None = None
    created_at: float = 0.0
    finished_at: float | None = None
    entrypoint: str = ""
    request_body: str = ""
    user_id: str = "fake"
    return_value: str = ""
    error: str = ""
    pid: int | None = None
    schedule_type: str = "LONG"
    user_name: str = "fake"
    status_msg: str | None = None
    should_retry: bool = False
    file_mounts_blob_id: str | None = None


@dataclass
class ClusterJobRecord:
    job_id: int
    job_name: str | None
    username: str
    user_hash: str
    submitted_at: float
    resources: str
    status: JobStatus
    log_path: str
    start_at: float | None = None
    end_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)


class FakeHandle:
    """Stands for SkyPilot's ``CloudVmRayResourceHandle``."""

    def get_hourly_price(self) -> float:
        return 0.0


def _answered(
    name: str, cluster: str | None, *, result: Any = None, error: tuple[str, str] | None = None
) -> RequestId:
    request_id = state.new_request(name, cluster)
    state.finish(request_id, result=result, error=error)
    return RequestId(request_id)


def _missing(cluster: str) -> tuple[str, str]:
    return ("ClusterDoesNotExist", f"\x1b[33mCluster {cluster!r} does not exist.\x1b[0m")


# Requests ---------------------------------------------------------------------------------------


def launch(  # noqa: PLR0917 (SkyPilot 0.14.1's signature)
    task: Any,
    cluster_name: str | None = None,
    retry_until_up: bool = False,
    idle_minutes_to_autostop: int | None = None,
    wait_for: Any = None,
    dryrun: bool = False,
    down: bool = False,
    backend: Any = None,
    optimize_target: Any = None,
    no_setup: bool = False,
    clone_disk_from: str | None = None,
    fast: bool = False,
    resize: bool = False,
    _need_confirmation: bool = False,
    _is_launched_by_jobs_controller: bool = False,
    _is_launched_by_sky_serve_controller: bool = False,
    _disable_controller_check: bool = False,
    _file_mounts_blob_id: str | None = None,
    _extra_launch_context: dict[str, Any] | None = None,
    _include_credentials: bool = False,
) -> RequestId:
    """Queue the launch; a detached runner provisions the cluster and runs the job."""
    name = cluster_name or f"sky-{os.getpid()}"
    if not state.enabled_clouds():
        return _answered(
            "launch",
            name,
            error=("NoCloudAccessError", "Cloud access is not set up. Run: sky check"),
        )
    request_id = state.new_request("launch", name)
    state.write_json(
        state.root() / "tasks" / f"{request_id}.json",
        {"task": task.config, "options": {"down": down, "idle_minutes": idle_minutes_to_autostop}},
    )
    with state.request_log(request_id).open("ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "sky._fake.server", "launch", request_id],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    while state.switch("hold-request-id"):
        time.sleep(0.05)
    print(f"Running on cluster: {name}")  # SkyPilot prints on stdout, as the real one does
    return RequestId(request_id)


def get(request_id: str) -> Any:
    """Wait for the request to finish; its value, or its error raised."""
    print('<sky-payload>{"type": "status"}</sky-payload>')  # a rich-status line, on stdout
    while True:
        request = state.load_request(request_id)
        if request is None:
            raise RuntimeError(f"Request {request_id} not found")
        if request["status"] in state.FINISHED:
            break
        time.sleep(0.05)
    if request["status"] == "CANCELLED":
        raise exceptions.RequestCancelled(f"Request {request_id} is cancelled by the user.")
    if request["status"] == "FAILED":
        error = request["error"] or {}
        kind = getattr(exceptions, str(error.get("type")), RuntimeError)
        raise kind(error.get("message", ""))
    return _decode(request["name"], request["result"])


def _decode(name: str, result: Any) -> Any:
    if name == "launch":
        return (result["job_id"], FakeHandle())
    if name == "queue":
        return [ClusterJobRecord(**{**job, "status": JobStatus(job["status"])}) for job in result]
    return result


def stream_and_get(  # noqa: PLR0917 (SkyPilot 0.14.1's signature)
    request_id: str | None = None,
    log_path: str | None = None,
    tail: int | None = None,
    follow: bool = True,
    output_stream: io.TextIOBase | None = None,
    relay_rich_status: bool = False,
) -> Any:
    """Stream the request's log; with ``follow``, until it finishes, then its value."""
    assert request_id is not None
    out = output_stream if output_stream is not None else sys.stdout
    with state.request_log(request_id).open(encoding="utf-8", errors="replace") as log:
        while True:
            line = log.readline()
            if line:
                out.write(line)
                continue
            request = state.load_request(request_id) or {}
            if not follow or request.get("status") in state.FINISHED:
                rest = log.read()
                if rest:
                    out.write(rest)
                break
            time.sleep(0.05)
    return get(request_id) if follow else None


def api_status(
    request_ids: list[str] | None = None,
    all_status: bool = False,
    limit: int | None = None,
    fields: list[str] | None = None,
    cluster_name: str | None = None,
) -> list[RequestPayload]:
    """The requests (by id prefix, or by cluster; finished ones only with ``all_status``)."""
    found = []
    for request in state.all_requests():
        if request_ids is not None:
            if not any(request["request_id"].startswith(str(rid)) for rid in request_ids):
                continue
        else:
            if cluster_name is not None and request.get("cluster_name") != cluster_name:
                continue
            if not all_status and request["status"] in state.FINISHED:
                continue
        found.append(
            RequestPayload(
                request_id=request["request_id"],
                name=request["name"],
                status=request["status"],
                cluster_name=request.get("cluster_name"),
                created_at=request["created_at"],
                finished_at=request.get("finished_at"),
                pid=request.get("pid"),
            )
        )
    return found[:limit] if limit else found


def api_cancel(request_ids: Any = None, all_users: bool = False, silent: bool = False) -> RequestId:
    """Cancel unfinished requests; the value is the ids cancelled."""
    ids = [request_ids] if isinstance(request_ids, str) else list(request_ids or [])
    cancelled = []
    for request in api_status(ids):
        if request.status in state.FINISHED:
            continue
        state.update_request(request.request_id, status="CANCELLED")
        if request.pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(request.pid, signal.SIGTERM)
        cancelled.append(request.request_id)
    return _answered("api_cancel", None, result=cancelled)


def queue(cluster_name: str, skip_finished: bool = False, all_users: bool = False) -> RequestId:
    """The cluster's jobs."""
    if state.load_cluster(cluster_name) is None:
        return _answered("queue", cluster_name, error=_missing(cluster_name))
    jobs = []
    for path in sorted((state.cluster_dir(cluster_name) / "jobs").glob("*.json")):
        job = state.read_json(path)
        if not isinstance(job, dict):
            # Gone while read: the cluster is being torn down (autodown), as SkyPilot says.
            if state.load_cluster(cluster_name) is None:
                return _answered("queue", cluster_name, error=_missing(cluster_name))
            continue
        if skip_finished and JobStatus(job["status"]).is_terminal():
            continue
        jobs.append(
            {
                "job_id": job["job_id"],
                "job_name": job.get("job_name"),
                "username": "fake",
                "user_hash": "fake0000",
                "submitted_at": job.get("submitted_at", 0.0),
                "resources": "1x[CPU:1]",
                "status": job["status"],
                "log_path": "~/sky_logs/run",
                "start_at": job.get("start_at"),
                "end_at": job.get("end_at"),
            }
        )
    return _answered("queue", cluster_name, result=jobs)


def job_status(cluster_name: str, job_ids: list[int] | None = None) -> RequestId:
    if state.load_cluster(cluster_name) is None:
        return _answered("job_status", cluster_name, error=_missing(cluster_name))
    found = {}
    for job_id in job_ids or [1]:
        job = state.load_job(cluster_name, job_id)
        found[job_id] = job["status"] if job else None
    return _answered("job_status", cluster_name, result=found)


def tail_logs(
    cluster_name: str,
    job_id: int | None,
    follow: bool,
    tail: int = 0,
    output_stream: io.TextIOBase | None = None,
    *,
    preload_content: bool = True,
) -> int | Iterator[str | None]:
    """Write the job's ``run.log`` to ``output_stream``; with ``follow``, until the job ends."""
    if output_stream is not None and not preload_content:
        raise ValueError("output_stream cannot be specified when preload_content is False")
    if state.load_cluster(cluster_name) is None:
        raise exceptions.ClusterDoesNotExist(_missing(cluster_name)[1])
    chunks = _log_chunks(cluster_name, job_id or 1, follow)
    if not preload_content:
        return chunks
    out = output_stream if output_stream is not None else sys.stdout
    for chunk in chunks:
        if chunk is not None:
            out.write(chunk)
    job = state.load_job(cluster_name, job_id or 1) or {}
    return _EXIT.get(str(job.get("status")), 101)


def _log_chunks(cluster: str, job_id: int, follow: bool) -> Iterator[str | None]:
    path = state.cluster_dir(cluster) / "run.log"
    yield "Job started. Streaming logs... (Ctrl-C to exit log streaming; job will not be killed)\n"
    while not path.exists() and follow and state.load_cluster(cluster) is not None:
        time.sleep(0.05)
    try:
        log = path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        yield None
        return
    status = None
    with log:
        while True:
            line = log.readline()
            if line:
                yield line
                continue
            job = state.load_job(cluster, job_id)
            status = job.get("status") if job else None
            if not follow or job is None or JobStatus(status).is_terminal():
                rest = log.read()
                if rest:
                    yield rest
                break
            time.sleep(0.05)
    if status is not None and JobStatus(status).is_terminal():
        yield f"\x1b[32m✓ Job finished (status: {status}).\x1b[0m\n"
    yield None


def cancel(
    cluster_name: str,
    all: bool = False,
    all_users: bool = False,
    job_ids: list[int] | None = None,
    _try_cancel_if_cluster_is_init: bool = False,
) -> RequestId:
    """Cancel the cluster's jobs."""
    if state.load_cluster(cluster_name) is None:
        return _answered("cancel", cluster_name, error=_missing(cluster_name))
    if state.switch("fail-cancel"):
        return _answered("cancel", cluster_name, error=("CommandError", state.said("fail-cancel")))
    for job_id in job_ids or [1]:
        job = state.load_job(cluster_name, job_id)
        if job is None or JobStatus(job["status"]).is_terminal():
            continue
        (state.cluster_dir(cluster_name) / "jobs" / f"{job_id}.cancelled").touch()
        if job.get("pid"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job["pid"], signal.SIGTERM)
    return _answered("cancel", cluster_name)


def down(
    cluster_name: str,
    purge: bool = False,
    graceful: bool = False,
    graceful_timeout: int | None = None,
) -> RequestId:
    """Tear the cluster down."""
    if state.load_cluster(cluster_name) is None:
        return _answered("down", cluster_name, error=_missing(cluster_name))
    if state.switch("fail-down"):
        return _answered("down", cluster_name, error=("CommandError", state.said("fail-down")))
    from sky._fake import server  # not at import: the runner runs that module as __main__

    server.remove_cluster(cluster_name)
    return _answered("down", cluster_name)


def status(
    cluster_names: list[str] | None = None,
    refresh: Any = None,
    all_users: bool = False,
    *,
    _include_credentials: bool = False,
    _summary_response: bool = False,
) -> RequestId:
    """The clusters (those named, or all)."""
    found = []
    for path in sorted((state.root() / "clusters").glob("*/cluster.json")):
        cluster = state.read_json(path)
        if not isinstance(cluster, dict):
            continue  # torn down while read
        if cluster_names and cluster.get("name") not in cluster_names:
            continue
        found.append(
            {
                "name": cluster.get("name"),
                "status": ClusterStatus(cluster.get("status", "INIT")).value,
            }
        )
    return _answered("status", None, result=found)


def enabled_clouds(workspace: str | None = None, expand: bool = False) -> RequestId:
    return _answered("enabled_clouds", None, result=state.enabled_clouds())


def check(
    infra_list: tuple[str, ...] | None, verbose: bool, workspace: str | None = None
) -> RequestId:
    clouds = {cloud: ["compute", "storage"] for cloud in state.enabled_clouds()}
    return _answered("check", None, result={"default": clouds})
