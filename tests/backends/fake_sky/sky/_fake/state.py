"""The fake SkyPilot's "API server" state: request and cluster records under ``$FAKE_SKY_ROOT``.

``$FAKE_SKY_ROOT`` holds:

- ``requests/<id>.json`` and ``requests/<id>.log``: each request (name, cluster, status, result or
  error) and its log, as SkyPilot's API server keeps them;
- ``clusters/<name>/``: a cluster: ``cluster.json``, ``home/`` (its user's home, the workdir at
  ``home/sky_workdir``), ``root/`` (where absolute remote paths live), ``run.log`` and
  ``jobs/<id>.json``;
- ``generated/ssh/<name>``: the SSH configuration of a cluster, when ``ssh.json`` says how to
  reach this machine's test sshd;
- ``launches.log``: one line per cluster ever provisioned (what "launched once" is checked on);
- switches a test writes: ``clouds.json`` (the enabled clouds, ``["Fake"]`` by default),
  ``hold-launch`` (provisioning waits while it exists), ``hold-request-id`` (``sky.launch`` waits
  before it returns the request id while it exists), ``fail-provision``, ``fail-cancel`` and
  ``fail-down`` (that step fails with the file's text as SkyPilot's message; with
  ``fail-down``, autodown leaves the cluster too), and
  ``remote-api-server`` (the API server is not this machine's: ``sky.server.common`` says so);
- ``cluster-table-reads``: one line per read of ``sky.global_user_state``'s cluster table.

Every write is atomic (a partial file, then a rename), so the client and the runner processes
read and write without locks.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

FINISHED = ("SUCCEEDED", "FAILED", "CANCELLED")


def root() -> Path:
    """``$FAKE_SKY_ROOT``, created if missing."""
    path = Path(os.environ["FAKE_SKY_ROOT"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=".partial.", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(data, stream, indent=2)
    os.replace(partial, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def request_path(request_id: str) -> Path:
    return root() / "requests" / f"{request_id}.json"


def request_log(request_id: str) -> Path:
    return root() / "requests" / f"{request_id}.log"


def new_request(name: str, cluster: str | None, *, status: str = "PENDING") -> str:
    request_id = uuid.uuid4().hex
    write_json(
        request_path(request_id),
        {
            "request_id": request_id,
            "name": name,
            "cluster_name": cluster,
            "status": status,
            "created_at": time.time(),
            "finished_at": None,
            "result": None,
            "error": None,
            "pid": None,
        },
    )
    request_log(request_id).touch()
    return request_id


def load_request(request_id: str) -> dict[str, Any] | None:
    data = read_json(request_path(request_id))
    return data if isinstance(data, dict) else None


def update_request(request_id: str, **changes: Any) -> dict[str, Any]:
    data = load_request(request_id) or {}
    if data.get("status") in FINISHED and "status" in changes:
        return data  # a finished request stays as it ended
    data.update(changes)
    if changes.get("status") in FINISHED:
        data["finished_at"] = time.time()
    write_json(request_path(request_id), data)
    return data


def finish(request_id: str, *, result: Any = None, error: tuple[str, str] | None = None) -> None:
    if error is None:
        update_request(request_id, status="SUCCEEDED", result=result)
    else:
        update_request(request_id, status="FAILED", error={"type": error[0], "message": error[1]})


def all_requests() -> list[dict[str, Any]]:
    found = []
    for path in sorted((root() / "requests").glob("*.json")):
        data = read_json(path)
        if isinstance(data, dict):
            found.append(data)
    return found


def cluster_dir(name: str) -> Path:
    return root() / "clusters" / name


def load_cluster(name: str) -> dict[str, Any] | None:
    data = read_json(cluster_dir(name) / "cluster.json")
    return data if isinstance(data, dict) else None


def job_path(cluster: str, job_id: int) -> Path:
    return cluster_dir(cluster) / "jobs" / f"{job_id}.json"


def load_job(cluster: str, job_id: int) -> dict[str, Any] | None:
    data = read_json(job_path(cluster, job_id))
    return data if isinstance(data, dict) else None


def set_job(cluster: str, job_id: int, **changes: Any) -> None:
    path = job_path(cluster, job_id)
    if not cluster_dir(cluster).is_dir():
        return
    data = load_job(cluster, job_id) or {"job_id": job_id}
    data.update(changes)
    write_json(path, data)


def ssh_config_path(cluster: str) -> Path:
    return root() / "generated" / "ssh" / cluster


def switch(name: str) -> bool:
    return (root() / name).exists()


def said(name: str) -> str:
    """What a switch file says (the message a failure it causes carries)."""
    return (root() / name).read_text(encoding="utf-8").strip() or name


def enabled_clouds() -> list[str]:
    data = read_json(root() / "clouds.json")
    return [str(cloud) for cloud in data] if isinstance(data, list) else ["Fake"]
