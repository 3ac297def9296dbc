"""The main screen: the project's jobs beside every stored run, both live.

From about 120 columns the two panes sit side by side; below that one pane shows at a time and
``tab`` switches (the layout still works at 80x24). The job browser takes focus on open with the
first job highlighted, so ``enter`` opens its submit screen. A configuration that cannot be read
shows the problem panel in the jobs pane; the runs pane keeps working, in a project or not.

The screen owns its widgets' state: the project is read and its jobs resolved in thread workers
(which post :class:`ConfigChanged` / :class:`JobsResolved` back here), and the run monitor's
events arrive through the app's ``monitor_events`` signal, subscribed to on mount.

| Key | Action |
| --- | --- |
| ``tab`` | Switch pane. |
| ``/`` | Filter the runs (``escape`` clears the filter). |
| ``enter`` | On a job: submit it. On a run: open it. |
| ``c`` ``f`` ``r`` ``y`` ``!`` | On a run: cancel, fetch, re-run, copy its id, open a shell. |
| ``d`` | On a run that has ended: delete its record and local files (asks first). |
| ``c`` ``y`` | On a sweep's row: cancel every run of it, copy the sweep id. |
| ``ctrl+r`` | Read the project and the run store again. |

The run actions come from :data:`x_tui.app.actions.RUN_ACTIONS`.

With a large store the first screenful comes first: the newest runs (from the store index's head)
are in the first frame, the project is read once it is drawn, and the run monitor reads the rest
of the store only once both the newest runs and, in a project, its jobs are on the screen (the
reading would otherwise take the interpreter from the project's, and the jobs would show late).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.scalar import Scalar
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static

from x_tui.app import collect_garbage_from_now_on
from x_tui.app.actions import RunActionScreen, Where, run_action_bindings
from x_tui.app.app_context import context_of, monitor_of, service_of, settings_of
from x_tui.app.messages import (
    ConfigChanged,
    MonitorEvent,
    RunsChanged,
    RunStateChanged,
    RunStatusFailed,
    RunStatusRecovered,
    SweepsChanged,
)
from x_tui.compute.store import RunHandle
from x_tui.compute.sweeps import Sweep
from x_tui.widgets.first_focus import styled_with_screen
from x_tui.widgets.job_browser import JobBrowser
from x_tui.widgets.problem_panel import ProblemPanel
from x_tui.widgets.runs_table import RunsTable
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.steady_footer import SteadyFooter

if TYPE_CHECKING:  # the project is read, and the runs watched, after the first frame
    from x_tui.app.run_watch import WatchPoller
    from x_tui.compute.operations import JobList, Project

WIDE_COLUMNS = 120
"""From this many columns the two panes are shown side by side."""
JOBS_LEAST = 30
"""The fewest columns the jobs pane gives way to the runs pane's columns (side by side)."""


@dataclass
class JobsResolved(Message):
    """A worker resolved the jobs of ``project`` (posted to the main screen only).

    Attributes:
        project: The project the jobs belong to.
        jobs: Each job's spec, or why it does not resolve.
    """

    project: Project
    jobs: JobList


class MainScreen(RunActionScreen):
    """Jobs beside runs; see the module documentation."""

    HELP_TITLE = "Main screen"
    WHERE: Where = "main"
    AUTO_FOCUS = ".-outside-project #runs, .-in-project #job-list"
    """What Textual focuses once the screen is composed, before ``on_mount``: the pane that opens
    first (focusing another widget after it would restyle both subtrees before the first frame)."""
    HORIZONTAL_BREAKPOINTS = [
        (0, "-narrow"),
        (WIDE_COLUMNS, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "switch_pane", "Switch pane", id="main.switch_pane"),
        Binding("slash", "filter", "Filter runs", id="main.filter"),
        Binding("escape", "clear_filter", "Clear filter", id="main.clear_filter"),
        Binding("s", "submit", "Submit job", id="main.submit", show=False),
        *run_action_bindings("main"),
        Binding("ctrl+r", "reload", "Reload", id="main.reload", show=False),
    ]

    def __init__(self, project: Path | None, *, clock: Callable[[], float] = time.time) -> None:
        """Show the jobs of the project at ``project`` and every stored run.

        Args:
            project: The project root; ``None`` outside a project.
            clock: The current epoch time, for ages and durations (tests pass a frozen one).
        """
        super().__init__(classes="-outside-project" if project is None else "-in-project")
        self.project_root = project
        self.project: Project | None = None
        self._clock = clock
        self._watcher: WatchPoller | None = None
        self._listing_whole = False
        """Whether the last listing shown is the whole store's (not a head's)."""
        self._first_screenful: set[str] = {"runs", "jobs"} if project is not None else {"runs"}
        """What of the first screenful is not on the screen yet (see the module's docs)."""

    def compose(self) -> ComposeResult:
        """Jobs pane, runs pane, footer."""
        with Vertical(id="jobs-pane", classes="pane"):
            yield ProblemPanel(id="problem")
            yield JobBrowser(id="jobs")
        with Vertical(id="runs-pane", classes="pane"):
            yield RunsTable(
                clock=self._clock, min_refresh=settings_of(self.app).refresh_scale, id="runs"
            )
            yield Static(id="run-detail")
        yield SteadyFooter()

    def on_mount(self) -> None:
        """Title the panes, focus the jobs, show the runs read so far and read the project.

        Outside a project there is nothing to submit, so the runs pane opens first (at 80x24 the
        only pane shown); its subtitle says where the reason is.
        """
        self.query_one("#jobs-pane").border_title = self._jobs_title()
        runs_pane = self.query_one("#runs-pane")
        runs_pane.border_title = Text("Runs")
        # The pane shown, the width's class (which Textual would give at the first resize) and
        # the focus are set now, before the first frame, and styled with it: each change made
        # after it restyles, so draws again, every cell of the runs table.
        wide = self.app.size.width >= WIDE_COLUMNS
        self.update_classes(
            {"-wide": wide, "-narrow": not wide, "-show-runs": self.project_root is None},
            update=False,
        )
        if self.project_root is None:
            runs_pane.border_subtitle = Text("no project here · tab: why")
            self.set_focus(self.runs)
        else:
            self.set_focus(self.jobs.option_list)
        if self.project_root is not None:
            self.runs.set_project(str(self.project_root))
        context = context_of(self.app)
        if context is not None:
            self.runs.show_sweeps(context.monitor.sweeps)
            self._show_runs(RunsChanged(context.monitor.stored, False))
            context.monitor_events.subscribe(self, self._monitor_event)
        self.watch(self.runs, "virtual_size", self._fit_runs_pane, init=False)
        # Read, and watched, once the first frame is drawn: neither shows in it, and the modules
        # they load and the thread that reads would take the interpreter from drawing it.
        self.call_after_refresh(self._after_first_frame)

    def _update_focus_styles(
        self, focused: Widget | None = None, blurred: Widget | None = None
    ) -> None:
        """Restyle for a focus change, unless this screen's first showing will (the first focus
        comes as the screen is composed: see ``x_tui.widgets.first_focus``)."""
        if not styled_with_screen(self):
            super()._update_focus_styles(focused, blurred)

    def on_resize(self) -> None:
        """Fit the runs pane to the new width."""
        self._fit_runs_pane()

    def _fit_runs_pane(self) -> None:
        """Give the runs pane the width its table's columns take (a watched run's too), where the
        screen has it: the jobs pane gives way to it down to :data:`JOBS_LEAST` columns, so the
        runs' columns are not cut off on the right while the jobs pane has room to spare."""
        table = self.runs
        pane = self.query_one("#runs-pane")
        needed = (
            table.wanted_width + table.styles.scrollbar_size_vertical + pane.styles.gutter.width
        )
        least = min(needed, max(0, self.size.width - JOBS_LEAST))
        if pane.styles.min_width != Scalar.from_number(least):
            pane.styles.min_width = least

    def _after_first_frame(self) -> None:
        self.action_reload(store=False)
        self._load_watch()

    @work(thread=True, exclusive=True, group="runs-watch-load")
    def _load_watch(self) -> None:
        # Loaded in a thread: the watch's modules take some 30 ms to load alone, and up to
        # 0.4 s on the event loop while the rest of the store is read (each file an import opens
        # hands the interpreter to the reading thread), with keys and frames waiting behind it.
        from x_tui.app.run_watch import WATCH_SECONDS, WatchPoller

        watcher = WatchPoller(service_of(self.app))
        self.app.call_from_thread(self._start_watch, watcher, WATCH_SECONDS)

    def _start_watch(self, watcher: WatchPoller, seconds: float) -> None:
        """Poll the running runs' side files every ``seconds`` (scaled by the settings)."""
        if not self.is_attached:
            return
        self._watcher = watcher
        self.set_interval(seconds * settings_of(self.app).refresh_scale, self._poll_watch)

    # Widgets ----------------------------------------------------------------------------------

    @property
    def jobs(self) -> JobBrowser:
        """The job browser."""
        return self.query_one("#jobs", JobBrowser)

    @property
    def runs(self) -> RunsTable:
        """The runs table."""
        return self.query_one("#runs", RunsTable)

    def selected_run(self) -> RunHandle | None:
        """The highlighted run, which the run actions (``c``, ``f``, ``r``, ``y``...) act on."""
        return self.runs.highlighted_handle()

    # The view kept across sessions (x_tui.app.view_keeper) ----------------------------------

    def runs_place(self) -> tuple[str, str | None, str | None]:
        """The pane in front (``"jobs"`` or ``"runs"``), the highlighted run and the runs filter."""
        field = self._filter_if_built()
        if self.runs.has_focus or (field is not None and field.has_focus):
            pane = "runs"
        elif self.jobs.has_focus_within or self.jobs.option_list.has_focus:
            pane = "jobs"
        else:
            pane = "runs" if self.has_class("-show-runs") else "jobs"
        handle = self.selected_run()
        return (
            pane,
            handle.run_id if handle is not None else None,
            (field.value or None) if field is not None else None,
        )

    def show_runs_filter(self, text: str | None, *, pane: str | None) -> None:
        """Show the pane ``pane`` names, with the runs filtered by ``text`` (a previous
        session's)."""
        if text:
            field = self._filter_field()
            field.value = text
            field.display = True
            self.runs.set_filter(text)
            self._title_runs()
            self.refresh_bindings()
        if pane == "runs" or text:
            self._show_pane("runs")

    def highlight_run(self, run_id: str) -> bool:
        """Move the runs table's cursor to ``run_id``'s row; ``False`` when it shows no such row."""
        if not self.runs.reveal(run_id):
            return False
        self._describe_highlighted()
        return True

    def selected_sweep(self) -> tuple[Sweep, tuple[RunHandle, ...]] | None:
        """The sweep whose group row is highlighted, with its runs in the store."""
        return self.runs.highlighted_sweep()

    def _jobs_title(self) -> Text:
        if self.project_root is None:
            return Text("Jobs")
        return Text.assemble("Jobs · ", safe_text(self.project_root.name))

    # Project ----------------------------------------------------------------------------------

    def _read_project(self) -> None:
        service = service_of(self.app)
        project = service.open_project(self.project_root)
        self.post_message(ConfigChanged(project))

    def _resolve_jobs(self, project: Project) -> None:
        jobs = service_of(self.app).list_jobs(project)
        self.post_message(JobsResolved(project, jobs))

    def on_config_changed(self, message: ConfigChanged) -> None:
        """Show the project as it reads now and resolve its jobs in a worker."""
        project = message.project
        self.project = project
        config = project.config
        self.query_one(ProblemPanel).show_problem(project.problem)
        names = list(config.jobs) if config is not None else []
        reason = "No jobs (see above)." if project.problem is not None else "No jobs configured."
        self.jobs.show_jobs(names, backend=config.backend if config else None, empty_reason=reason)
        if not names:
            self.call_after_refresh(self._first_screenful_shown, "jobs")
        else:
            self.run_worker(
                lambda: self._resolve_jobs(project),
                thread=True,
                exclusive=True,
                group="jobs",
                name="resolve jobs",
                exit_on_error=False,
            )

    def on_jobs_resolved(self, message: JobsResolved) -> None:
        """Show the resolved jobs, if they belong to the project shown now."""
        if message.project is self.project:
            self.jobs.show_resolved(message.jobs)
            self.call_after_refresh(self._first_screenful_shown, "jobs")

    def _first_screenful_shown(self, part: str) -> None:
        """``part`` (``"runs"``, ``"jobs"``) of the first screenful is drawn: once all of it is,
        the run monitor reads the rest of the store."""
        if not self._first_screenful:
            return
        self._first_screenful.discard(part)
        monitor = monitor_of(self.app)
        if not self._first_screenful and monitor is not None:
            monitor.first_shown()

    # Runs -------------------------------------------------------------------------------------

    def _monitor_event(self, event: MonitorEvent) -> None:
        """Bring the panes in line with what the run monitor learned."""
        if isinstance(event, RunsChanged):
            self._show_runs(event)
        elif isinstance(event, SweepsChanged):
            self._sweeps_changed(event)
        elif isinstance(event, RunStateChanged):
            self._run_state_changed(event)
        elif isinstance(event, RunStatusFailed):
            self._run_status_failed(event)
        elif isinstance(event, RunStatusRecovered):
            self.runs.set_problem(event.run_id, None)
            self._describe_highlighted()
        else:
            self.on_config_changed(event)

    def _show_runs(self, message: RunsChanged) -> None:
        monitor = monitor_of(self.app)
        table = self.runs
        if monitor is None:
            table.show_stored(message.stored)
        else:
            # One copy of the states rather than a look under the monitor's lock per run (the
            # table keeps a change that comes while it takes a listing in slices).
            states, ended = monitor.known_states()
            table.show_stored(message.stored, states=states.get, ended=ended.get)
            self._show_problems()
            self._listing_whole = message.complete
            if message.complete and not table.taking_listing:
                collect_garbage_from_now_on()  # the whole store is in the table
            if not message.complete and message.stored.handles:
                # The newest runs are on the screen after this refresh (the rest is read once
                # the project's jobs are too).
                self.call_after_refresh(self._first_screenful_shown, "runs")
        self._title_runs()
        self._describe_highlighted()

    @on(RunsTable.Listed)
    def _runs_listed(self) -> None:
        """A listing taken in slices is in: the count, the problems and the line under it."""
        if self._listing_whole:
            collect_garbage_from_now_on()  # the whole store is in the table
        self._show_problems()
        self._title_runs()
        self._describe_highlighted()

    def _show_problems(self) -> None:
        monitor = monitor_of(self.app)
        if monitor is not None:
            for run_id, reason in monitor.problems().items():  # posted before this screen was
                self.runs.set_problem(run_id, reason)

    def _poll_watch(self) -> None:
        monitor = monitor_of(self.app)
        if monitor is None or self._watcher is None:
            return
        running = monitor.unfinished()
        if running or self.runs.watching:
            self._read_watch(running)

    @work(thread=True, exclusive=True, group="runs-watch")
    def _read_watch(self, handles: list[RunHandle]) -> None:
        from x_tui.app.run_watch import watch_cells

        if self._watcher is None:
            return
        found = self._watcher.poll(handles, now=self._clock())
        cells = {run_id: watch_cells(watch) for run_id, watch in found.items() if watch}
        self.app.call_from_thread(self._show_watch, cells)

    def _show_watch(self, cells: dict[str, tuple[Text, Text, Text]]) -> None:
        """Put what the watch read in the table, unless the screen closed while it read."""
        if self.is_attached:
            self.runs.show_watch(cells)
            self._fit_runs_pane()

    def _sweeps_changed(self, message: SweepsChanged) -> None:
        """Group each sweep's runs under a row of their own."""
        self.runs.show_sweeps(message.sweeps)
        self._title_runs()
        self._describe_highlighted()

    def _run_state_changed(self, message: RunStateChanged) -> None:
        """Show a run's new state."""
        monitor = monitor_of(self.app)
        ended = monitor.ended_at(message.run_id) if monitor is not None else None
        self.runs.set_state(message.run_id, message.state, ended)
        if self.runs.filter_text:  # the run may have come into the filter or left it
            self._title_runs()
        self._describe_highlighted()

    def _run_status_failed(self, message: RunStatusFailed) -> None:
        """Show that a run's backend could not say where it is."""
        self.runs.set_problem(message.run_id, message.reason)
        self._describe_highlighted()

    @on(DataTable.RowHighlighted, "#runs")
    def _row_highlighted(self) -> None:
        self._describe_highlighted()

    def _describe_highlighted(self) -> None:
        self.query_one("#run-detail", Static).update(
            self.runs.describe(self.runs.highlighted_key())
        )
        self.refresh_run_actions()

    def _title_runs(self) -> None:
        table = self.runs
        monitor = monitor_of(self.app)
        total = len(monitor.stored.handles) + len(monitor.stored.unreadable) if monitor else 0
        narrowed = table.filter_text or table.project_filter is not None
        title = Text(f"Runs · {table.shown_count} of {total}" if narrowed else f"Runs · {total}")
        if table.filter_text:
            title.append(" matching ")
            title.append_text(safe_text(table.filter_text))
        if table.project_filter is not None and self.project_root is not None:
            title.append(" · ")
            title.append_text(safe_text(self.project_root.name))
        elif self.project_root is not None:
            title.append(" · all projects")
        self.query_one("#runs-pane").border_title = title

    @on(RunsTable.ViewChanged)
    def _view_changed(self) -> None:
        self._title_runs()
        self._describe_highlighted()

    # Actions ----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer the run actions on the runs pane only, and ``escape`` only while filtering."""
        if action == "run_action":
            return self.runs.has_focus
        if action == "clear_filter":
            field = self._filter_if_built()
            return field is not None and field.display
        return True

    def action_switch_pane(self) -> None:
        """Show (narrow) or focus (wide) the other pane."""
        if self.jobs.option_list.has_focus or self.jobs.has_focus_within:
            self._show_pane("runs")
        else:
            self._show_pane("jobs")

    def _show_pane(self, pane: str) -> None:
        self.set_class(pane == "runs", "-show-runs")
        if pane == "runs":
            self.runs.focus()
        else:
            self.jobs.option_list.focus()

    def action_filter(self) -> None:
        """Open the runs filter."""
        self._show_pane("runs")
        field = self._filter_field()
        field.display = True
        field.focus()
        self.refresh_bindings()

    def action_clear_filter(self) -> None:
        """Clear and close the runs filter (offered only while it is open)."""
        field = self._filter_if_built()
        if field is None:
            return
        field.value = ""
        field.display = False
        self.runs.set_filter("")
        self._title_runs()
        self.runs.focus()
        self.refresh_bindings()

    def _filter_if_built(self) -> Input | None:
        """The runs filter's field, or ``None`` before it was first wanted."""
        for field in self.query("#runs-filter").results(Input):
            return field
        return None

    def _filter_field(self) -> Input:
        """The runs filter's field, built (above the runs table) the first time it is wanted.

        Hidden until then, it is not built for the first frame: the field is restyled at each
        focus change in its pane, a few milliseconds of a start that shows no filter.
        """
        field = self._filter_if_built()
        if field is None:
            field = Input(
                placeholder="filter runs: id, job, backend, state or sweep", id="runs-filter"
            )
            self.query_one("#runs-pane").mount(field, before=self.runs)
        return field

    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.runs.set_filter(event.value)
        self._title_runs()
        self._describe_highlighted()

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self) -> None:
        self.runs.focus()

    def action_reload(self, store: bool = True) -> None:
        """Read the project (and, unless told not to, the run store) again, in workers."""
        self.run_worker(
            self._read_project,
            thread=True,
            exclusive=True,
            group="project",
            name="read project",
            exit_on_error=False,
        )
        monitor = monitor_of(self.app)
        if store and monitor is not None:
            self.run_worker(
                monitor.rescan, thread=True, group="rescan", name="rescan", exit_on_error=False
            )

    def action_submit(self) -> None:
        """Open the submit screen of the highlighted job."""
        job = self.jobs.highlighted_job
        if job is None:
            self.notify("No job to submit: the project declares none.", severity="warning")
            return
        self._open_submit(job)

    @on(JobBrowser.JobChosen)
    def _job_chosen(self, message: JobBrowser.JobChosen) -> None:
        self._open_submit(message.job)

    def _open_submit(self, job: str) -> None:
        from x_tui.app.submit_screen import SubmitScreen  # imported on first use: start-up

        self.app.push_screen(SubmitScreen(job))

    @on(RunsTable.RunChosen)
    def _run_chosen(self, message: RunsTable.RunChosen) -> None:
        from x_tui.app.run_screen import RunScreen  # imported on first use: start-up

        self.app.push_screen(RunScreen(message.handle))
