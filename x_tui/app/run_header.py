"""The run screen's header: the run's state as a badge, its id and how long it has run (or ran),
then its progress, GPU use, cost so far and flags; job, backend, submission time and age; the
provider's details; and a notice line (a status or log-stream failure). What matters most comes
first on the first line, so a narrow terminal cuts the rest.

Every string from the run goes through ``safe_text``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import ClassVar

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from x_tui.compute.backend import RunState
from x_tui.compute.guard_book import GuardBook
from x_tui.compute.run_endings import EndingBook
from x_tui.compute.store import RunHandle
from x_tui.widgets.run_states import STATE_COMPONENTS, state_css, state_styles
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.spec_view import format_seconds

BADGE = Style(bold=True, reverse=True)
"""What turns a state's colour into a badge."""


class RunHeader(Static):
    """The run screen's header; its state badge takes its colour from the theme.

    The badge is the state's component class (``x_tui.widgets.run_states``) shown reversed.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = set(STATE_COMPONENTS)
    DEFAULT_CSS = state_css("RunHeader")

    def badge_style(self, state: RunState | None) -> Style:
        """The style of the badge of ``state``, as the theme has it now."""
        return state_styles(self).of(state) + BADGE


def utc_now() -> dt.datetime:
    """Now, in UTC (the run screen's default clock)."""
    return dt.datetime.now(dt.UTC)


def watch_text(
    *,
    progress: str | None,
    gpu_percent: float | None,
    cost_usd: float | None,
    flags: tuple[str, ...],
) -> Text:
    """``45% ETA 5m · GPUs 97% · $1.20 so far · ⚠ silent 14 min, GPUs 0%``, what is known of it."""
    parts: list[Text] = []
    if progress is not None:
        parts.append(Text(progress, style="bold"))
    if gpu_percent is not None:
        parts.append(Text(f"GPUs {gpu_percent:.0f}%"))
    if cost_usd is not None:
        parts.append(Text(f"${cost_usd:,.2f} so far"))
    if flags:
        parts.append(safe_text("⚠ " + "; ".join(flags), "bold black on dark_orange"))
    return Text(" · ").join(parts)


def guard_text(state_dir: Path, run_id: str) -> Text | None:
    """``budget $5.00, 2h · over budget: cost $5.01 of $5.00 · resubmitted as <run>``: the
    run's guard and why it ended, from x-tui's side files (blocking: read it in a worker);
    ``None`` when there is nothing to say."""
    guard = GuardBook(state_dir).load(run_id)
    ending = EndingBook(state_dir).load(run_id)
    parts: list[Text] = []
    if guard.has_budget:
        parts.append(Text(guard.budget_text()))
    if ending is not None:
        parts.append(safe_text(f"{ending.state}: {ending.reason}", "bold"))
    if guard.resubmitted_from is not None:
        parts.append(safe_text(f"resubmission of {guard.resubmitted_from}"))
    if guard.resubmitted_as is not None:
        parts.append(safe_text(f"resubmitted as {guard.resubmitted_as}", "bold"))
    return Text(" · ").join(parts) if parts else None


def header_renderable(
    handle: RunHandle,
    state: RunState | None,
    *,
    now: dt.datetime,
    ended_at: dt.datetime | None,
    notice: Text | None = None,
    settings_note: str | None = None,
    watch: Text | None = None,
    badge: Style | None = None,
    guard: Text | None = None,
) -> Group:
    """The run's header: state, id and duration; job, backend, submission time, age; details.

    Args:
        handle: The run.
        state: Its state, or ``None`` before its backend has answered.
        now: The time the age and a running run's duration are measured to.
        ended_at: When a finished run ended, if known.
        notice: A line to add below (a status or log-stream failure).
        settings_note: Where the run's backend settings come from, when that is worth saying
            (a substrax 0.1.x handle: from the project), shown after the details.
        watch: The run's progress, GPU use, cost so far and flags, after its id.
        badge: The state badge's style (:meth:`RunHeader.badge_style`); plain reversed if
            ``None``.
        guard: The run's budget, why it ended and its resubmission links (:func:`guard_text`),
            a line of its own below the details.

    Returns:
        The header's lines, each cut to the width rather than wrapped.
    """
    label = f" {state.value if state is not None else 'checking…'} "
    first = Text(label, style=badge if badge is not None else BADGE)
    first.append(" ")
    first.append_text(safe_text(handle.run_id, "bold"))
    submitted = handle.submitted_at
    if state is not None and state.is_final:
        if ended_at is not None:
            first.append(f" · took {format_seconds((ended_at - submitted).total_seconds())}")
    elif state is not None:
        first.append(f" · running for {format_seconds((now - submitted).total_seconds())}")
    if watch is not None and watch.plain:
        first.append(" · ")
        first.append_text(watch)
    second = Text("job ")
    second.append_text(safe_text(handle.job, "bold"))
    second.append(" · ")
    second.append_text(safe_text(handle.backend, "bold"))
    second.append(f" · submitted {_moment_text(submitted)}")
    second.append(f" ({format_seconds((now - submitted).total_seconds())} ago)", style="dim")
    details = Text(style="dim")
    for index, (key, value) in enumerate(sorted(handle.details.items())):
        if index:
            details.append(" · ")
        details.append_text(safe_text(f"{key} {value}"))
    if not handle.details:
        details = Text("no provider details", "dim")
    if settings_note is not None:
        details.append(" · ")
        details.append_text(safe_text(settings_note))
    lines = [first, second, details]
    if guard is not None:
        lines.append(guard)
    if notice is not None:
        lines.append(notice)
    for line in lines:
        line.no_wrap = True
        line.overflow = "ellipsis"
    return Group(*lines)


def _moment_text(moment: dt.datetime) -> str:
    """A moment in UTC, or with its own offset where UTC cannot hold it (year 1 or 9999)."""
    try:
        return f"{moment.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S}Z"
    except OverflowError:
        return f"{moment:%Y-%m-%d %H:%M:%S%z}"
