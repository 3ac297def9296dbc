"""The SkyPilot side of x-tui's bridge: runs in SkyPilot's own interpreter, never in x-tui's.

x-tui starts ``<sky python> -I sky_sdk.py --serve`` once (see :func:`serve`) and writes one JSON
request line per question on its standard input (``{"id": ID, "op": NAME, "args": {...}}``); a
launch alone starts ``<sky python> -I sky_sdk.py`` for itself, with one request and no ``id``.
JSON lines come back on standard output, each an event (tagged with the request's ``id`` when it
has one):

- ``{"event": "request", "request_id": ID}``: a launch reached SkyPilot's API server (launch
  only; x-tui answers ``{"ack": true}`` on standard input, see :func:`op_launch`);
- ``{"event": "chunk", "text": TEXT}``: output of a log stream, as SkyPilot wrote it;
- ``{"event": "done", "value": VALUE}``: the answer; the last line;
- ``{"event": "error", "kind": KIND, "type": NAME, "message": TEXT}``: the failure; the last line.
  ``kind`` is ``missing_cluster``, ``no_cloud``, ``cancelled``, ``incompatible``,
  ``unsupported`` (this environment lacks what the operation needs) or ``failed``.

Everything SkyPilot itself prints (spinners, "Starting a local server") goes to standard error:
standard output is a duplicate of the original descriptor, taken before ``sky`` is imported, and
descriptor 1 then points at standard error.

This file imports only the standard library and ``sky`` (SkyPilot's public SDK, 0.14), and runs
under any Python SkyPilot runs under (3.9 and later), so nothing of x-tui is imported here.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import glob
import importlib
import io
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_MESSAGE_CHARS = 2000

SDK_NAMES = (
    "launch", "get", "stream_and_get", "api_status", "api_cancel", "queue", "tail_logs",
    "cancel", "down", "status", "JobStatus", "Task",
)  # fmt: skip
"""The names of ``sky`` the bridge calls; a SkyPilot without one of them is refused."""

_OUT: Any = None
_OUT_LOCK = threading.Lock()
_CURRENT = threading.local()
"""The id of the request this thread answers (``None`` in one-shot mode)."""

PARENT_WATCH_SECONDS = 1.0
"""How often a serving bridge checks that x-tui, its parent, is still there."""


class Cancelled(Exception):
    """x-tui stopped reading this request's answer (a log stream it closed)."""


_CANCELLED: set[Any] = set()


def _emit(event: dict[str, Any]) -> None:
    request_id = getattr(_CURRENT, "request_id", None)
    if request_id is not None:
        event = {**event, "id": request_id}
    line = json.dumps(event) + "\n"
    with _OUT_LOCK:
        _OUT.write(line)
        _OUT.flush()


def _clean(text: str) -> str:
    text = _ANSI.sub("", text)
    text = " ".join(text.split())
    return text[:_MESSAGE_CHARS]


class BridgeFailure(Exception):
    """A failure this script classified itself."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Chunks(io.TextIOBase):
    """A text stream that sends each write to x-tui as a ``chunk`` event."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if getattr(_CURRENT, "request_id", None) in _CANCELLED:
            raise Cancelled("x-tui stopped reading")
        if text:
            _emit({"event": "chunk", "text": text})
        return len(text)

    def flush(self) -> None:
        _OUT.flush()


def _sky() -> Any:
    return importlib.import_module("sky")


def _exceptions() -> Any:
    return importlib.import_module("sky.exceptions")


def _sdk() -> Any:
    return importlib.import_module("sky.client.sdk")


def _kind_of(error: BaseException) -> str:
    exceptions = _exceptions()
    if isinstance(error, getattr(exceptions, "ClusterDoesNotExist", ())):
        return "missing_cluster"
    if isinstance(error, getattr(exceptions, "NoCloudAccessError", ())):
        return "no_cloud"
    if isinstance(error, getattr(exceptions, "RequestCancelled", ())):
        return "cancelled"
    return "failed"


def _write_atomic(path: str, data: dict[str, Any]) -> None:
    directory = os.path.dirname(path)
    handle, partial = tempfile.mkstemp(prefix=".request.", dir=directory)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(data, indent=2))
    os.replace(partial, path)


def _job_id(value: Any) -> int | None:
    """The job id of a launch's answer, ``(job_id, handle)``."""
    if isinstance(value, (tuple, list)) and value:
        value = value[0]
    return int(value) if value is not None else None


# Operations -------------------------------------------------------------------------------------


def op_probe(args: dict[str, Any]) -> dict[str, Any]:
    """SkyPilot's version, and the SDK names the bridge calls that it lacks."""
    sky = _sky()
    missing = [name for name in SDK_NAMES if not hasattr(sky, name)]
    return {"version": str(getattr(sky, "__version__", "unknown")), "missing": missing}


def _check_clouds(cloud: str | None) -> None:
    """Refuse a launch SkyPilot has no enabled cloud for, before it is sent."""
    sky, sdk = _sky(), _sdk()
    enabled = [str(name).lower() for name in sky.get(sdk.enabled_clouds())]
    if enabled and (cloud is None or cloud in enabled):
        return
    checked = sky.get(sdk.check(infra_list=(cloud,) if cloud else None, verbose=False))
    found = set()
    for clouds in (checked or {}).values():
        for name, capabilities in (clouds or {}).items():
            if capabilities:
                found.add(str(name).lower())
    if found and (cloud is None or cloud in found):
        return
    if cloud is None:
        raise BridgeFailure("no_cloud", "SkyPilot has no cloud enabled; run `sky check` to see why")
    also = f" (enabled: {', '.join(sorted(found))})" if found else ""
    raise BridgeFailure(
        "no_cloud", f"SkyPilot has no access to {cloud}{also}; run `sky check {cloud}` to see why"
    )


def op_launch(args: dict[str, Any]) -> dict[str, Any]:
    """Launch the task on its own cluster and return as soon as SkyPilot names the request.

    The request id is written to ``args["record"]`` before x-tui hears of it. x-tui then answers
    ``{"ack": true}``; if it does not (it was killed, or it gave up), nobody holds the run, so the
    request is cancelled and the cluster torn down, and the record says so.
    """
    sky = _sky()
    _check_clouds(args.get("cloud"))
    config = json.loads(json.dumps(args["task"]))
    if args.get("secrets"):  # the values never were in a file; SkyPilot redacts them in its logs
        config["secrets"] = dict(args["secrets"])
    task = sky.Task.from_yaml_config(config)
    request_id = sky.launch(
        task,
        cluster_name=args["cluster"],
        down=bool(args["down"]),
        idle_minutes_to_autostop=args.get("idle_minutes"),
        retry_until_up=False,
    )
    _write_atomic(args["record"], {"request_id": str(request_id), "abandoned": False})
    try:
        _emit({"event": "request", "request_id": str(request_id)})
        answer = sys.stdin.readline()
    except (BrokenPipeError, OSError):
        answer = ""
    if '"ack"' not in answer:
        _abandon(args, str(request_id))
        raise BridgeFailure("failed", "x-tui left before it recorded the launch; it was undone")
    return {"request_id": str(request_id)}


def _abandon(args: dict[str, Any], request_id: str) -> None:
    sky = _sky()
    _write_atomic(args["record"], {"request_id": request_id, "abandoned": True})
    # Each step is attempted; the cluster may not exist yet.
    with contextlib.suppress(Exception):
        sky.get(sky.api_cancel([request_id], silent=True))
    with contextlib.suppress(Exception):
        sky.get(sky.down(args["cluster"]))


def _request(request_id: str | None, cluster: str) -> Any:
    sky = _sky()
    if request_id is not None:
        found = sky.api_status([request_id])
    else:
        found = [
            payload
            for payload in sky.api_status(cluster_name=cluster, all_status=True)
            if str(getattr(payload, "name", "")) == "launch"
            and str(getattr(payload, "cluster_name", "") or "") == cluster
        ]
    found = sorted(found, key=lambda payload: float(getattr(payload, "created_at", 0) or 0))
    return found[-1] if found else None


_LOCAL_STATE: list[bool] = []
"""Whether SkyPilot's cluster table can be read here (decided once per process)."""


def _local_state() -> Any:
    """SkyPilot's own cluster table, when its API server is this machine's; else ``None``.

    A local API server (what ``sky`` starts by itself) keeps its clusters in a database under
    this user's ``~/.sky``, which SkyPilot's own ``sky.global_user_state`` reads: the ``status``
    request's executor does just that, after its own process, log file and request-record
    round trips (a fifth of a second of CPU each). A remote API server's table is not here.
    """
    try:
        if not _LOCAL_STATE:
            server_common = importlib.import_module("sky.server.common")
            _LOCAL_STATE.append(bool(server_common.is_api_server_local()))
        if _LOCAL_STATE[0]:
            return importlib.import_module("sky.global_user_state")
    except Exception:  # a SkyPilot without them, or a server setting it cannot read: ask it
        _LOCAL_STATE[:] = [False]
    return None


def _existing_clusters(names: list[str]) -> dict[str, str]:
    """Which of the clusters ``names`` SkyPilot has, with the name of each one's ``ClusterStatus``
    (starting its local API server if needed).

    Read from SkyPilot's own cluster table where it is this machine's (:func:`_local_state`),
    once the API server answers (it made and migrated the table); else one ``status`` request.
    """
    sky = _sky()
    user_state = _local_state()
    if user_state is not None:
        try:
            server_common = importlib.import_module("sky.server.common")
            server_common.check_server_healthy_or_start_fn()
            return _cluster_statuses(user_state.get_clusters(cluster_names=names))
        except Exception:  # its table could not be read here after all: ask the API server
            _LOCAL_STATE[:] = [False]
    return _cluster_statuses(sky.get(sky.status(cluster_names=names)))


def _cluster_statuses(records: Any) -> dict[str, str]:
    """Cluster name to its status's name (``UP``, ``INIT``, ``STOPPED``), from SkyPilot's rows."""
    existing: dict[str, str] = {}
    for record in records:
        try:
            status = record["status"]
        except (KeyError, TypeError):
            status = None
        existing[str(record["name"])] = str(getattr(status, "value", status))
    return existing


def op_launch_state(args: dict[str, Any]) -> dict[str, Any]:
    """Where a launch is, from SkyPilot's request records (starting its API server if needed)."""
    cluster = args["cluster"]
    exists = cluster in _existing_clusters([cluster])
    return _launch_answer(_request(args.get("request_id"), cluster), exists=exists)


def _launch_answer(payload: Any, *, exists: bool) -> dict[str, Any]:
    sky = _sky()
    if payload is None:
        return {"state": "unknown", "request_id": None, "cluster_exists": exists}
    request_id = str(payload.request_id)
    status = str(getattr(payload.status, "value", payload.status)).upper()
    answer: dict[str, Any] = {"request_id": request_id, "cluster_exists": exists}
    if status in ("PENDING", "WAITING", "RUNNING"):
        return {**answer, "state": "launching"}
    if status == "CANCELLED":
        return {**answer, "state": "cancelled"}
    try:
        value = sky.get(request_id)
    except Exception as error:
        return {
            **answer,
            "state": "failed",
            "error": f"{type(error).__name__}: {_clean(str(error))}",
        }
    return {**answer, "state": "launched", "job_id": _job_id(value)}


def _jobs(records: Any) -> list[dict[str, Any]]:
    jobs = []
    for record in records:
        status = record.status
        jobs.append({"job_id": int(record.job_id), "status": str(getattr(status, "value", status))})
    return jobs


def op_poll(args: dict[str, Any]) -> dict[str, Any]:
    """The launch and the queue of many runs' clusters, in one answer.

    ``args["runs"]`` lists ``{"cluster", "request_id", "launched"}``: the launch of a run not
    known to be ``launched`` is looked up as :func:`op_launch_state` does (one request-record
    lookup for all the known request ids); the queue of each launched run's cluster is read if
    the cluster exists. One read of SkyPilot's cluster table (or one ``status`` request, see
    :func:`_existing_clusters`) names the clusters that exist; the queue requests are all sent
    before any is waited for, so SkyPilot's API server answers them together.

    Returns:
        By cluster: ``launch`` (the :func:`op_launch_state` answer, or ``None`` when it was
        known), ``queue`` (the jobs, or ``None`` when the cluster is gone, stopped or its job
        not launched), ``error`` (an error event, when its queue could not be read) and
        ``cluster_status`` (SkyPilot's ``ClusterStatus`` name, ``None`` when it does not know
        the cluster: a spot cluster taken away reads ``STOPPED`` or disappears).
    """
    sky = _sky()
    runs = [run for run in args.get("runs") or [] if isinstance(run, dict)]
    names = sorted({str(run["cluster"]) for run in runs})
    existing = _existing_clusters(names) if names else {}
    wanted = [
        str(run["request_id"]) for run in runs if run.get("request_id") and not run.get("launched")
    ]
    payloads = sky.api_status(wanted) if wanted else []
    answers: dict[str, dict[str, Any]] = {}
    queued: dict[str, Any] = {}
    for run in runs:
        cluster = str(run["cluster"])
        answer: dict[str, Any] = {
            "launch": None,
            "queue": None,
            "error": None,
            "cluster_status": existing.get(cluster),
        }
        answers[cluster] = answer
        launched = bool(run.get("launched"))
        if not launched:
            request_id = run.get("request_id")
            if request_id:
                found = sorted(
                    (p for p in payloads if str(p.request_id).startswith(str(request_id))),
                    key=lambda payload: float(getattr(payload, "created_at", 0) or 0),
                )
                payload = found[-1] if found else None
            else:
                payload = _request(None, cluster)
            launch = _launch_answer(payload, exists=cluster in existing)
            answer["launch"] = launch
            launched = launch["state"] == "launched" or (
                launch["state"] == "unknown" and cluster in existing
            )
        if launched and cluster in existing and existing[cluster] != "STOPPED":
            try:
                queued[cluster] = sky.queue(cluster, skip_finished=False, all_users=True)
            except Exception as error:
                answer["error"] = _error_event(error)
    for cluster, request_id in queued.items():
        try:
            answers[cluster]["queue"] = _jobs(sky.get(request_id))
        except Exception as error:
            answers[cluster]["error"] = _error_event(error)
    return answers


def op_launch_wait(args: dict[str, Any]) -> dict[str, Any]:
    """Stream a launch's provisioning log; with ``follow``, until it answers."""
    sky = _sky()
    follow = bool(args["follow"])
    value = sky.stream_and_get(args["request_id"], follow=follow, output_stream=_Chunks())
    return {"job_id": _job_id(value) if follow else None}


def op_queue(args: dict[str, Any]) -> list[dict[str, Any]]:
    """The cluster's jobs: id and ``JobStatus`` name."""
    sky = _sky()
    return _jobs(sky.get(sky.queue(args["cluster"], skip_finished=False, all_users=True)))


def op_logs(args: dict[str, Any]) -> int | None:
    """Stream the job's log (SkyPilot's ``run.log``) as chunks; the answer is its exit code."""
    sky = _sky()
    code = sky.tail_logs(
        args["cluster"], args["job_id"], follow=bool(args["follow"]), output_stream=_Chunks()
    )
    return int(code) if code is not None else None


READ_LIMIT = 16 << 20
"""The largest object :func:`op_read_object` reads (peeks read small files)."""

_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(scheme: str) -> Any:
    """One S3 or Cloud Storage client for the process, its connections kept and reused."""
    with _CLIENTS_LOCK:
        if scheme not in _CLIENTS:
            try:
                if scheme == "s3":
                    _CLIENTS[scheme] = importlib.import_module("boto3").client("s3")
                else:
                    storage = importlib.import_module("google.cloud.storage")
                    _CLIENTS[scheme] = storage.Client()
            except ImportError as error:
                raise BridgeFailure(
                    "unsupported", f"SkyPilot's environment cannot read {scheme}:// ({error})"
                ) from None
        return _CLIENTS[scheme]


def _missing_object(error: BaseException) -> bool:
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = str((response.get("Error") or {}).get("Code", ""))
        return code in ("NoSuchKey", "404", "NotFound")
    return type(error).__name__ == "NotFound"


def op_read_object(args: dict[str, Any]) -> str | None:
    """One object of a bucket, base64-encoded; ``None`` when there is no such object.

    Read with the SDK SkyPilot's cloud extra installs (``boto3`` for ``s3://``,
    ``google-cloud-storage`` for ``gs://``), through one client kept for the process; an
    ``unsupported`` error when that SDK is not installed here.
    """
    scheme, _, rest = str(args["uri"]).partition("://")
    bucket, _, key = rest.partition("/")
    if scheme not in ("s3", "gs") or not bucket or not key:
        raise BridgeFailure("failed", f"not an object URI: {args['uri']!r}")
    client = _client(scheme)
    try:
        if scheme == "s3":
            body = client.get_object(Bucket=bucket, Key=key)["Body"]
            data = body.read(READ_LIMIT + 1)
            body.close()
        else:
            data = client.bucket(bucket).blob(key).download_as_bytes(end=READ_LIMIT)
    except Exception as error:
        if _missing_object(error):
            return None
        raise
    if len(data) > READ_LIMIT:
        raise BridgeFailure("failed", f"{args['uri']} is larger than {READ_LIMIT >> 20} MiB")
    return base64.b64encode(data).decode("ascii")


def op_cancel_request(args: dict[str, Any]) -> list[str]:
    """Cancel a request that has not finished; the ids it cancelled."""
    sky = _sky()
    cancelled = sky.get(sky.api_cancel([args["request_id"]], silent=True))
    return [str(request_id) for request_id in cancelled or []]


def op_cancel_job(args: dict[str, Any]) -> None:
    """Cancel the run's job on its cluster."""
    sky = _sky()
    sky.get(sky.cancel(args["cluster"], job_ids=[int(args["job_id"])]))


def op_down(args: dict[str, Any]) -> None:
    """Tear the cluster down."""
    sky = _sky()
    sky.get(sky.down(args["cluster"]))


def op_ssh_config(args: dict[str, Any]) -> str:
    """The SSH configuration file SkyPilot wrote for the cluster (``Host <cluster>``)."""
    helper = importlib.import_module("sky.utils.cluster_utils").SSHConfigHelper
    return os.path.expanduser(str(helper.ssh_cluster_path).format(args["cluster"]))


def op_catalog(args: dict[str, Any]) -> dict[str, Any]:
    """The accelerators and hourly prices of SkyPilot's cached catalogs; never the network.

    Only the files already on disk are read (SkyPilot's own reader would download stale ones,
    without a timeout), each cloud's ``vms.csv`` under the versioned catalog directory.
    """
    common = importlib.import_module("sky.catalog.common")
    directory = os.path.dirname(str(common.get_catalog_path("x/vms.csv")).rstrip("/"))
    directory = os.path.dirname(directory)
    wanted = args.get("clouds")
    offers: list[dict[str, Any]] = []
    for path in sorted(glob.glob(os.path.join(directory, "*", "vms.csv"))):
        cloud = os.path.basename(os.path.dirname(path))
        if wanted and cloud not in wanted:
            continue
        offers.extend(_offers(cloud, path))
    return {"directory": directory, "offers": offers}


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _offers(cloud: str, path: str) -> list[dict[str, Any]]:
    cheapest: dict[Any, dict[str, Any]] = {}
    with open(path, newline="", encoding="utf-8") as stream:
        for row in csv.DictReader(stream):
            kind, count = row.get("AcceleratorName"), _number(row.get("AcceleratorCount"))
            price = _number(row.get("Price"))
            if not kind or not count or price is None:
                continue
            key = (kind, count, row.get("InstanceType"))
            offer = {
                "cloud": cloud,
                "accelerator": kind,
                "count": count,
                "instance_type": row.get("InstanceType") or "",
                "vcpus": _number(row.get("vCPUs")),
                "memory_gib": _number(row.get("MemoryGiB")),
                "price": price,
                "spot_price": _number(row.get("SpotPrice")),
                "region": row.get("Region") or "",
            }
            if key not in cheapest or price < cheapest[key]["price"]:
                cheapest[key] = offer
    return list(cheapest.values())


OPERATIONS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "probe": op_probe,
    "launch": op_launch,
    "launch_state": op_launch_state,
    "launch_wait": op_launch_wait,
    "poll": op_poll,
    "queue": op_queue,
    "logs": op_logs,
    "cancel_request": op_cancel_request,
    "cancel_job": op_cancel_job,
    "down": op_down,
    "ssh_config": op_ssh_config,
    "read_object": op_read_object,
    "catalog": op_catalog,
}


def _check_sky() -> None:
    try:
        sky = importlib.import_module("sky")
    except ImportError as error:
        raise BridgeFailure("incompatible", f"cannot import sky: {error}") from None
    missing = [name for name in SDK_NAMES if not hasattr(sky, name)]
    if missing:
        version = getattr(sky, "__version__", "unknown")
        raise BridgeFailure(
            "incompatible",
            f"SkyPilot {version} lacks {', '.join(missing)}; x-tui needs SkyPilot 0.14",
        )


def _error_event(error: BaseException) -> dict[str, Any]:
    if isinstance(error, BridgeFailure):
        kind, name, message = error.kind, "BridgeFailure", str(error)
    else:
        kind, name, message = _kind_of(error), type(error).__name__, _clean(str(error))
    return {"event": "error", "kind": kind, "type": name, "message": message}


def _run(request: Any) -> bool:
    """Answer one request with its ``done`` or ``error`` event; whether it succeeded."""
    try:
        operation = OPERATIONS[request["op"]]
        args = request.get("args") or {}
    except (KeyError, TypeError, AttributeError) as error:
        _emit({"event": "error", "kind": "failed", "type": "BadRequest", "message": str(error)})
        return False
    try:
        _check_sky()
        value = operation(args)
    except Exception as error:
        _emit(_error_event(error))
        return False
    _emit({"event": "done", "value": value})
    return True


def _serve_one(request: dict[str, Any]) -> None:
    _CURRENT.request_id = request.get("id")
    try:
        _run(request)
    finally:
        _CANCELLED.discard(request.get("id"))


def _watch_parent(parent: int) -> None:
    """End this process once x-tui is gone, even if something else holds its pipe open.

    Linux's ``PR_SET_PDEATHSIG`` is not used: it fires when the *thread* that started this
    process ends, and x-tui starts the bridge from whichever worker thread asks first.
    """
    while True:
        time.sleep(PARENT_WATCH_SECONDS)
        if os.getppid() != parent:
            os._exit(0)


def serve() -> int:
    """Answer requests until standard input ends (x-tui closed it, or died).

    Each line is ``{"id": ID, "op": NAME, "args": {...}}``, answered in a thread of its own, so a
    long log stream holds up nothing else; each event carries the request's ``id``.
    ``{"id": ID, "cancel": true}`` stops a stream at its next chunk. The launch is never served
    here (its acknowledgement reads standard input): it runs one-shot, in a session of its own.
    """
    parent = os.getppid()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict) or "id" not in request:
            continue
        if request.get("cancel"):
            _CANCELLED.add(request["id"])
            continue
        if request.get("op") == "launch":
            _CURRENT.request_id = request["id"]
            _emit(
                {
                    "event": "error",
                    "kind": "failed",
                    "type": "BadRequest",
                    "message": "a launch runs one-shot, never through a serving bridge",
                }
            )
            _CURRENT.request_id = None
            continue
        threading.Thread(target=_serve_one, args=(request,), daemon=True).start()
    os._exit(0)  # the threads still answering have nobody to answer to


def main() -> int:
    """One request (or, with ``--serve``, many); 0 when it succeeded, 1 when it failed."""
    global _OUT
    _OUT = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="backslashreplace")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if sys.argv[1:] == ["--serve"]:
        return serve()
    try:
        request = json.loads(sys.stdin.readline())
    except ValueError as error:
        _emit({"event": "error", "kind": "failed", "type": "BadRequest", "message": str(error)})
        return 1
    return 0 if _run(request) else 1


if __name__ == "__main__":
    sys.exit(main())
