"""Where the user was in the TUI, kept in ``<state>/x-tui/view.json`` so a new session reopens it.

The view is the main screen's (its pane, runs filter and highlighted run) with, when a run screen
is open, that screen's (the run, its tab, the combined log's line, filter and search).

The app writes the file as the view changes (:mod:`x_tui.app.view_keeper`), so a session that
ends without warning (a dropped SSH link, SIGHUP) leaves it as it last was. The file is read with
a size bound and every field checked; anything unexpected is dropped field by field (a damaged
file reopens the main screen, never an error).

This module imports no Textual.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from x_tui.compute.worker.records import write_atomic

if TYPE_CHECKING:  # loaded with the first query kept or read back: not at start-up
    from x_tui.compute.logindex_search import SearchQuery

VIEW_NAME = "view.json"
MAX_VIEW_BYTES = 64 * 1024
MAX_QUERY_CHARS = 1000
MAX_RUN_ID_CHARS = 200

AWAY_ITEMS = 6
"""How many runs the "while you were away" line names and numbers (its keys are ``1`` to this)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ViewState:
    """What the user looked at.

    Attributes:
        screen: ``"main"`` or ``"run"``.
        run_id: The run shown on the run screen (``None`` on the main screen).
        tab: The run screen's tab id (``tab-log``, ``tab-manifest``...).
        log_top: The combined log's top line; ``None`` while it follows the end.
        log_filter: Its filter, if any.
        log_search: Its search, if any.
        pane: The main screen's pane in front, ``"jobs"`` or ``"runs"``.
        selected_run: The run highlighted in the main screen's runs table.
        runs_filter: The main screen's runs filter, if any.
        seen_at: When the user last looked (epoch seconds): the "while you were away" line lists
            what happened after it.
    """

    screen: str = "main"
    run_id: str | None = None
    tab: str | None = None
    log_top: int | None = None
    log_filter: SearchQuery | None = None
    log_search: SearchQuery | None = None
    pane: str | None = None
    selected_run: str | None = None
    runs_filter: str | None = None
    seen_at: float = 0.0

    def same_place(self, other: ViewState) -> bool:
        """Whether ``other`` is the same view (whenever it was seen)."""
        return _place(self) == _place(other)


def _place(view: ViewState) -> tuple[object, ...]:
    return (
        view.screen,
        view.run_id,
        view.tab,
        view.log_top,
        view.log_filter,
        view.log_search,
        view.pane,
        view.selected_run,
        view.runs_filter,
    )


def view_path(state_dir: Path) -> Path:
    """The view file of ``state_dir``."""
    return state_dir / "x-tui" / VIEW_NAME


def write_view(state_dir: Path, view: ViewState) -> None:
    """Replace the view file (atomically).

    Raises:
        OSError: If it cannot be written.
    """
    path = view_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(view)
    write_atomic(path, json.dumps(data, ensure_ascii=True, sort_keys=True) + "\n")


def read_view(state_dir: Path) -> ViewState | None:
    """The view last kept, or ``None`` when there is none that can be read."""
    try:
        with open(view_path(state_dir), "rb") as stream:
            if os.fstat(stream.fileno()).st_size > MAX_VIEW_BYTES:
                return None
            data = json.loads(stream.read(MAX_VIEW_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    screen = "run" if data.get("screen") == "run" else "main"
    seen_at = data.get("seen_at")
    run_id = _text(data.get("run_id"), MAX_RUN_ID_CHARS)
    selected = _text(data.get("selected_run"), MAX_RUN_ID_CHARS)
    if screen == "main" and selected is None:
        selected = run_id  # a file from before the main screen's view was kept
    pane = data.get("pane")
    return ViewState(
        screen=screen,
        run_id=run_id if screen == "run" else None,
        tab=_text(data.get("tab"), 100),
        log_top=_line(data.get("log_top")),
        log_filter=_query(data.get("log_filter")),
        log_search=_query(data.get("log_search")),
        pane=pane if pane in ("jobs", "runs") else None,
        selected_run=selected,
        runs_filter=_text(data.get("runs_filter"), MAX_QUERY_CHARS),
        seen_at=float(seen_at)
        if isinstance(seen_at, (int, float))
        and not isinstance(seen_at, bool)
        and math.isfinite(seen_at)
        else 0.0,
    )


def _text(value: object, limit: int) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def _line(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _query(value: object) -> SearchQuery | None:
    if not isinstance(value, dict):
        return None
    text = _text(value.get("text"), MAX_QUERY_CHARS)
    regex = value.get("regex")
    ignore_case = value.get("ignore_case")
    if text is None or not isinstance(regex, bool) or not isinstance(ignore_case, bool):
        return None
    from x_tui.compute.logindex_search import SearchQuery

    return SearchQuery(text=text, regex=regex, ignore_case=ignore_case)
