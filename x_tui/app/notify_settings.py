"""The ``[notify]`` table of the user's settings: which run events to hear of, and how.

```toml
[notify]
events = ["failed", "stalled", "succeeded"]   # default; succeeded only after a long run
succeeded_after_minutes = 10                  # a shorter successful run is not announced
command = ["notify-send", "x-tui"]            # argv, run with X_TUI_RUN_ID, X_TUI_JOB,
                                              # X_TUI_STATE, X_TUI_REASON, X_TUI_COST set
urls = ["ntfy://my-topic", "json://127.0.0.1:8080/"]   # Apprise URLs
terminal = true                               # in an open TUI: a toast and OSC 9/777 (or BEL)
start_watcher = false                         # a TUI submit starts `x-tui watch --detach`
```

Read headless (the watcher reads it); standard library only. A value of the wrong type keeps the
default and is reported, naming the file and the key, like every other setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from x_tui.app.watch_events import NOTIFIABLE, EventKind

DEFAULT_EVENTS = frozenset({EventKind.FAILED, EventKind.STALLED, EventKind.SUCCEEDED})
"""What is announced when the settings do not say."""

DEFAULT_SUCCEEDED_AFTER = 600.0
"""Seconds a run must have run for its success to be announced, by default (10 minutes)."""

_KNOWN = ("events", "succeeded_after_minutes", "command", "urls", "terminal", "start_watcher")


@dataclass(frozen=True, kw_only=True, slots=True)
class NotifySettings:
    """How the user wants to hear of run events.

    Attributes:
        events: The kinds announced.
        succeeded_after: A ``succeeded`` event is announced only for a run that ran longer
            than this many seconds.
        command: An argv run once per announced event (``()``: none); never through a shell.
        urls: Apprise URLs each announced event is sent to.
        terminal: Whether an open TUI shows a toast and a terminal notification.
        start_watcher: Whether a submit from the TUI starts the background watcher (when none
            runs), so the run is followed after the TUI closes.
    """

    events: frozenset[EventKind] = DEFAULT_EVENTS
    succeeded_after: float = DEFAULT_SUCCEEDED_AFTER
    command: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    terminal: bool = True
    start_watcher: bool = False


def read_notify(path: Path | None, value: object, problems: list[str]) -> NotifySettings:
    """Read the ``[notify]`` table ``value`` of the settings file ``path``.

    Args:
        path: The settings file, for messages.
        value: The table as parsed.
        problems: Gets one line per unusable key or value, naming the file and the key.

    Returns:
        The settings, with the default of whatever could not be used.
    """
    if not isinstance(value, dict):
        problems.append(f"{path}: [notify]: expected a table, got {value!r}")
        return NotifySettings()
    events = DEFAULT_EVENTS
    succeeded_after = DEFAULT_SUCCEEDED_AFTER
    command: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    terminal = True
    start_watcher = False
    names = ", ".join(sorted(kind.value for kind in NOTIFIABLE))
    for key, item in value.items():
        where = f"{path}: [notify] {key}"
        if key == "events":
            if isinstance(item, list) and all(
                isinstance(name, str) and name in {kind.value for kind in NOTIFIABLE}
                for name in item
            ):
                events = frozenset(EventKind(name) for name in item)
            else:
                problems.append(f"{where}: expected a list of {names}, got {item!r}")
        elif key == "succeeded_after_minutes":
            if isinstance(item, (int, float)) and not isinstance(item, bool) and item >= 0:
                succeeded_after = float(item) * 60.0
            else:
                problems.append(f"{where}: expected a number of minutes >= 0, got {item!r}")
        elif key == "command":
            if (
                isinstance(item, list)
                and item
                and all(isinstance(part, str) and part and "\0" not in part for part in item)
            ):
                command = tuple(item)
            else:
                problems.append(
                    f"{where}: expected a non-empty list of arguments such as "
                    f"['notify-send', 'x-tui'] (never a shell string), got {item!r}"
                )
        elif key == "urls":
            if isinstance(item, list) and all(isinstance(url, str) and url for url in item):
                urls = tuple(item)
            else:
                problems.append(f"{where}: expected a list of Apprise URLs, got {item!r}")
        elif key in ("terminal", "start_watcher"):
            if not isinstance(item, bool):
                problems.append(f"{where}: expected true or false, got {item!r}")
            elif key == "terminal":
                terminal = item
            else:
                start_watcher = item
        else:
            problems.append(
                f"{path}: [notify]: unknown key {key!r} (accepted: {', '.join(_KNOWN)})"
            )
    return NotifySettings(
        events=events,
        succeeded_after=succeeded_after,
        command=command,
        urls=urls,
        terminal=terminal,
        start_watcher=start_watcher,
    )
