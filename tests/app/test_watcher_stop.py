"""A watcher told to stop delivers every event it recorded, even one recorded as it stops."""

from __future__ import annotations

import datetime as dt
import json
import sys
import threading
import time
from pathlib import Path

import pytest

from x_tui.app.notify_settings import NotifySettings
from x_tui.app.service import Service
from x_tui.app.watch_events import EventKind
from x_tui.app.watcher import Watcher
from x_tui.compute.backend import RunState
from x_tui.compute.store import RunHandle

HOOK = """\
import json, os, sys
with open(sys.argv[1], "a") as stream:
    stream.write(json.dumps([os.environ["X_TUI_RUN_ID"], os.environ["X_TUI_STATE"]]) + "\\n")
"""


def test_an_event_recorded_while_the_watcher_stops_is_still_delivered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = (tmp_path / "watch.log").open("w")
    hook_out = tmp_path / "hook.jsonl"
    (tmp_path / "hook.py").write_text(HOOK)
    notify = NotifySettings(
        events=frozenset({EventKind.FAILED}),
        command=(sys.executable, str(tmp_path / "hook.py"), str(hook_out)),
        terminal=False,
    )
    watcher = Watcher(Service(state_dir=tmp_path / "state"), notify, log=log)
    handle = RunHandle(
        run_id="broke-20260101T000000Z-abcdef",
        backend="local",
        job="broke",
        project=str(tmp_path),
        submitted_at=dt.datetime.now(dt.UTC),
        settings={},
        details={},
    )
    recorded = threading.Event()
    append = watcher.events.append

    def append_slowly(event: object) -> None:  # the stop comes between recording and queueing
        append(event)  # type: ignore[arg-type]
        recorded.set()
        time.sleep(0.5)

    monkeypatch.setattr(watcher.events, "append", append_slowly)
    watcher.start()
    seen = threading.Thread(
        target=watcher.on_state_changed, args=(handle, RunState.FAILED, RunState.RUNNING)
    )
    seen.start()
    assert recorded.wait(30)
    watcher.stop()  # waits for the deliveries queued
    seen.join()
    log.close()
    lines = hook_out.read_text().splitlines() if hook_out.exists() else []
    assert [json.loads(line) for line in lines] == [[handle.run_id, "failed"]]
