"""Notifications: the ``[notify]`` settings, Apprise against a local webhook, once per event."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from x_tui.app.notify import DeliveredEvents, deliver_once, notification_line, wanted
from x_tui.app.notify_settings import NotifySettings
from x_tui.app.settings import load_settings
from x_tui.app.watch_events import EventKind, EventLog, RunEvent
from x_tui.compute.backend import RunState


class _Webhook:
    """A JSON webhook on 127.0.0.1 that keeps every payload posted to it."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, object]] = []
        received = self.payloads

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/"


@pytest.fixture
def webhook() -> Iterator[_Webhook]:
    hook = _Webhook()
    thread = threading.Thread(target=hook.server.serve_forever, daemon=True)
    thread.start()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


def _event(run_id: str, kind: EventKind, *, reason: str = "", duration: float = 5.0) -> RunEvent:
    return RunEvent(
        event_id=f"{run_id}:{kind.value}",
        at=1_800_000_000.0,
        run_id=run_id,
        job="train",
        kind=kind,
        reason=reason,
        duration=duration,
    )


def test_apprise_delivers_each_event_once_to_a_local_json_webhook(
    webhook: _Webhook, tmp_path: Path
) -> None:
    settings = NotifySettings(urls=(webhook.url,))
    failed = _event("train-20261201-000000-aaaaaa", EventKind.FAILED, reason="exit status 3")
    preempted = _event("train-20261201-000001-bbbbbb", EventKind.PREEMPTED)
    # The watcher and an open TUI each hold their own record of the same state directory.
    watcher_side = DeliveredEvents(tmp_path)
    tui_side = DeliveredEvents(tmp_path)
    for delivered in (watcher_side, tui_side, DeliveredEvents(tmp_path)):
        for event in (failed, preempted):
            deliver_once(event, settings, delivered)

    bodies = sorted(str(payload["message"]) for payload in webhook.payloads)
    assert bodies == [
        "x-tui: run train-20261201-000000-aaaaaa (train) failed: exit status 3",
        "x-tui: run train-20261201-000001-bbbbbb (train) preempted",
    ]


def test_a_notification_is_one_sanitised_line() -> None:
    event = _event("train-20261201-000000-aaaaaa", EventKind.FAILED, reason="bad\n\x1b]0;pwn\x07x")
    line = notification_line(event)
    for control in ("\n", "\x1b", "\x07"):
        assert control not in line
    assert line.startswith("x-tui: run train-20261201-000000-aaaaaa (train) failed: bad")


def test_success_is_announced_only_after_a_long_run_by_default() -> None:
    settings = NotifySettings()
    run = "train-20261201-000000-aaaaaa"
    assert not wanted(settings, _event(run, EventKind.SUCCEEDED, duration=60.0))
    assert wanted(settings, _event(run, EventKind.SUCCEEDED, duration=11 * 60.0))
    assert wanted(settings, _event(run, EventKind.FAILED, duration=1.0))
    assert not wanted(settings, _event(run, EventKind.CANCELLED))


def test_the_notify_table_is_read_and_each_bad_value_named(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[notify]\n"
        'events = ["failed", "preempted"]\n'
        'command = ["notify-send", "x-tui"]\n'
        'urls = ["ntfy://topic"]\n'
        "terminal = false\n"
    )
    notify = load_settings(config).notify
    assert notify.events == {EventKind.FAILED, EventKind.PREEMPTED}
    assert notify.command == ("notify-send", "x-tui")
    assert notify.urls == ("ntfy://topic",)
    assert notify.terminal is False

    config.write_text('[notify]\nevents = ["exploded"]\ncommand = "rm -rf ~"\nsound = 1\n')
    settings = load_settings(config)
    assert settings.notify == NotifySettings()
    assert len(settings.problems) == 3
    assert all(str(config) in problem for problem in settings.problems)
    assert any(
        "[notify] command" in problem and "never a shell string" in problem
        for problem in settings.problems
    )


def test_a_damaged_events_file_costs_only_its_damaged_lines(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    first = _event("train-20261201-000000-aaaaaa", EventKind.RUNNING)
    log.append(first)
    with open(log.path, "ab") as stream:
        stream.write(b'{"kind": "failed"}\n\xff\xfe garbage\n[1, 2]\n')
    second = _event("train-20261201-000000-aaaaaa", EventKind.FAILED)
    log.append(second)
    assert log.read() == [first, second]
    assert log.last_kinds() == {"train-20261201-000000-aaaaaa": EventKind.FAILED}


def test_the_terminal_notification_suits_the_terminal() -> None:
    from x_tui.app.run_notices import terminal_sequence

    line = "x-tui: run r (train) failed"
    assert terminal_sequence(line, {"TERM_PROGRAM": "iTerm.app"}) == f"\x1b]9;{line}\x1b\\"
    assert terminal_sequence(line, {"VTE_VERSION": "7600"}) == (
        f"\x1b]777;notify;x-tui;{line}\x1b\\"
    )
    # tmux would swallow an OSC; an unknown terminal gets the bell.
    assert terminal_sequence(line, {"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/t,1,0"}) == "\a"
    assert terminal_sequence(line, {"TERM": "xterm-256color"}) == "\a"


def test_an_event_ends_the_run_exactly_when_its_state_is_final() -> None:
    final = {kind for kind in EventKind if kind.is_final}
    assert final == {EventKind(state.value) for state in RunState if state.is_final}
    assert final == {
        EventKind.SUCCEEDED,
        EventKind.FAILED,
        EventKind.CANCELLED,
        EventKind.PREEMPTED,
    }
