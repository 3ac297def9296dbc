"""What the watcher's log says of a run whose backend stops answering for a while."""

from __future__ import annotations

import io
from pathlib import Path

from tests.support import FlakyBackend, wait_for
from x_tui.app.notify_settings import NotifySettings
from x_tui.app.service import Service
from x_tui.app.watcher import Watcher

from .app_support import save_handle
from .screens_support import SUBMITTED_AT


def test_the_log_says_when_a_backend_stops_answering_and_when_it_answers_again(
    state_dir: Path,
) -> None:
    run_id = "far-20260919T120000Z-000001"
    save_handle(state_dir, run_id=run_id, job="far", backend="flaky", submitted_at=SUBMITTED_AT)
    backend = FlakyBackend()
    backend.down.set()
    log = io.StringIO()
    service = Service(build_backend=lambda handle: backend)
    watcher = Watcher(
        service, NotifySettings(terminal=False), first_interval=0.05, max_interval=0.1, log=log
    )
    watcher.start()
    try:
        wait_for(lambda: "no state" in log.getvalue(), "the failure in the log")
        backend.down.clear()
        wait_for(lambda: "answers again" in log.getvalue(), "the answer in the log")
    finally:
        watcher.stop()
    lines = [line.split(" ", 1)[1] for line in log.getvalue().splitlines()]
    told = [line for line in lines if line.startswith(f"run {run_id}")]
    assert told == [
        f"run {run_id}: no state: the provider's API is unreachable",
        f"run {run_id}: its backend answers again",
    ]
