"""A remote run's log copy keeps when each line reached this machine, beside it (``t``)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from tests.support import wait_for
from x_tui.app.log_spool import LogSpools
from x_tui.compute.backend import ComputeBackend
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.log_times import LogTimes, times_path


class SlowLogs:
    """A backend whose log stream gives two lines, then a third after ``release``."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def logs(self, handle: RunHandle, *, follow: bool = False) -> Iterator[str]:
        yield "[a] one"
        yield "[a] two"
        self.release.wait(30)
        yield "[a] three"


def test_a_spooled_log_gets_a_times_file_with_each_line_s_arrival(tmp_path: Path) -> None:
    handle = RunHandle(
        run_id="job-20260919T120000Z-0a1b2c",
        backend="modal",
        job="job",
        project="/home/user/sample",
        submitted_at=dt.datetime(2026, 9, 19, 12, tzinfo=dt.UTC),
        settings={},
        details={},
    )
    backend = SlowLogs()
    spools = LogSpools(tmp_path / "logs", open_seconds=10)
    before = time.time()
    state = spools.spool(handle, lambda: cast("ComputeBackend", cast("Any", backend)))
    wait_for(lambda: state.lines >= 2, "the first two lines spooled", every=0.01)
    time.sleep(0.05)
    middle = time.time()
    backend.release.set()
    wait_for(lambda: state.finished, "the spool's end", every=0.01)
    data = state.path.read_bytes()
    assert data == b"[a] one\n[a] two\n[a] three\n"
    with LogTimes(times_path(state.path)) as times:
        first = times.time_at(0)
        third = times.time_at(data.index(b"[a] three"))
    assert first is not None
    assert third is not None
    assert before - 0.001 <= first <= middle
    assert middle - 0.001 <= third <= time.time()
