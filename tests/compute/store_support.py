"""Runs for the store index's tests: handles made by number, a store made quiet, and a handle
written as substrax 0.1.x writes it."""

from __future__ import annotations

import datetime as dt
import os

from x_tui.compute.store import RunHandle, RunStore, handle_json

START = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


def handle(index: int, *, job: str = "train") -> RunHandle:
    """The ``index``-th run of ``job``: one minute after the one before."""
    moment = START + dt.timedelta(minutes=index)
    run_id = f"{job}-{moment:%Y%m%dT%H%M%SZ}-{index:06x}"
    return RunHandle(
        run_id=run_id,
        backend="local",
        job=job,
        project="/home/me/project",
        submitted_at=moment,
        settings={"python": None, "nested": {"list": [1, 2.5, None]}},
        details={"pid": str(1000 + index), "run_dir": f"/state/compute/local/{run_id}"},
    )


def settle(store: RunStore) -> None:
    """Make the runs directory's last change lie well in the past (as after a quiet minute)."""
    past = dt.datetime.now(dt.UTC).timestamp() - 60
    os.utime(store.root, (past, past))


def substrax_save(store: RunStore, run: RunHandle) -> None:
    """Write a handle as substrax 0.1.x does: a partial file renamed into place."""
    partial = store.root / f".{run.run_id}.partial"
    partial.write_text(handle_json(run), encoding="utf-8")
    partial.replace(store.root / f"{run.run_id}.json")
