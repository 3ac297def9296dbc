"""The view keeper of an idle app: nothing is compared while nothing can change the view, yet a key,
a run that moves the highlight, and the "still looking" write are each kept as before."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app import view_keeper
from x_tui.app.view_keeper import capture
from x_tui.app.view_state import ViewState, read_view
from x_tui.compute.backend import RunState

from .app_support import keep_final_states, make_app, save_handle

OLDER, NEWER, NEWEST = (
    "quick-20261201T000000Z-aaaaaa",
    "quick-20261201T010000Z-bbbbbb",
    "quick-20261201T020000Z-cccccc",
)


def _kept(state_dir: Path) -> ViewState:
    view = read_view(state_dir)
    assert view is not None, "no view written"
    return view


@pytest.mark.slow
@asynchronous
async def test_an_idle_main_screen_compares_nothing_and_keys_runs_and_time_are_still_kept(
    state_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    for hour, run_id in enumerate((OLDER, NEWER)):
        save_handle(
            state_dir,
            run_id=run_id,
            job="quick",
            submitted_at=day + dt.timedelta(hours=hour),
            project=str(project),
        )
    keep_final_states(
        state_dir, {OLDER: (RunState.SUCCEEDED, 10.0), NEWER: (RunState.FAILED, 20.0)}
    )
    monkeypatch.setattr(view_keeper, "SETTLE_SECONDS", 0.3)
    monkeypatch.setattr(view_keeper, "SEEN_EVERY", 1000.0)
    compared: list[float] = []

    def counted(app: object, *, now: float) -> ViewState | None:
        compared.append(now)
        return capture(app, now=now)  # type: ignore[arg-type]

    monkeypatch.setattr(view_keeper, "capture", counted)
    app = make_app(project, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = app.main_screen
        await wait_until(pilot, lambda: main.runs.shown_count == 2, "both runs listed")
        await pilot.press("tab")  # the runs pane, the newest run highlighted
        await wait_until(
            pilot,
            lambda: (
                (view := read_view(state_dir)) is not None
                and (view.pane, view.selected_run) == ("runs", NEWER)
            ),
            "the runs pane kept",
        )
        # Left alone, nothing is compared (the keeper used to look twice a second).
        await pilot.pause(view_keeper.SETTLE_SECONDS + 2 * view_keeper.TICK_SECONDS)
        compared.clear()
        await pilot.pause(4 * view_keeper.TICK_SECONDS)
        assert compared == []

        # A key wakes it: the run highlighted now is kept (no other write is due for 1000 s).
        await pilot.press("down")
        await wait_until(
            pilot, lambda: _kept(state_dir).selected_run == OLDER, "the key's run kept"
        )

        # A run that moves the highlight with no key pressed (the cursor on the newest run stays
        # on the newest) is kept too: the monitor's event woke the keeper.
        await pilot.press("home")
        await wait_until(pilot, lambda: _kept(state_dir).selected_run == NEWER, "back on top")
        await pilot.pause(view_keeper.SETTLE_SECONDS + 2 * view_keeper.TICK_SECONDS)
        save_handle(
            state_dir,
            run_id=NEWEST,
            job="quick",
            submitted_at=day + dt.timedelta(hours=2),
            project=str(project),
        )
        await wait_until(
            pilot, lambda: _kept(state_dir).selected_run == NEWEST, "the new run's place kept"
        )

        # An unchanged view is still written now and then, to say the user is still looking.
        monkeypatch.setattr(view_keeper, "SEEN_EVERY", 1.0)
        await pilot.press("end", "home")  # a key, so the shorter wait is taken up
        await pilot.pause(view_keeper.SETTLE_SECONDS + 2 * view_keeper.TICK_SECONDS)
        seen = _kept(state_dir).seen_at
        compared.clear()
        await wait_until(pilot, lambda: _kept(state_dir).seen_at > seen, "seen again")
        assert _kept(state_dir).selected_run == NEWEST
        assert 1 <= len(compared) <= 2  # when the write is due, not twice a second
