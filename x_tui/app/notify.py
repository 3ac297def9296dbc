"""Announcing run events: a shell hook, Apprise URLs, each event at most once per state directory.

Whoever sees an event first (the watcher, or an open TUI) claims it in the delivered-events
record ``<state>/x-tui/notified.jsonl`` under an exclusive ``flock`` on
``<state>/x-tui/notified.lock``; a claimed event is never announced again, by that process or
any other, across restarts. The claim is made before the delivery, so a process killed halfway
loses that announcement rather than repeating it.

The hook is an argv (never a shell string): it gets the event in ``X_TUI_RUN_ID``,
``X_TUI_JOB``, ``X_TUI_STATE``, ``X_TUI_REASON`` and ``X_TUI_COST``, with a deadline. Apprise is
imported only when a URL is configured. Every text leaves here as :func:`notification_line`:
one sanitised line.

This module imports no Textual.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from x_tui.app.notify_settings import NotifySettings
from x_tui.app.watch_events import EventKind, RunEvent
from x_tui.compute.sanitize import plain

HOOK_SECONDS = 30.0
"""How long the hook may run before it is killed."""

MAX_LINE_CHARS = 300
"""The longest notification line."""

DELIVERED_NAME = "notified.jsonl"
DELIVERED_LOCK_NAME = "notified.lock"
DELIVERED_READ_LIMIT = 16 * 1024 * 1024
"""How much of the delivered-events record is read at most (a quarter of a million events)."""


def wanted(settings: NotifySettings, event: RunEvent) -> bool:
    """Whether the user asked to hear of ``event``."""
    if event.kind not in settings.events:
        return False
    if event.kind is EventKind.SUCCEEDED:
        return event.duration is not None and event.duration > settings.succeeded_after
    return True


def notification_line(event: RunEvent) -> str:
    """The event in one sanitised line: run, job, state and reason."""
    text = f"x-tui: run {event.run_id} ({event.job}) {event.kind.value.replace('_', ' ')}"
    if event.reason:
        text += f": {event.reason}"
    if event.cost is not None:
        text += f" (cost ${event.cost:.2f})"
    line = " ".join(plain(text).split())
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def hook_environment(event: RunEvent, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The hook's environment: ``base`` (this process's by default) and the event's variables."""
    environment = dict(os.environ if base is None else base)
    environment.update(
        X_TUI_RUN_ID=event.run_id,
        X_TUI_JOB=_variable(event.job),
        X_TUI_STATE=event.kind.value,
        X_TUI_REASON=_variable(event.reason),
        X_TUI_COST="" if event.cost is None else f"{event.cost:.4f}",
    )
    return environment


def _variable(text: str) -> str:
    return " ".join(plain(text).split())[:MAX_LINE_CHARS]


class DeliveredEvents:
    """The record of events already announced from one state directory."""

    def __init__(self, state_dir: Path) -> None:
        """Use ``<state_dir>/x-tui/notified.jsonl`` and its lock file."""
        folder = state_dir / "x-tui"
        self.path = folder / DELIVERED_NAME
        self._lock_path = folder / DELIVERED_LOCK_NAME

    def claim(self, event_id: str) -> bool:
        """Record ``event_id`` as announced, unless it already is.

        Returns:
            Whether this caller claimed it (and so must announce it).

        Raises:
            OSError: If the record cannot be written (then nobody announced it).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if event_id in self._claimed():
                return False
            line = json.dumps({"id": event_id}, ensure_ascii=True) + "\n"
            with open(self.path, "a", encoding="ascii") as record:
                record.write(line)
                record.flush()
                os.fsync(record.fileno())
            return True
        finally:
            os.close(fd)

    def _claimed(self) -> set[str]:
        try:
            with open(self.path, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                stream.seek(max(0, size - DELIVERED_READ_LIMIT))
                data = stream.read(DELIVERED_READ_LIMIT)
        except FileNotFoundError:
            return set()
        claimed: set[str] = set()
        for raw in data.split(b"\n"):
            with contextlib.suppress(ValueError):
                item = json.loads(raw)
                if isinstance(item, dict) and isinstance(item.get("id"), str):
                    claimed.add(item["id"])
        return claimed


@dataclass(frozen=True, slots=True)
class Delivery:
    """What became of one announcement.

    Attributes:
        line: The notification line.
        problems: Each channel that failed, with why (empty when all went through).
    """

    line: str
    problems: tuple[str, ...] = ()


def announce(
    event: RunEvent,
    settings: NotifySettings,
    *,
    run_hook: Callable[..., subprocess.CompletedProcess[bytes]] = subprocess.run,
) -> Delivery:
    """Run the hook and send to every Apprise URL (the caller has claimed the event).

    Args:
        event: The event.
        settings: Where to announce it.
        run_hook: Runs the hook (``subprocess.run``; injectable for tests of failure paths).

    Returns:
        The line sent, and each failure (never raised: one channel failing stops no other).
    """
    line = notification_line(event)
    problems: list[str] = []
    if settings.command:
        try:
            done = run_hook(
                list(settings.command),
                env=hook_environment(event),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=HOOK_SECONDS,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as error:
            problems.append(f"command {settings.command[0]!r}: {error}")
        else:
            if done.returncode != 0:
                problems.append(f"command {settings.command[0]!r}: exit status {done.returncode}")
    if settings.urls:
        problems.extend(_apprise(settings.urls, line, event))
    return Delivery(line, tuple(problems))


def deliver_once(
    event: RunEvent, settings: NotifySettings, delivered: DeliveredEvents
) -> Delivery | None:
    """Announce ``event`` unless this state directory already has (watcher or TUI alike).

    Returns:
        What became of the announcement, or ``None`` when it was announced before.

    Raises:
        OSError: If the delivered-events record cannot be written (nothing was announced).
    """
    if not delivered.claim(event.event_id):
        return None
    return announce(event, settings)


def _apprise(urls: tuple[str, ...], line: str, event: RunEvent) -> list[str]:
    try:
        import apprise
    except ImportError as error:  # pragma: no cover - apprise is a dependency
        return [f"apprise: {error}"]
    sender = apprise.Apprise()
    problems: list[str] = []
    for url in urls:
        if not sender.add(url):
            problems.append(f"apprise: {_redacted(url)!r} is not a URL Apprise accepts")
    if len(sender) and not sender.notify(
        title=f"x-tui: {event.kind.value.replace('_', ' ')}", body=line
    ):
        problems.append("apprise: a delivery failed")
    return problems


def _redacted(url: str) -> str:
    # A URL may hold a token: name its scheme only.
    scheme, _, _ = url.partition("://")
    return f"{scheme}://…"
