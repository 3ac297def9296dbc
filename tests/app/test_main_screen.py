"""The main screen against a real store and the real local backend."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.compute.backend import RunState
from x_tui.widgets.problem_panel import ProblemPanel

from .app_support import (
    QUICK_JOB,
    jobs_shown,
    make_app,
    pyproject_text,
    save_handle,
    screen_text,
    submit_with_cli,
)

EARLIER = dt.datetime(2026, 9, 19, 12, 0, 0, tzinfo=dt.UTC)


@asynchronous
async def test_the_app_opens_with_the_job_browser_focused_on_the_first_job(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        browser = app.main_screen.jobs
        await wait_until(pilot, lambda: browser.job_names == ("quick", "second"), "the jobs")
        assert app.focused is browser.option_list
        assert browser.highlighted_job == "quick"
        await wait_until(pilot, lambda: "hello  python -c" in screen_text(app), "quick's task")


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("x_tui.app.submit_screen") is None,
    reason="the submit screen is not in this tree yet",
)
@asynchronous
async def test_enter_enter_submits_the_first_job(state_dir: Path, project: Path) -> None:
    from x_tui.app.submit_screen import SubmitScreen

    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        browser = app.main_screen.jobs
        await wait_until(pilot, lambda: browser.highlighted_job == "quick", "the first job")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SubmitScreen), "the submit screen")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(app.monitor.stored.handles) == 1, "the new run")
        [handle] = app.monitor.stored.handles
        assert handle.job == "quick"
        assert handle.backend == "local"
        await wait_until(
            pilot,
            lambda: app.monitor.state_of(handle.run_id) is RunState.SUCCEEDED,
            "the run to succeed",
        )


@pytest.mark.slow
@asynchronous
async def test_a_run_the_cli_submits_from_another_process_appears_and_succeeds(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await jobs_shown(pilot)
        assert table.row_count == 0
        run_id = submit_with_cli(project, "quick")
        await wait_until(pilot, lambda: run_id in table.rows, "the CLI's run in the table")
        await wait_until(
            pilot,
            lambda: (
                app.monitor.state_of(run_id) is RunState.SUCCEEDED
                and "✓ succeeded" in screen_text(app)
            ),
            "the run to show as succeeded",
        )
        assert run_id in screen_text(app)

        from x_tui.app.run_screen import RunScreen

        await pilot.press("tab", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run's screen")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main_screen, "the main screen")


@asynchronous
async def test_a_run_comes_into_a_state_filter_when_it_reaches_that_state(
    state_dir: Path, project: Path
) -> None:
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await jobs_shown(pilot)
        await pilot.press("tab", "slash", *"succeeded", "enter")
        await wait_until(pilot, lambda: table.filter_text == "succeeded", "the filter")
        run_id = submit_with_cli(project, "quick")
        await wait_until(pilot, lambda: len(app.monitor.stored.handles) == 1, "the CLI's run")
        if app.monitor.state_of(run_id) is not RunState.SUCCEEDED:
            assert run_id not in table.rows  # pending or running: not what the filter asks for
        await wait_until(pilot, lambda: run_id in table.rows, "the run once it succeeded")
        assert app.monitor.state_of(run_id) is RunState.SUCCEEDED
        assert "Runs · 1 of 1 matching succeeded" in screen_text(app)


@asynchronous
async def test_editing_pyproject_reloads_the_job_browser(state_dir: Path, project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        browser = app.main_screen.jobs
        await wait_until(pilot, lambda: browser.job_names == ("quick", "second"), "the jobs")
        added = """
[tool.substrax.compute.jobs.added-later]
timeout_seconds = 30
commands = { late = ["python", "-c", "print('I was added while x-tui was open')"] }
"""
        (project / "pyproject.toml").write_text(pyproject_text(QUICK_JOB + added), encoding="utf-8")
        await wait_until(
            pilot, lambda: browser.job_names == ("quick", "added-later"), "the edited jobs"
        )


@asynchronous
async def test_a_broken_config_shows_the_problem_panel_and_the_runs_still_list(
    state_dir: Path, project: Path
) -> None:
    save_handle(
        state_dir,
        run_id="older-20260919T120000Z-0a0b0c",
        job="older",
        submitted_at=EARLIER,
        project=str(project),
    )
    (project / "pyproject.toml").write_text(
        pyproject_text(QUICK_JOB).replace('backend = "local"', 'backend = "local"\nbakend = 1'),
        encoding="utf-8",
    )
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.main_screen.query_one(ProblemPanel)
        await wait_until(
            pilot, lambda: "Configuration problem" in screen_text(app), "the problem panel"
        )
        shown = screen_text(app)
        assert "pyproject.toml" in shown
        assert "'bakend'" in shown
        assert app.main_screen.jobs.job_names == ()
        table = app.main_screen.runs
        await wait_until(
            pilot, lambda: "older-20260919T120000Z-0a0b0c" in table.rows, "the stored run"
        )
        assert "older-20260919T120000Z-0a0b0c" in screen_text(app)

        (project / "pyproject.toml").write_text(pyproject_text(QUICK_JOB), encoding="utf-8")
        await wait_until(pilot, lambda: panel.problem is None, "the fixed config")
        await wait_until(pilot, lambda: app.main_screen.jobs.job_names == ("quick",), "jobs")
        await wait_until(
            pilot, lambda: "Configuration problem" not in screen_text(app), "the panel hidden"
        )
        assert not panel.display


@asynchronous
async def test_outside_a_project_the_runs_are_listed_and_the_empty_job_list_explained(
    state_dir: Path,
) -> None:
    save_handle(
        state_dir, run_id="older-20260919T120000Z-0a0b0c", job="older", submitted_at=EARLIER
    )
    app = make_app(None)
    async with app.run_test(size=(200, 40)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 1, "the stored run")
        await wait_until(pilot, lambda: "No jobs here" in screen_text(app), "the explanation")
        shown = screen_text(app)
        assert "no pyproject.toml in this directory or any above it" in shown


@asynchronous
async def test_outside_a_project_at_80x24_the_app_opens_on_the_runs_and_tab_says_why(
    state_dir: Path,
) -> None:
    save_handle(
        state_dir, run_id="older-20260919T120000Z-0a0b0c", job="older", submitted_at=EARLIER
    )
    app = make_app(None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 1, "the stored run")
        assert table.has_focus
        shown = screen_text(app)
        assert "older-20260919T120000Z-0a0b0c" in shown
        assert "no project here" in shown
        await pilot.press("tab")
        await wait_until(pilot, lambda: "No jobs here" in screen_text(app), "the reason")


@asynchronous
async def test_an_unreadable_record_is_listed_with_its_reason(state_dir: Path) -> None:
    runs = state_dir / "compute" / "runs"
    runs.mkdir(parents=True)
    (runs / "broken-20260919T120000Z-abcdef.json").write_text("{not json", encoding="utf-8")
    old = save_handle(
        state_dir,
        run_id="fine-20260919T110000Z-fedcba",
        job="fine",
        submitted_at=EARLIER - dt.timedelta(hours=1),
    )
    app = make_app(None)
    async with app.run_test(size=(200, 40)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 2, "both records")
        assert table.highlighted_key() is not None
        assert table.highlighted_key().endswith("broken-20260919T120000Z-abcdef.json")
        shown = screen_text(app)
        assert "✗ unreadable" in shown
        assert "not JSON" in shown
        assert old.run_id in shown


@pytest.mark.slow
@asynchronous
async def test_markup_in_names_and_messages_renders_literally(
    state_dir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "markup"
    root.mkdir()
    jobs = """
[tool.substrax.compute.jobs."[/x]"]
timeout_seconds = 10
commands = { a = ["true"] }

[tool.substrax.compute.jobs."[@click=app.quit]quit"]
timeout_seconds = 10
commands = { a = ["true"] }
"""
    (root / "pyproject.toml").write_text(pyproject_text(jobs), encoding="utf-8")
    save_handle(
        state_dir,
        run_id="odd-20260919T120000Z-123abc",
        job="[/x]",
        backend="[@click=app.quit]",
        submitted_at=EARLIER,
        project="[b]not bold[/b]",
    )
    app = make_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.main_screen.runs
        table.action_toggle_project()  # the run claims another project: show every project's
        await wait_until(pilot, lambda: table.row_count == 1, "the odd run")
        await wait_until(
            pilot,
            lambda: app.main_screen.jobs.job_names == ("[/x]", "[@click=app.quit]quit"),
            "the odd jobs",
        )
        await wait_until(pilot, lambda: "? unknown" in screen_text(app), "the backend's refusal")
        shown = screen_text(app)
        assert "[/x]" in shown
        assert "[@click=app.quit]quit" in shown
        table.focus()
        await pilot.pause()
        assert "[@click=app.quit]" in screen_text(app)
        assert "'[@click=app.quit]';" in screen_text(app)
        for x in range(1, table.region.width, 3):
            await pilot.click(table, offset=(x, 1))
        await pilot.pause()
        assert app.is_running


@asynchronous
async def test_slash_filters_the_runs_and_escape_brings_them_back(state_dir: Path) -> None:
    for hour, job in ((9, "train"), (10, "evaluate"), (11, "train")):
        save_handle(
            state_dir,
            run_id=f"{job}-20260919T{hour:02d}0000Z-abc{hour:03d}",
            job=job,
            submitted_at=EARLIER.replace(hour=hour),
        )
    app = make_app(None)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 3, "the runs")
        await pilot.press("slash", *"eval")
        await wait_until(pilot, lambda: table.row_count == 1, "the filtered runs")
        assert "evaluate-20260919T100000Z-abc010" in table.rows
        assert "1 of 3 matching eval" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: table.row_count == 3, "every run again")
        assert app.focused is table


@asynchronous
async def test_question_mark_shows_the_keys_of_the_main_screen(
    state_dir: Path, project: Path
) -> None:
    from x_tui.app.help_screen import HelpScreen

    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.main_screen.jobs.job_names != (), "the jobs")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        shown = screen_text(app)
        assert "Switch pane" in shown
        assert "Filter runs" in shown
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main_screen, "the main screen")


@asynchronous
async def test_a_new_run_arrives_at_the_top_and_takes_a_cursor_that_was_there(
    state_dir: Path,
) -> None:
    save_handle(
        state_dir, run_id="older-20260919T120000Z-0a0b0c", job="older", submitted_at=EARLIER
    )
    app = make_app(None, poll=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 1, "the stored run")
        save_handle(
            state_dir,
            run_id="newer-20260919T130000Z-0d0e0f",
            job="newer",
            submitted_at=EARLIER + dt.timedelta(hours=1),
        )
        await wait_until(pilot, lambda: table.row_count == 2, "the new run")
        assert table.get_row_index("newer-20260919T130000Z-0d0e0f") == 0
        assert table.highlighted_key() == "newer-20260919T130000Z-0d0e0f"
        table.move_cursor(row=1)
        save_handle(
            state_dir,
            run_id="newest-20260919T140000Z-0a0a0a",
            job="newest",
            submitted_at=EARLIER + dt.timedelta(hours=2),
        )
        await wait_until(pilot, lambda: table.row_count == 3, "the newest run")
        assert table.get_row_index("newest-20260919T140000Z-0a0a0a") == 0
        assert table.highlighted_key() == "older-20260919T120000Z-0a0b0c"


@asynchronous
async def test_the_jobs_pane_gives_way_to_the_runs_columns_down_to_its_least_width(
    state_dir: Path,
) -> None:
    from x_tui.app.main_screen import JOBS_LEAST

    def jobs_width() -> int:
        return app.main_screen.query_one("#jobs-pane").outer_size.width

    save_handle(
        state_dir,
        run_id="train-20260919T090000Z-abc001",
        job="train",
        submitted_at=EARLIER,
        project="/home/user/vision",
    )
    app = make_app(None)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.main_screen.runs
        await wait_until(pilot, lambda: table.row_count == 1, "the run")
        # Every column of the run is on the screen: none cut off on the right.
        await wait_until(
            pilot,
            lambda: table.virtual_size.width <= table.scrollable_content_region.width,
            "the runs pane as wide as its columns",
        )
        assert "Backend" in screen_text(app)
        assert JOBS_LEAST < jobs_width() < 40  # (a third of the screen)
        # A run of a longer job and project: the jobs pane gives way down to its least width.
        save_handle(
            state_dir,
            run_id="evaluate-on-held-out-set-20260919T100000Z-abc002",
            job="evaluate-on-held-out-set",
            submitted_at=EARLIER.replace(hour=10),
            project="/home/user/vision-transformer-pretraining",
        )
        await wait_until(pilot, lambda: table.row_count == 2, "the second run")
        await wait_until(pilot, lambda: jobs_width() == JOBS_LEAST, "the jobs pane at its least")
        # Still too narrow: the Backend column gives way, rather than be cut off at the edge.
        await wait_until(pilot, lambda: "backend" not in table.columns, "Backend giving way")
        assert table.virtual_size.width <= table.scrollable_content_region.width
        # Wider, the runs pane takes its columns' width; narrower again, the least holds.
        await pilot.resize_terminal(200, 40)
        await wait_until(pilot, lambda: "backend" in table.columns, "every column at 200 columns")
        assert table.virtual_size.width <= table.scrollable_content_region.width
        await pilot.resize_terminal(125, 40)
        await wait_until(pilot, lambda: jobs_width() == JOBS_LEAST, "the least at 125 columns")
