"""The fake SkyPilot's server side: provision a "cluster" on this machine and run its job.

``python -m sky._fake.server launch REQUEST_ID`` runs detached (a session of its own), as
SkyPilot's API server runs a launch whatever becomes of its client: it provisions the cluster
(a directory), syncs the workdir and the file mounts, answers the launch request with ``(1,
handle)`` once job 1 is queued, then runs the job as SkyPilot 0.14 does: ``SETTING_UP`` (the
``setup``, its lines prefixed ``(setup pid=N) ``), ``RUNNING`` (the ``run``, lines prefixed
``(<task>, pid=N) ``), then ``SUCCEEDED``, ``FAILED``, ``FAILED_SETUP`` or ``CANCELLED``. A
cluster launched with ``down`` and no idle time is removed as soon as its job ends (autodown),
unless ``fail-down`` is set.

Remote paths: ``~/...`` is the cluster's home; an absolute path is rewritten into the cluster's
``root/`` in the setup and run scripts. An ``s3://`` MOUNT is a local directory synced to the
bucket while the job runs and once more before its status is final: with boto3 where the fake's
environment has it (as ``skypilot[aws]`` installs it), else with the ``aws`` CLI.
``python -m sky._fake.server preempt NAME`` takes a spot cluster away as its cloud would;
``python -m sky._fake.server cleanup`` ends every process the fake started.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sky._fake import state

SYNC_SECONDS = 0.3


def log_request(request_id: str, line: str) -> None:
    with state.request_log(request_id).open("a", encoding="utf-8") as stream:
        stream.write(line + "\n")


def _local(cluster: Path, remote: str) -> Path:
    if remote.startswith("~/"):
        return cluster / "home" / remote[2:]
    return cluster / "root" / remote.lstrip("/")


def _rewrite(script: str, absolute: dict[str, Path]) -> str:
    for remote in sorted(absolute, key=len, reverse=True):
        pattern = re.compile(rf"(?<![\w./-]){re.escape(remote)}(?=[/\"'\s]|$)", re.MULTILINE)
        script = pattern.sub(str(absolute[remote]).replace("\\", "\\\\"), script)
    return script


class Mounts:
    """The cluster's file mounts; the s3 ones are synced back while the job runs."""

    def __init__(self, cluster: Path, mounts: dict[str, Any]) -> None:
        self.absolute: dict[str, Path] = {
            remote: _local(cluster, remote) for remote in mounts if not remote.startswith("~/")
        }
        self.buckets: list[tuple[Path, str]] = []
        self._synced: dict[Path, object] = {}
        """Each bucket mount's files as its bucket last had them."""
        for remote, source in mounts.items():
            local = _local(cluster, remote)
            local.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, dict):
                uri = str(source["source"])
                local.mkdir(parents=True, exist_ok=True)
                if not uri.startswith("s3://"):
                    raise ValueError(f"the fake mounts s3:// buckets only, not {uri}")
                self.buckets.append((local, uri))
                _download(uri, local)
                self._synced[local] = _files_of(local)
            else:
                path = Path(os.path.expanduser(str(source)))
                if path.is_dir():
                    shutil.copytree(path, local, symlinks=True)
                elif path.suffix == ".json":  # the job spec: its mount paths are rewritten too
                    local.write_text(_rewrite(path.read_text(), self.absolute))
                else:
                    shutil.copy2(path, local)

    def sync(self, *, only_changed: bool = False) -> None:
        """Copy each bucket mount back to its bucket, as ``aws s3 sync --no-follow-symlinks``
        does (``only_changed``: only a mount whose files changed since its last copy)."""
        for local, uri in self.buckets:
            files = _files_of(local)
            if only_changed and self._synced.get(local) == files:
                continue
            _upload(local, uri, files - self._synced.get(local, frozenset()))
            self._synced[local] = files


def _files_of(directory: Path) -> frozenset[tuple[str, int, int]]:
    """Each file under ``directory`` with its size and modification time."""
    found = set()
    for parent, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(parent, name))
                found.add((os.path.join(parent, name), info.st_size, info.st_mtime_ns))
    return frozenset(found)


_CLIENT: list[Any] = []
"""The boto3 S3 client of this process, once made (none: the fake's environment has no boto3)."""


def _client() -> Any | None:
    """This process's boto3 S3 client, or ``None`` where boto3 is not installed."""
    if not _CLIENT:
        try:
            import boto3
        except ImportError:
            _CLIENT.append(None)
        else:
            _CLIENT.append(boto3.client("s3"))
    return _CLIENT[0]


def _bucket_and_prefix(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix.strip("/")


def _download(uri: str, local: Path) -> None:
    """Copy every object under ``uri`` into ``local`` (``aws s3 sync URI LOCAL``)."""
    client = _client()
    if client is None:
        _aws("sync", uri, str(local))
        return
    bucket, prefix = _bucket_and_prefix(uri)
    start = f"{prefix}/" if prefix else ""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=start):
        for item in page.get("Contents", ()):
            target = local / item["Key"][len(start) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(bucket, item["Key"], str(target))


def _upload(local: Path, uri: str, changed: frozenset[tuple[str, int, int]]) -> None:
    """Copy the ``changed`` files of ``local`` to ``uri``, links left out (``aws s3 sync
    --no-follow-symlinks LOCAL URI``)."""
    client = _client()
    if client is None:
        _aws("sync", "--no-follow-symlinks", str(local), uri)
        return
    bucket, prefix = _bucket_and_prefix(uri)
    for path, _, _ in sorted(changed):
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        key = os.path.relpath(path, local)
        with contextlib.suppress(FileNotFoundError):  # gone since it was listed
            client.upload_file(path, bucket, f"{prefix}/{key}" if prefix else key)


def _aws(*words: str) -> None:
    subprocess.run(
        ["aws", "s3", *words, "--only-show-errors"],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def _environment(cluster: Path, envs: dict[str, Any], secrets: dict[str, Any]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    home = Path.home()
    if "PYENV_ROOT" not in env and (home / ".pyenv").is_dir():
        env["PYENV_ROOT"] = str(home / ".pyenv")  # this machine's shims, under another HOME
    env.setdefault("UV_CACHE_DIR", str(home / ".cache" / "uv"))
    env.update({key: str(value) for key, value in envs.items()})
    env.update({key: str(value) for key, value in secrets.items()})
    env.update(
        {
            "HOME": str(cluster / "home"),
            "SKYPILOT_NODE_RANK": "0",
            "SKYPILOT_NUM_NODES": "1",
            "SKYPILOT_NODE_IPS": "127.0.0.1",
        }
    )
    return env


def _run_prefixed(
    script: str, *, prefix: str, cwd: Path, env: dict[str, str], log: Path, on_start: Any = None
) -> int:
    process = subprocess.Popen(
        ["/bin/bash", "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    if on_start is not None:
        on_start(process.pid)
    assert process.stdout is not None
    with log.open("ab") as stream:
        for line in process.stdout:
            stream.write(prefix.format(pid=process.pid).encode() + line)
            stream.flush()
    return process.wait()


def _ssh_config(name: str, cluster: Path) -> None:
    settings = state.read_json(state.root() / "ssh.json")
    if not isinstance(settings, dict):
        return
    path = state.ssh_config_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"# Added by the fake SkyPilot\nHost {name}\n"
        f"  HostName 127.0.0.1\n  User {settings['user']}\n  IdentityFile {settings['key']}\n"
        "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile=/dev/null\n"
        "  GlobalKnownHostsFile=/dev/null\n  LogLevel ERROR\n"
        f"  Port {settings['port']}\n  SetEnv FAKE_SKY_HOME={cluster / 'home'}\n",
        encoding="utf-8",
    )


def _provision(request_id: str, name: str, task: dict[str, Any], options: dict[str, Any]) -> Path:
    cluster = state.cluster_dir(name)
    (cluster / "home").mkdir(parents=True)
    (cluster / "root").mkdir()
    (cluster / "jobs").mkdir()
    state.write_json(
        cluster / "cluster.json",
        {
            "name": name,
            "status": "INIT",
            "down": options["down"],
            "idle_minutes": options["idle_minutes"],
            "request_id": request_id,
            "runner_pid": os.getpid(),
            "launched_at": time.time(),
        },
    )
    with (state.root() / "launches.log").open("a", encoding="utf-8") as stream:
        stream.write(f"{name} {request_id}\n")
    workdir = task.get("workdir")
    if workdir:
        shutil.copytree(
            workdir,
            cluster / "home" / "sky_workdir",
            symlinks=True,
            ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__"),
        )
    else:
        (cluster / "home" / "sky_workdir").mkdir()
    _ssh_config(name, cluster)
    return cluster


def launch(request_id: str) -> None:
    request = state.load_request(request_id) or {}
    spec = state.read_json(state.root() / "tasks" / f"{request_id}.json")
    task, options = spec["task"], spec["options"]
    name = request["cluster_name"]
    state.update_request(request_id, status="RUNNING", pid=os.getpid())
    log_request(request_id, f"Launching a new cluster '{name}'.")
    while state.switch("hold-launch"):
        time.sleep(0.05)
    if (state.load_request(request_id) or {}).get("status") == "CANCELLED":
        return
    if state.switch("fail-provision"):
        message = state.said("fail-provision")
        log_request(request_id, f"Failed to provision {name}: {message}")
        state.finish(request_id, error=("ResourcesUnavailableError", message))
        return
    try:
        cluster = _provision(request_id, name, task, options)
        mounts = Mounts(cluster, task.get("file_mounts") or {})
    except Exception as error:
        log_request(request_id, f"Failed to provision {name}: {error}")
        state.finish(request_id, error=("ResourcesUnavailableError", str(error)))
        return
    state.set_job(name, 1, status="PENDING", submitted_at=time.time(), job_name=task.get("name"))
    cluster_record = state.load_cluster(name) or {}
    state.write_json(cluster / "cluster.json", {**cluster_record, "status": "UP"})
    log_request(request_id, f"Job submitted, ID: 1. Cluster {name} is UP.")
    state.finish(request_id, result={"job_id": 1})
    run_job(name, cluster, task, mounts, options)


def run_job(
    name: str, cluster: Path, task: dict[str, Any], mounts: Mounts, options: dict[str, Any]
) -> None:
    env = _environment(cluster, task.get("envs") or {}, task.get("secrets") or {})
    workdir = cluster / "home" / "sky_workdir"
    log = cluster / "run.log"
    log.touch()
    status = "SUCCEEDED"
    setup = task.get("setup")
    if setup:
        state.set_job(name, 1, status="SETTING_UP", start_at=time.time())
        code = _run_prefixed(
            _rewrite(setup, mounts.absolute),
            prefix="(setup pid={pid}) ",
            cwd=workdir,
            env=env,
            log=log,
            on_start=lambda pid: state.set_job(name, 1, pid=pid),
        )
        if code != 0:
            status = "FAILED_SETUP"
    if status == "SUCCEEDED" and not _cancelled(name):
        state.set_job(name, 1, status="RUNNING")
        syncing = threading.Event()
        syncer = threading.Thread(target=_sync_until, args=(mounts, syncing), daemon=True)
        syncer.start()
        code = _run_prefixed(
            _rewrite(task.get("run") or "true", mounts.absolute),
            prefix=f"({task.get('name') or 'task'}, pid={{pid}}) ",
            cwd=workdir,
            env=env,
            log=log,
            on_start=lambda pid: state.set_job(name, 1, pid=pid),
        )
        syncing.set()
        syncer.join()
        mounts.sync()
        status = "SUCCEEDED" if code == 0 else "FAILED"
    if _cancelled(name):
        status = "CANCELLED"
    state.set_job(name, 1, status=status, end_at=time.time())
    # Autodown, unless the cloud refuses to terminate instances (``fail-down``) as it refuses
    # SkyPilot's ``down``.
    if options["down"] and not options["idle_minutes"] and not state.switch("fail-down"):
        remove_cluster(name, keep_runner=True)


def _sync_until(mounts: Mounts, stop: threading.Event) -> None:
    while not stop.wait(SYNC_SECONDS):
        with contextlib.suppress(subprocess.CalledProcessError):
            mounts.sync(only_changed=True)


def _cancelled(name: str) -> bool:
    return (state.cluster_dir(name) / "jobs" / "1.cancelled").exists()


def _kill_group(pid: int | None) -> None:
    if not pid or pid == os.getpid():
        return
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            return
        for _ in range(50):
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)


def remove_cluster(name: str, *, keep_runner: bool = False) -> None:
    cluster = state.load_cluster(name) or {}
    job = state.load_job(name, 1) or {}
    _kill_group(job.get("pid"))
    if not keep_runner:
        _kill_group(cluster.get("runner_pid"))
    # Out of the cluster table first, as SkyPilot's teardown is: a reader that finds a job's
    # file gone then finds the cluster gone too.
    (state.cluster_dir(name) / "cluster.json").unlink(missing_ok=True)
    shutil.rmtree(state.cluster_dir(name), ignore_errors=True)
    state.ssh_config_path(name).unlink(missing_ok=True)


def preempt(name: str) -> None:
    """The cloud takes the spot cluster back: its runner and its job die where they are (the
    job's record stays as the node last wrote it) and SkyPilot reads the cluster ``STOPPED``, as
    a refresh finds a preempted spot cluster that stops on preemption."""
    cluster = state.load_cluster(name) or {}
    job = state.load_job(name, 1) or {}
    _kill_group(cluster.get("runner_pid"))
    _kill_group(job.get("pid"))
    state.write_json(state.cluster_dir(name) / "cluster.json", {**cluster, "status": "STOPPED"})


def cleanup() -> None:
    """End every process the fake started: runners, jobs."""
    for request in state.all_requests():
        if request.get("name") == "launch" and request.get("pid"):
            _kill_group(int(request["pid"]))
    for path in (state.root() / "clusters").glob("*/jobs/*.json"):
        job = state.read_json(path) or {}
        _kill_group(job.get("pid"))


def main(argv: list[str]) -> int:
    if argv[:1] == ["launch"]:
        launch(argv[1])
        return 0
    if argv[:1] == ["preempt"]:
        preempt(argv[1])
        return 0
    if argv[:1] == ["cleanup"]:
        cleanup()
        return 0
    sys.stderr.write(f"unknown: {json.dumps(argv)}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
