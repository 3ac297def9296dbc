"""Reconciling a run's launch with SkyPilot, reading its job's status, and the steps that stop it.

A launch is sent once, by ``submit``. Its answer (the job on the cluster, or why not) is read
here from SkyPilot's own request records the first time the run is looked at after it came, and
recorded beside the task file (:mod:`.launch_records`), so nothing is ever launched twice: an
x-tui killed while provisioning went on finds the same cluster and job the next time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from x_tui.backends.skypilot.bridge import Bridge, ClusterGone
from x_tui.backends.skypilot.launch_records import Launch, RunRecords
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.errors import ProviderError, UserError
from x_tui.compute.worker.records import JsonValue

JOB_STATES: Final = {
    "INIT": RunState.PENDING,
    "PENDING": RunState.PENDING,
    "SETTING_UP": RunState.PENDING,
    "RUNNING": RunState.RUNNING,
    "SUCCEEDED": RunState.SUCCEEDED,
    "CANCELLED": RunState.CANCELLED,
    "FAILED": RunState.FAILED,
    "FAILED_SETUP": RunState.FAILED,
    "FAILED_DRIVER": RunState.FAILED,
}
"""SkyPilot 0.14's ``JobStatus`` values, and the state each one is."""


def request_id_of(handle: RunHandle, records: RunRecords) -> str | None:
    """The run's launch request id: as the bridge recorded it, else as the handle holds it."""
    recorded, _ = records.request()
    return recorded or handle.details.get("request_id") or None


def reconcile_launch(
    bridge: Bridge, handle: RunHandle, records: RunRecords, *, cluster: str
) -> Launch:
    """What is known of the run's launch, asking SkyPilot when no answer is recorded yet.

    Args:
        bridge: The bridge to SkyPilot.
        handle: The run.
        records: The run's files.
        cluster: The run's cluster.

    Returns:
        The launch; a ``launched`` or ``failed`` answer is recorded for next time.

    Raises:
        BackendUnavailableError: If SkyPilot is not installed here.
        ProviderError: If SkyPilot cannot say.
    """
    known = records.known_launch()
    if known is not None:
        return known
    request_id = request_id_of(handle, records)
    if records.request()[1]:
        return records.record_failed(
            request_id=request_id,
            message="x-tui stopped before it recorded the launch, which was undone",
        )
    answer = bridge.call(
        "launch_state",
        {"cluster": cluster, "request_id": request_id},
        what=f"reading the launch of {cluster}",
    )
    return launch_from_answer(answer, records, request_id=request_id)


def launch_from_answer(answer: JsonValue, records: RunRecords, *, request_id: str | None) -> Launch:
    """The launch a ``launch_state`` answer (or a ``poll`` answer's ``launch``) describes.

    Args:
        answer: The bridge's answer.
        records: The run's files; a ``launched`` or ``failed`` answer is recorded there.
        request_id: The request id known here, used when the answer names none.

    Raises:
        ProviderError: If the answer is not one the bridge gives.
    """
    if not isinstance(answer, Mapping):
        raise ProviderError(f"SkyPilot's bridge answered {answer!r} about a launch")
    found = answer.get("request_id")
    request_id = found if isinstance(found, str) else request_id
    state = answer.get("state")
    if state == "launched":
        job_id = answer.get("job_id")
        return records.record_launched(
            request_id=request_id, job_id=job_id if isinstance(job_id, int) else 1
        )
    if state == "failed":
        return records.record_failed(
            request_id=request_id, message=f"the launch failed: {answer.get('error')}"
        )
    if state == "cancelled":
        return records.record_failed(
            request_id=request_id, message="the launch request was cancelled"
        )
    if state == "launching":
        return Launch(state="launching", request_id=request_id)
    if answer.get("cluster_exists"):  # SkyPilot forgot the request, not the cluster: job 1
        return records.record_launched(request_id=request_id, job_id=1)
    return Launch(state="lost", request_id=request_id)


def state_in_jobs(jobs: JsonValue, *, cluster: str, job_id: int | None) -> RunState | None:
    """The job's state in a queue the bridge read; ``None`` when the job is not in it.

    Raises:
        ProviderError: If SkyPilot reports a job status this backend does not know.
    """
    for job in jobs if isinstance(jobs, list) else []:
        if isinstance(job, Mapping) and job.get("job_id") == job_id:
            status = str(job.get("status"))
            state = JOB_STATES.get(status)
            if state is None:
                raise ProviderError(
                    f"SkyPilot reports job {job_id} of {cluster} as {status!r}, a status this"
                    " x-tui does not know"
                )
            return state
    return None


def stop_run(
    bridge: Bridge,
    handle: RunHandle,
    records: RunRecords,
    *,
    cluster: str,
    cancel_request: bool,
    cancel_job: bool,
) -> tuple[int, dict[str, Exception]]:
    """Attempt every step that stops a run, whatever the one before did.

    Args:
        bridge: The bridge to SkyPilot.
        handle: The run.
        records: The run's files.
        cluster: The run's cluster.
        cancel_request: Cancel the launch request, unless its job is known to be on the cluster.
        cancel_job: Cancel the job on the cluster.

    Returns:
        How many steps were attempted, and each that failed (``request``, ``job``,
        ``teardown``) with its error; a cluster SkyPilot no longer knows is not a failure.
    """
    known = records.known_launch()
    request_id = request_id_of(handle, records)
    steps: list[tuple[str, str, dict[str, JsonValue], str]] = []
    if cancel_request and request_id and (known is None or known.state != "launched"):
        steps.append(
            ("request", "cancel_request", {"request_id": request_id}, "cancelling the launch")
        )
    if cancel_job:
        job_id = known.job_id if known is not None and known.job_id is not None else 1
        steps.append(
            ("job", "cancel_job", {"cluster": cluster, "job_id": job_id}, "cancelling the job")
        )
    steps.append(("teardown", "down", {"cluster": cluster}, f"tearing down {cluster}"))
    failures: dict[str, Exception] = {}
    for step, op, args, what in steps:
        try:
            bridge.call(op, args, what=what)
        except ClusterGone:
            continue
        except UserError as error:
            failures[step] = error
    return len(steps), failures
