"""Submit one job: pick the backend and the accelerator, see the resolved plan, press ``enter``.

The preview is the plan the service makes from the fields (the resolved spec: tasks, resources,
budgets; where it runs; and what the backend would ask its provider for, with any cost it can
state), re-planned in a thread worker a moment after the fields stop changing. ``enter`` (the
Submit button has the focus) plans once more from the fields as they are and submits that,
detached: closing x-tui never stops the run. The new run's screen replaces this one. A refusal
(an unknown accelerator, missing credentials, an unreachable provider) is shown here; nothing is
submitted and the fields stay as they were.

A plan may carry a warning (``x_tui.compute.plan_warnings``: the local backend on a machine
without the accelerator asked for): it is shown above the plan, and ``enter`` submits only once
the user has acknowledged it with ``a``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, replace

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Select, Static
from textual.worker import get_current_worker

from x_tui.app.app_context import describe_error, monitor_of, notify, service_of, settings_of
from x_tui.app.plan_preview import missing_secrets, plan_renderable
from x_tui.app.settings import LOW_BANDWIDTH_SLOWDOWN
from x_tui.app.submits import SubmitProgress, SubmitStillGoing
from x_tui.compute import operations
from x_tui.compute.operations import Project, RunPlan
from x_tui.compute.plan_warnings import plan_warning
from x_tui.compute.run_guards import parse_max_cost, parse_max_duration
from x_tui.compute.store import RunHandle
from x_tui.widgets.safe_text import safe_text
from x_tui.widgets.spec_view import format_seconds
from x_tui.widgets.steady_footer import SteadyFooter

WARNING_STYLE = "bold dark_orange"
"""How a plan's warning is shown."""

DEBOUNCE_SECONDS = 0.3
"""How long the fields must stay unchanged before the preview is planned again."""


@dataclass(frozen=True, slots=True)
class _Fields:
    backend: str | None
    accelerator: str | None
    max_cost: str | None = None
    max_duration: str | None = None

    def budgeted(self, plan: RunPlan) -> RunPlan:
        """``plan`` with the budget fields replacing the job's budget.

        Raises:
            ConfigError: If a budget field is refused (naming the field and the value).
        """
        if self.max_cost is None and self.max_duration is None:
            return plan
        guard = plan.guard.with_budget(
            max_cost_usd=(
                None if self.max_cost is None else parse_max_cost(self.max_cost, where="Max cost")
            ),
            max_duration_seconds=(
                None
                if self.max_duration is None
                else parse_max_duration(self.max_duration, where="Max duration")
            ),
        )
        return dataclasses.replace(plan, guard=guard)


class SubmitScreen(Screen[None]):
    """Choose where and on what a job runs, check the plan, and submit it.

    | Key | Description |
    | :- | :- |
    | enter | Submit (the Submit button has the focus). |
    | a | Acknowledge the plan's warning (needed before submitting). |
    | escape | Back, submitting nothing. |
    | tab | Next field. |
    | ctrl+x | Show and copy the equivalent ``x-tui run`` command. |
    """

    HELP_TITLE = "Submit screen"
    CSS_PATH = "../styles/submit.tcss"
    BINDINGS = [
        Binding("escape", "back", "Back", id="submit.back"),
        Binding("enter", "submit", "Submit", id="submit.submit"),
        Binding("a", "acknowledge", "Acknowledge warning", id="submit.acknowledge"),
        Binding("ctrl+x", "command_line", "Command", show=False, id="submit.command_line"),
    ]

    def __init__(self, job: str, *, project: Project | None = None) -> None:
        """Submit ``job`` of ``project`` (the app's project when ``None``).

        Args:
            job: The job's name.
            project: The project; ``app.project`` when ``None``.
        """
        super().__init__()
        self.job = job
        self.project = project
        self.plan: RunPlan | None = None
        self.error: str | None = None
        self.submitting = False
        self.submitted: RunHandle | None = None
        self._generation = 0
        self._debounce: Timer | None = None
        self._prefilled: str | None = None
        self.warning: str | None = None
        """The warning of the plan shown (the user must acknowledge it before submitting)."""
        self.acknowledged: str | None = None
        """The warning the user acknowledged with ``a``."""

    def compose(self) -> ComposeResult:
        """Title, the fields, the buttons and status, the preview."""
        title = Text("Submit ")
        title.append_text(safe_text(self.job, "bold"))
        yield Static(title, id="submit-title")
        with Vertical(id="submit-form"):
            with Horizontal(classes="submit-row"):
                yield Label(Text("Backend"), classes="submit-label")
                yield Select[str]([], id="submit-backend", compact=True, allow_blank=True)
                yield Label(Text("Accelerator"), classes="submit-label")
                yield Input(
                    placeholder="as configured (KIND, KIND:COUNT, A,B)",
                    id="submit-accelerator",
                    compact=True,
                )
            with Horizontal(classes="submit-row"):
                yield Label(Text("Max cost $"), classes="submit-label")
                yield Input(placeholder="the job's", id="submit-max-cost", compact=True)
                yield Label(Text("Max duration"), classes="submit-label")
                yield Input(
                    placeholder="the job's (2h, 90m)", id="submit-max-duration", compact=True
                )
            with Horizontal(classes="submit-row"):
                yield Button(Text("Submit"), id="submit-go", variant="primary", compact=True)
                yield Button(Text("Back"), id="submit-back", compact=True)
                yield Static(Text("Planning…", style="dim"), id="submit-status")
        with VerticalScroll(id="submit-preview"):
            yield Static(Text(""), id="submit-plan")
        yield SteadyFooter()

    def on_mount(self) -> None:
        """Fill the backend list and plan once with the configured values."""
        self.query_one("#submit-go", Button).focus()
        self._setup()

    @work(thread=True, exclusive=True, group="submit-setup", exit_on_error=False)
    def _setup(self) -> None:
        from x_tui.compute.registry import backend_names

        project = self.project or _project_of(self.app)
        names = list(backend_names())
        configured = project.config.backend if project.config is not None else None
        if configured is not None and configured not in names:
            names.append(configured)
        self.app.call_from_thread(self._set_up, project, names, configured)

    def _set_up(self, project: Project, names: list[str], configured: str | None) -> None:
        if not self.is_attached:
            return
        self.project = project
        select: Select[str] = self.query_one("#submit-backend", Select)
        with self.prevent(Select.Changed):
            select.set_options([(Text(name), name) for name in names])
            if configured is not None:
                select.value = configured
        self._request_plan()

    # Planning ---------------------------------------------------------------------------------

    def _fields(self) -> _Fields:
        select: Select[str] = self.query_one("#submit-backend", Select)
        value = select.value
        backend = value if isinstance(value, str) else None
        typed = self.query_one("#submit-accelerator", Input).value.strip()
        accelerator = typed if typed and typed != self._prefilled else None
        cost = self.query_one("#submit-max-cost", Input).value.strip() or None
        duration = self.query_one("#submit-max-duration", Input).value.strip() or None
        return _Fields(
            backend=backend, accelerator=accelerator, max_cost=cost, max_duration=duration
        )

    @on(Select.Changed, "#submit-backend")
    @on(Input.Changed, "#submit-accelerator")
    @on(Input.Changed, "#submit-max-cost")
    @on(Input.Changed, "#submit-max-duration")
    def _fields_changed(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._status(Text("Planning…", style="dim"))
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self._request_plan)

    def _request_plan(self) -> None:
        if self.project is None:
            return
        self._generation += 1
        self._plan(self._generation, self.project, self._fields())

    @work(thread=True, group="submit-plan", exit_on_error=False)
    def _plan(self, generation: int, project: Project, fields: _Fields) -> None:
        service = service_of(self.app)
        try:
            plan = fields.budgeted(
                service.plan(
                    project, self.job, backend=fields.backend, accelerator=fields.accelerator
                )
            )
        except Exception as error:  # shown in the screen; nothing is submitted
            self.app.call_from_thread(self._planned, generation, None, describe_error(error))
            return
        self.app.call_from_thread(self._planned, generation, plan, missing_secrets(plan))

    def _planned(self, generation: int, plan: RunPlan | None, error: str | None) -> None:
        if generation != self._generation or not self.is_attached:
            return
        self.plan = plan
        self.error = error
        preview = self.query_one("#submit-plan", Static)
        if plan is None:
            self._status(safe_text(error or "no plan", "bold red"))
            preview.update(Text("Fix the fields above to see the plan.", style="dim"))
            return
        accelerator = self.query_one("#submit-accelerator", Input)
        if self._prefilled is None:
            shown = plan.request.accelerator if plan.request is not None else None
            configured = shown or plan.spec.resources.accelerator
            self._prefilled = str(configured) if configured is not None else ""
            if not accelerator.value:
                with self.prevent(Input.Changed):
                    accelerator.value = self._prefilled
        self.warning = plan_warning(plan.provider_request)
        self.refresh_bindings()
        if error is not None:
            # A required secret not set in this shell: submit would be refused, so say it now.
            self._status(safe_text(f"Cannot submit: {error}", "bold red"))
        elif self._needs_acknowledging():
            self._status(
                Text("Warning below: a acknowledges it, then enter submits", WARNING_STYLE)
            )
        elif not self.submitting:
            self._status(Text("Ready: enter submits; the run is detached"))
        rendered: RenderableType = plan_renderable(plan, problem=error)
        rendered = Group(budget_text(plan), rendered)
        if self.warning is not None:
            heading = Text("⚠ ", style=WARNING_STYLE)
            heading.append_text(safe_text(self.warning, WARNING_STYLE))
            rendered = Group(heading, Text(""), rendered)
        preview.update(rendered)

    def _needs_acknowledging(self) -> bool:
        return self.warning is not None and self.warning != self.acknowledged

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer ``a`` only while a warning waits to be acknowledged."""
        if action == "acknowledge":
            return self._needs_acknowledging()
        return True

    def action_acknowledge(self) -> None:
        """Accept the plan's warning: ``enter`` submits now."""
        if self.warning is None:
            return
        self.acknowledged = self.warning
        self.refresh_bindings()
        if not self.submitting:
            self._status(Text("Warning acknowledged: enter submits; the run is detached"))

    def _status(self, text: Text) -> None:
        self.query_one("#submit-status", Static).update(text)

    def command_line(self) -> str:
        """The ``x-tui run`` command that submits what the fields say now."""
        from x_tui.app.command_lines import run_command, shell_line

        fields = self._fields()
        root = self.project.root if self.project is not None else None
        return shell_line(
            run_command(
                self.job,
                backend=fields.backend,
                accelerator=fields.accelerator,
                project=root,
                max_cost=fields.max_cost,
                max_duration=fields.max_duration,
            )
        )

    def action_command_line(self) -> None:
        """Show and copy the equivalent ``x-tui run`` command (OSC 52, so it works over SSH)."""
        line = self.command_line()
        self.app.copy_to_clipboard(line + "\n")
        notify(self.app, f"{line}\n(copied)")

    # Submitting -------------------------------------------------------------------------------

    @on(Button.Pressed, "#submit-go")
    @on(Input.Submitted, "#submit-accelerator")
    def action_submit(self) -> None:
        """Plan from the fields as they are and submit that, detached."""
        from x_tui.app.read_only import refused

        if self.submitting or self.project is None or refused(self.app):
            return
        if self._needs_acknowledging():
            self._status(
                Text("Not submitted: press a to acknowledge the warning first", WARNING_STYLE)
            )
            self.query_one("#submit-go", Button).focus()
            self.app.bell()
            return
        self.submitting = True
        self.query_one("#submit-go", Button).disabled = True
        self._status(Text("Submitting…", style="bold"))
        project, fields, app = self.project, self._fields(), self.app
        # An app worker, not this screen's: the submit goes on if the user leaves the screen.
        app.run_worker(
            lambda: self._submit(app, project, fields),
            thread=True,
            group=f"submit-{self.job}",
            exit_on_error=False,
            description=f"submit {self.job}",
        )

    def _submit(self, app: App[object], project: Project, fields: _Fields) -> None:
        service = service_of(app)
        worker = get_current_worker()
        try:
            plan = fields.budgeted(
                service.plan(
                    project, self.job, backend=fields.backend, accelerator=fields.accelerator
                )
            )
            if settings_of(app).low_bandwidth:  # fewer samples: each remote peek reads less
                watch = plan.extensions.watch.for_low_bandwidth(LOW_BANDWIDTH_SLOWDOWN)
                plan = replace(plan, extensions=replace(plan.extensions, watch=watch))
            handle = service.submit(
                plan,
                progress=lambda progress: _from_thread(app, self._progress, progress),
                keep_waiting=lambda: not worker.is_cancelled,
            )
        except SubmitStillGoing as going:  # the run is kept if the backend creates it
            _from_thread(app, self._still_going, str(going))
            return
        except Exception as error:  # nothing was submitted, or the backend said why not
            _from_thread(app, self._submit_failed, describe_error(error))
            return
        _from_thread(app, self._submitted, handle)
        from x_tui.app.watch_starter import start_watcher_if_asked

        start_watcher_if_asked(settings_of(app).notify, service.state_dir)

    def _progress(self, progress: SubmitProgress) -> None:
        if not self.is_attached or not self.submitting:
            return
        text = Text("Submitting to ", style="bold")
        text.append_text(safe_text(progress.backend, "bold"))
        text.append(f": {progress.doing} ({format_seconds(progress.elapsed)})", style="bold")
        text.append("  escape leaves it going; the run will appear in the runs table", "dim")
        self._status(text)

    def _still_going(self, reason: str) -> None:
        self.submitting = False
        notify(self.app, reason, severity="warning")
        if self.is_attached:
            self._status(safe_text(reason, "bold dark_orange"))

    def _submit_failed(self, reason: str) -> None:
        self.submitting = False
        if not self.is_attached:
            notify(self.app, f"Submit failed: {reason}", severity="error")
            return
        self.query_one("#submit-go", Button).disabled = False
        self._status(safe_text(f"Not submitted: {reason}", "bold red"))

    def _submitted(self, handle: RunHandle) -> None:
        from x_tui.app.run_screen import RunScreen

        self.submitted = handle
        self.submitting = False
        monitor = monitor_of(self.app)
        if monitor is not None:
            monitor.poll_soon(handle.run_id)
        if self.is_current:
            self.app.switch_screen(RunScreen(handle, follow=True))
        else:
            notify(self.app, f"Submitted {handle.run_id}")

    @on(Button.Pressed, "#submit-back")
    def action_back(self) -> None:
        """Back; a submit under way goes on, and its run appears in the runs table."""
        if self.submitting:
            notify(
                self.app,
                f"The submit of {self.job} goes on; its run appears in the runs table once"
                " the backend has created it",
            )
        self.dismiss(None)


def budget_text(plan: RunPlan) -> Text:
    """``Budget: $5.00, 2h: the watcher notifies at 80% and cancels the run at 100%``, or that
    the run has none; shown next to the plan's cost."""
    guard = plan.guard
    if not guard.has_budget:
        return Text.assemble(
            ("Budget    ", "bold"), ("none (max cost and max duration above set one)", "dim")
        )
    text = Text("Budget    ", style="bold")
    text.append(guard.budget_text().removeprefix("budget "), style="bold dark_orange")
    text.append(": the watcher notifies at 80% and cancels the run at 100%", style="dim")
    return text


def _from_thread(app: App[object], callback: Callable[..., object], *args: object) -> None:
    """Run ``callback`` on the event loop, unless the app has already closed."""
    # The app may have closed meanwhile; the submit's handle is saved regardless.
    with contextlib.suppress(RuntimeError):
        app.call_from_thread(callback, *args)


def _project_of(app: App[object]) -> Project:
    """The project the app shows: a screen's ``project`` (the main screen's), else the cwd's."""
    for screen in reversed(app.screen_stack):
        candidate = getattr(screen, "project", None)
        if isinstance(candidate, Project):
            return candidate
    return operations.open_project(operations.locate_project())
