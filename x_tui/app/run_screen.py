"""One run, in full: its header (id, job, backend, live state, age), and tabs for its combined log,
its manifest, the devices it asked for and got, its spec, and each task's stdout and stderr.

The screen owns one :class:`~x_tui.app.run_sources.RunReader` and re-reads the run's files on a
timer while the run goes on (every second on this machine, every few seconds through a remote
backend's peek), in thread workers that hand their results back to the event loop; the state comes
from the run monitor's :class:`~x_tui.app.messages.RunStateChanged`, through the app's
``monitor_events`` signal. Every string that came from
the run (ids, names, logs, manifest values, provider messages) is shown through ``safe_text`` or
the log view, never as markup.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import var
from textual.widgets import TabbedContent, TabPane

from x_tui.app.actions import RunActionScreen, run_action_bindings
from x_tui.app.app_context import (
    context_of,
    describe_error,
    monitor_of,
    service_of,
    settings_of,
)
from x_tui.app.fetch_bar import FetchBar
from x_tui.app.fetching import FetchProgress
from x_tui.app.log_view_settings import new_log_view
from x_tui.app.messages import (
    MonitorEvent,
    RunStateChanged,
    RunStatusFailed,
    RunStatusRecovered,
)
from x_tui.app.run_header import RunHeader, guard_text, header_renderable, utc_now, watch_text
from x_tui.app.run_sources import RunReader, RunSnapshot
from x_tui.app.task_logs import TaskLogs
from x_tui.compute.backend import RunState
from x_tui.compute.run_health import cost_so_far, flags_of, run_hourly_price
from x_tui.compute.store import RunHandle, SettingsOrigin
from x_tui.compute.worker.manifest import TaskStatus
from x_tui.compute.worker.spec import JobSpec
from x_tui.widgets.devices_view import DevicesView
from x_tui.widgets.live_devices import LiveDevices
from x_tui.widgets.log_view import LogPlace, LogView
from x_tui.widgets.manifest_view import ManifestView
from x_tui.widgets.metrics_view import MetricsView
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.spec_view import SpecView
from x_tui.widgets.steady_footer import SteadyFooter

LOCAL_REFRESH_SECONDS = 1.0
"""How often a run's files are re-read while it goes on, when they are on this machine."""

REMOTE_REFRESH_SECONDS = 5.0
"""How often a remote run's files are peeked at while it goes on."""

READS_AFTER_THE_END = 2
"""How many times a run's files are read once it has ended, one refresh apart: the worker writes
its final manifest before it exits, and its last telemetry sample and log lines after."""

TASK_MARKS = {
    TaskStatus.SUCCEEDED: "✓ ",
    TaskStatus.FAILED: "✗ ",
    TaskStatus.TIMED_OUT: "✗ ",
}

FIXED_TABS = ("tab-log", "tab-manifest", "tab-devices", "tab-metrics", "tab-spec")


@dataclass(kw_only=True)
class RunLoaded(Message):
    """The first read of a run's files, posted by the screen's loading worker to the screen."""

    spec: JobSpec | None
    spec_note: str
    log_path: Path | None
    log_problem: str | None
    snapshot: RunSnapshot
    state: RunState | None
    ended_at: float | None
    local: bool


@dataclass
class FilesRead(Message):
    """A later read of a run's files, posted by the refreshing worker to the screen."""

    snapshot: RunSnapshot
    notice: Text | None


class RunScreen(RunActionScreen):
    """A run's header and tabs: combined log, manifest, devices, spec, and each task's logs.

    | Key | Description |
    | :- | :- |
    | escape | Back to the previous screen. |
    | c | Cancel the run (asks first). |
    | f | Fetch its outputs (asks where to). |
    | r | Run its job again with its settings (asks first). |
    | y | Copy its id. |
    | ! | Open a shell in its directory, with its environment (a run on this machine). |
    | x | Show and copy the ``x-tui`` command lines of its actions. |
    | [ / ] | Previous / next tab. |
    """

    HELP_TITLE = "Run screen"
    CSS_PATH = "../styles/run.tcss"
    BINDINGS = [
        Binding("escape", "back", "Back", id="run.back"),
        *run_action_bindings("run"),
        Binding("left_square_bracket", "switch_tab(-1)", "Prev tab", id="run.previous_tab"),
        Binding("right_square_bracket", "switch_tab(1)", "Next tab", id="run.next_tab"),
    ]

    state: var[RunState | None] = var(None)
    """The run's state: the monitor's, else what its files said; ``None`` until known."""

    def __init__(
        self,
        handle: RunHandle,
        *,
        follow: bool = True,
        clock: Callable[[], dt.datetime] = utc_now,
        tab: str | None = None,
        log_place: LogPlace | None = None,
    ) -> None:
        """Show ``handle``'s run.

        Args:
            handle: The run.
            follow: Whether the combined log starts following its end.
            clock: Gives the current time (tests pass a fixed one).
            tab: The tab to show once the run is read (a previous session's); the log's if
                ``None`` or gone.
            log_place: Where to open the combined log (a previous session's place in it).
        """
        super().__init__()
        self.handle = handle
        self._reopen_tab = tab
        self._reopen_place = log_place
        self.follow = follow
        self.clock = clock
        self.ended_at: dt.datetime | None = None
        self.spec: JobSpec | None = None
        self.snapshot: RunSnapshot | None = None
        self.loaded = False
        self._reader: RunReader | None = None
        self._settings_note: str | None = None
        self._tasks: tuple[str, ...] = ()
        self._refreshing = False
        self._reads_left = 1
        """Reads still to do once the run has ended (none after them: its files are still); one
        for a run found ended as the screen opens (the load may have read just before the end),
        :data:`READS_AFTER_THE_END` for an end seen here."""
        self._notice: Text | None = None
        self._status_notice = False
        """Whether the notice is the backend's status problem (gone once it answers again)."""
        self._notice_under_status: Text | None = None
        """The notice the status problem hid, shown again once the backend answers."""
        self._guard: Text | None = None
        self._local = True
        self._last_read = 0.0

    # Layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header, tabs, fetch progress, footer."""
        yield RunHeader(self._header(), id="run-header")
        with TabbedContent(id="run-tabs", initial="tab-log"):
            with TabPane(Content("Log"), id="tab-log"):
                yield new_log_view(self.app, follow=self.follow, id="combined-log")
            with TabPane(Content("Manifest"), id="tab-manifest"):
                yield ManifestView(id="manifest")
            with TabPane(Content("Devices"), id="tab-devices"), VerticalScroll():
                yield DevicesView(Text("Reading the run's files…", style="dim"), id="devices")
                yield LiveDevices(id="live-devices")
            with TabPane(Content("Metrics"), id="tab-metrics"):
                yield MetricsView(id="metrics")
            with TabPane(Content("Spec"), id="tab-spec"), VerticalScroll():
                yield SpecView(Text("Reading the staged spec…", style="dim"), id="spec")
        yield FetchBar(id="fetch-bar")
        yield SteadyFooter()

    def on_mount(self) -> None:
        """Take the monitor's state and its events, then read the run's files in a worker."""
        context = context_of(self.app)
        if context is not None:
            self.state = context.monitor.state_of(self.handle.run_id)
            ended = context.monitor.ended_at(self.handle.run_id)
            if ended is not None:
                self.ended_at = dt.datetime.fromtimestamp(ended, dt.UTC)
            problem = context.monitor.problems().get(self.handle.run_id)
            if problem is not None:
                self._show_notice(safe_text(f"status: {problem}", "red"), status=True)
            context.monitor_events.subscribe(self, self._monitor_event)
        self._reader = RunReader(service_of(self.app), self.handle)
        origin = self._reader.service.store.settings_origin(self.handle)
        if origin is SettingsOrigin.PROJECT:
            self._settings_note = origin.describe()
        self._update_header()
        self.query_one("#combined-log", LogView).focus()
        self._load()
        self.set_interval(settings_of(self.app).refresh_scale, self._tick)

    def selected_run(self) -> RunHandle:
        """This screen's run, for the run actions."""
        return self.handle

    def selected_state(self) -> RunState | None:
        """This run's state, for which run actions apply."""
        return self.state

    def watch_state(self) -> None:
        """Dim the keys of the actions the run's new state leaves out (``c`` once it ended)."""
        self.refresh_run_actions()

    # Loading ----------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="run-load")
    def _load(self) -> None:
        reader = self._reader
        if reader is None:
            return
        service = reader.service
        spec, note = reader.spec()
        log_path: Path | None = None
        log_problem: str | None = None
        try:
            log_path = service.log_path(self.handle)
        except Exception as error:  # a provider's failure is shown in the header
            log_problem = describe_error(error)
        snapshot = reader.snapshot()
        state = self.state
        if state is None:
            try:
                state = service.status(self.handle)
            except Exception:  # the monitor will say; the header shows "checking…" meanwhile
                state = None
        ended = service.ended_at_hint(self.handle)
        self._guard = guard_text(service.state_dir, self.handle.run_id)
        loaded = RunLoaded(
            spec=spec,
            spec_note=note,
            log_path=log_path,
            log_problem=log_problem,
            snapshot=snapshot,
            state=state,
            ended_at=ended,
            local=reader.files() is not None,
        )
        self.post_message(loaded)

    async def on_run_loaded(self, loaded: RunLoaded) -> None:
        """Show what the first read found and open the combined log."""
        if not self.is_attached:
            return
        self._local = loaded.local
        if self.state is None and loaded.state is not None:
            self.state = loaded.state
        if self.ended_at is None and loaded.ended_at is not None:
            self.ended_at = dt.datetime.fromtimestamp(loaded.ended_at, dt.UTC)
        self.spec = loaded.spec
        note = safe_text(loaded.spec_note, "dim")
        self.query_one("#spec", SpecView).show_spec(loaded.spec, note=note)
        log_view = self.query_one("#combined-log", LogView)
        log_view.open(loaded.log_path)
        if self._reopen_place is not None:
            log_view.restore_place(self._reopen_place)
            self._reopen_place = None
        if loaded.log_problem is not None:
            self._show_notice(safe_text(f"log: {loaded.log_problem}", "red"))
        await self._apply_snapshot(loaded.snapshot)
        if self._reopen_tab is not None:
            tabs = self.query_one("#run-tabs", TabbedContent)
            if self._reopen_tab in {pane.id for pane in tabs.query(TabPane)}:
                tabs.active = self._reopen_tab
            self._reopen_tab = None
        self.loaded = True
        self._update_header()

    def _task_names(self, snapshot: RunSnapshot) -> tuple[str, ...]:
        names = [task.name for task in self.spec.tasks] if self.spec is not None else []
        if snapshot.manifest is not None:
            names += [task.name for task in snapshot.manifest.tasks if task.name not in names]
        names += [task for task in snapshot.attempts if task not in names]
        return tuple(names)

    async def _apply_snapshot(self, snapshot: RunSnapshot) -> None:
        self.snapshot = snapshot
        running = self.state is None or not self.state.is_final
        tasks = self._task_names(snapshot)
        await self._add_task_tabs(tasks)
        self.query_one("#manifest", ManifestView).show(
            snapshot.manifest,
            tasks=tasks,
            attempts=snapshot.attempts,
            running=running,
            problem=snapshot.manifest_problem,
            state=self.state,
            progress=snapshot.in_progress,
            now=self.clock().timestamp(),
            last_log_line=snapshot.last_log_line,
        )
        manifest = snapshot.manifest
        self.query_one("#devices", DevicesView).show(
            self.spec.resources if self.spec is not None else None,
            manifest.devices if manifest is not None else None,
            probe_log=snapshot.devices_log,
            manifest_present=manifest is not None,
            platforms=self.spec.runtime.platforms if self.spec is not None else None,
            state=self.state,
        )
        await self.query_one("#live-devices", LiveDevices).show(snapshot.telemetry, running=running)
        if self._being_removed():
            return
        self.query_one("#metrics", MetricsView).show(snapshot.metrics)
        tabs = self.query_one("#run-tabs", TabbedContent)
        outcomes = {task.name: task for task in (manifest.tasks if manifest else ())}
        for index, task in enumerate(self._tasks):
            pane_id = f"tab-task-{index}"
            outcome = outcomes.get(task)
            mark = TASK_MARKS.get(outcome.status, "") if outcome is not None else ""
            tabs.get_tab(pane_id).label = Content.from_rich_text(Text(mark) + safe_text(task))
            logs = self.query_one(f"#task-logs-{index}", TaskLogs)
            logs.set_attempts(tuple(a.number for a in snapshot.attempts.get(task, ())))
            logs.refresh_remote()

    def _being_removed(self) -> bool:
        """Whether the screen is closing (an await above let the app quit or pop it)."""
        return not self.is_attached or self._pruning

    async def _add_task_tabs(self, tasks: tuple[str, ...]) -> None:
        if tasks[: len(self._tasks)] != self._tasks or self._reader is None:
            return
        tabs = self.query_one("#run-tabs", TabbedContent)
        for index in range(len(self._tasks), len(tasks)):
            task = tasks[index]
            logs = TaskLogs(task, self._reader, id=f"task-logs-{index}")
            title = Content.from_rich_text(safe_text(task))
            await tabs.add_pane(TabPane(title, logs, id=f"tab-task-{index}"))
        self._tasks = tasks

    # Refreshing -------------------------------------------------------------------------------

    def _tick(self) -> None:
        self._update_header()
        ended = self.state is not None and self.state.is_final
        if not self.loaded or self._refreshing or (ended and self._reads_left <= 0):
            return
        interval = LOCAL_REFRESH_SECONDS if self._local else REMOTE_REFRESH_SECONDS
        interval *= settings_of(self.app).refresh_scale
        now = self.clock().timestamp()
        if now - self._last_read < interval:
            return
        self._last_read = now
        if ended:
            self._reads_left -= 1
        self._refreshing = True
        self._refresh_files()

    @work(thread=True, exclusive=True, group="run-refresh")
    def _refresh_files(self) -> None:
        reader = self._reader
        if reader is None:
            return
        snapshot = reader.snapshot()
        self._guard = guard_text(reader.service.state_dir, self.handle.run_id)
        notice: Text | None = None
        spool = reader.service.spool_state(self.handle.run_id)
        if spool is not None and spool.error is not None:
            notice = safe_text(f"log stream stopped: {spool.error}", "red")
        self.post_message(FilesRead(snapshot, notice))

    async def on_files_read(self, message: FilesRead) -> None:
        """Show what a later read of the run's files found."""
        self._refreshing = False
        if not self.is_attached:
            return
        if message.notice is not None:
            self._show_notice(message.notice)
        await self._apply_snapshot(message.snapshot)
        self._update_header()

    def _header(self) -> Group:
        return header_renderable(
            self.handle,
            self.state,
            now=self.clock(),
            ended_at=self.ended_at,
            notice=self._notice,
            settings_note=self._settings_note,
            watch=self._watch(),
            badge=self._badge(),
            guard=self._guard,
        )

    def _badge(self) -> Style | None:
        """The state badge's style from the header's theme (none before the header is mounted)."""
        headers = self.query(RunHeader)
        return headers.first().badge_style(self.state) if headers else None

    def _watch(self) -> Text | None:
        """The header's progress, GPU use, cost so far and flags, from the last read."""
        snapshot = self.snapshot
        if snapshot is None:
            return None
        running = self.state is not None and not self.state.is_final
        progress = snapshot.metrics.progress
        telemetry = snapshot.telemetry
        now = self.clock().timestamp()
        cost = None
        if running and self.spec is not None:
            store = service_of(self.app).store
            hourly = run_hourly_price(store, self.handle, self.spec.resources)
            cost = cost_so_far(now - self.handle.submitted_at.timestamp(), hourly)
        flags = flags_of(telemetry, now=now) if running else ()
        shown = None
        if progress is not None:  # a finished run's ETA means nothing any more
            shown = progress.text() if running else f"{progress.percent:.0f}%"
        return watch_text(
            progress=shown,
            gpu_percent=(
                telemetry.mean_utilization() if telemetry is not None and running else None
            ),
            cost_usd=cost,
            flags=tuple(flag.reason for flag in flags),
        )

    def _update_header(self) -> None:
        self.query_one("#run-header", RunHeader).update(self._header())

    # Messages ---------------------------------------------------------------------------------

    def _show_notice(self, notice: Text | None, *, status: bool = False) -> None:
        if status and not self._status_notice:
            self._notice_under_status = self._notice
        self._notice = notice
        self._status_notice = status

    def _monitor_event(self, event: MonitorEvent) -> None:
        if isinstance(event, RunStateChanged):
            self._run_state_changed(event)
        elif isinstance(event, RunStatusFailed):
            self._run_status_failed(event)
        elif isinstance(event, RunStatusRecovered) and event.run_id == self.handle.run_id:
            self._drop_status_notice()
            self._update_header()

    def _drop_status_notice(self) -> None:
        """The backend answers again: show the notice its problem hid, if any."""
        if self._status_notice:
            self._show_notice(self._notice_under_status)

    def _run_state_changed(self, message: RunStateChanged) -> None:
        """Show this run's new state; read its files once more when it has ended."""
        if message.run_id != self.handle.run_id:
            return
        self.state = message.state
        if message.state.is_final:
            monitor = monitor_of(self.app)
            ended = monitor.ended_at(self.handle.run_id) if monitor is not None else None
            self.ended_at = (
                dt.datetime.fromtimestamp(ended, dt.UTC) if ended is not None else self.clock()
            )
            self._reads_left = READS_AFTER_THE_END
            self._last_read = 0.0
        self._update_header()

    def _run_status_failed(self, message: RunStatusFailed) -> None:
        """Say that the backend could not report this run's state."""
        if message.run_id != self.handle.run_id:
            return
        self._show_notice(safe_text(f"status: {message.reason}", "red"), status=True)
        self._update_header()

    @on(FetchProgress)
    def _fetch_progress(self, message: FetchProgress) -> None:
        if message.run_id == self.handle.run_id:
            self.query_one(FetchBar).show(message)

    @on(ManifestView.TaskChosen)
    def _task_chosen(self, message: ManifestView.TaskChosen) -> None:
        if message.task not in self._tasks:
            return
        index = self._tasks.index(message.task)
        self.query_one("#run-tabs", TabbedContent).active = f"tab-task-{index}"
        logs = self.query_one(f"#task-logs-{index}", TaskLogs)
        logs.show(attempt=message.attempt)
        logs.query_one(LogView).focus()

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = event.pane
        if pane is None:
            return
        for logs in pane.query(TaskLogs):
            logs.activate()

    # Actions ----------------------------------------------------------------------------------

    def action_back(self) -> None:
        """Back to the previous screen (the run goes on)."""
        self.dismiss(None)

    def action_switch_tab(self, step: int) -> None:
        """Show the previous (``-1``) or next (``1``) tab and focus what it shows."""
        tabs = self.query_one("#run-tabs", TabbedContent)
        order = [*FIXED_TABS, *(f"tab-task-{index}" for index in range(len(self._tasks)))]
        current = order.index(tabs.active) if tabs.active in order else 0
        target = order[(current + step) % len(order)]
        tabs.active = target
        pane = tabs.get_pane(target)
        for widget in pane.query("LogView, DataTable, VerticalScroll"):
            if widget.focusable:
                widget.focus()
                break
