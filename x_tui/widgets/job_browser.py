"""The job browser: the project's configured jobs, and what the highlighted one runs and needs.

The list shows every job of ``[tool.substrax.compute.jobs]`` as soon as the configuration is read;
each job's tasks, resources, timeouts and backend appear once the screen has resolved it (in a
worker: resolving lists example directories). A job whose table does not resolve is marked, and
its error (naming the file, the key and the value) is shown in its place. Every name and value is
untrusted text and goes through ``safe_text``.

| Key | Action |
| --- | --- |
| ``enter`` | Submit the highlighted job (posts ``JobBrowser.JobChosen``). |
| ``up``/``down``, ``j``/``k``, ``home``/``end`` | Move (OptionList's own keys, and vim's). |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from x_tui.compute.worker.errors import UserError
from x_tui.widgets.first_focus import FocusStyledWithScreen
from x_tui.widgets.safe_text import safe_text

if TYPE_CHECKING:  # the jobs are resolved after the first frame
    from x_tui.compute.operations import JobList
    from x_tui.compute.worker.spec import JobSpec

_MAX_TASKS_SHOWN = 50


class JobOptions(FocusStyledWithScreen, OptionList):
    """The list of job names, whose ``enter`` (shown in the footer) submits the highlighted job."""

    HELP_TITLE = "Jobs"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Submit", id="jobs.submit"),
        Binding("j", "cursor_down", "Down", show=False, id="jobs.down"),
        Binding("k", "cursor_up", "Up", show=False, id="jobs.up"),
    ]


class JobBrowser(Vertical):
    """The project's jobs, and the highlighted one's tasks, resources, timeouts and backend."""

    HELP_TITLE = "Jobs"
    DEFAULT_CSS = """
    JobBrowser { height: 1fr; }
    JobBrowser > #job-list { height: auto; max-height: 50%; border: none; }
    JobBrowser > #job-detail-scroll { height: 1fr; }
    JobBrowser #job-detail { padding: 0 1; }
    """

    class JobChosen(Message):
        """The user chose a job to submit (``enter`` on it)."""

        def __init__(self, job: str) -> None:
            """Name the job.

            Args:
                job: The job's name.
            """
            super().__init__()
            self.job = job

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """Make an empty browser.

        Args:
            id: The widget's id.
            classes: Its CSS classes.
        """
        super().__init__(id=id, classes=classes)
        self._names: list[str] = []
        self._specs: Mapping[str, JobSpec] = {}
        self._problems: Mapping[str, UserError] = {}
        self._backend: str | None = None
        self._empty_reason: str = ""

    def compose(self) -> ComposeResult:
        """The list of jobs above the highlighted job's details."""
        yield JobOptions(id="job-list")
        with VerticalScroll(id="job-detail-scroll"):
            yield Static(id="job-detail")

    @property
    def option_list(self) -> OptionList:
        """The list of jobs (the part that takes focus)."""
        return self.query_one("#job-list", OptionList)

    @property
    def job_names(self) -> tuple[str, ...]:
        """The configured jobs, in the configuration's order."""
        return tuple(self._names)

    @property
    def highlighted_job(self) -> str | None:
        """The highlighted job's name, or ``None`` when there are no jobs."""
        index = self.option_list.highlighted
        if index is None or not 0 <= index < len(self._names):
            return None
        return self._names[index]

    def show_jobs(
        self, names: Iterable[str], *, backend: str | None, empty_reason: str = ""
    ) -> None:
        """Show the configured jobs, before they are resolved.

        Args:
            names: The jobs, in the configuration's order.
            backend: The configuration's default backend (``None`` when it names none).
            empty_reason: What to say when there are no jobs (why the list is empty).
        """
        previous = self.highlighted_job
        self._names = list(names)
        self._backend = backend
        self._specs, self._problems = {}, {}
        self._empty_reason = empty_reason
        options = self.option_list
        options.clear_options()
        options.add_options(
            [Option(self._prompt(name), id=f"job-{i}") for i, name in enumerate(self._names)]
        )
        if self._names:
            index = self._names.index(previous) if previous in self._names else 0
            options.highlighted = index
        self._show_detail()

    def show_resolved(self, jobs: JobList) -> None:
        """Show each job's resolved spec, or the error that keeps it from resolving.

        Args:
            jobs: The resolved jobs and the problems of the others.
        """
        self._specs, self._problems = jobs.specs, jobs.problems
        options = self.option_list
        for index, name in enumerate(self._names):
            options.replace_option_prompt_at_index(index, self._prompt(name))
        self._show_detail()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """Show the newly highlighted job's details."""
        event.stop()
        self._show_detail()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Turn ``enter`` on a job into ``JobChosen``."""
        event.stop()
        if 0 <= event.option_index < len(self._names):
            self.post_message(self.JobChosen(self._names[event.option_index]))

    def _prompt(self, name: str) -> Text:
        if name in self._problems:
            return Text.assemble(("✗ ", "bold red"), safe_text(name, "red"))
        spec = self._specs.get(name)
        if spec is None:
            return Text.assemble(("  ", ""), safe_text(name))
        tasks = len(spec.tasks)
        return Text.assemble(
            ("● ", "green"), safe_text(name, "bold"), (f"  {tasks} task{'s' * (tasks != 1)}", "dim")
        )

    def _show_detail(self) -> None:
        detail = self.query_one("#job-detail", Static)
        name = self.highlighted_job
        if name is None:
            detail.update(Text(self._empty_reason or "No jobs.", style="dim"))
            return
        problem = self._problems.get(name)
        spec = self._specs.get(name)
        if problem is not None:
            detail.update(_problem_text(name, problem))
        elif spec is not None:
            detail.update(_spec_text(spec, self._backend))
        else:
            detail.update(Text.assemble(safe_text(name, "bold"), ("\nresolving…", "dim")))


def _problem_text(name: str, problem: UserError) -> Text:
    return Text.assemble(
        safe_text(name, "bold"),
        ("\nThis job's table cannot be used:\n", "red"),
        safe_text(str(problem)),
    )


def _spec_text(spec: JobSpec, backend: str | None) -> Text:
    import shlex  # (a job is shown once the project is read, after the first frame)

    from x_tui.widgets.spec_view import format_seconds, resources_text

    lines: list[Text] = [
        safe_text(spec.name, "bold"),
        Text.assemble(
            ("backend   ", "dim"),
            safe_text(backend)
            if backend
            else Text("none configured: choose one when submitting", style="yellow"),
        ),
        Text.assemble(("timeout   ", "dim"), format_seconds(spec.timeout_seconds)),
        Text.assemble(("needs     ", "dim"), resources_text(spec.resources)),
        Text(f"tasks ({len(spec.tasks)})", style="dim"),
    ]
    width = max((len(task.name) for task in spec.tasks[:_MAX_TASKS_SHOWN]), default=0)
    for task in spec.tasks[:_MAX_TASKS_SHOWN]:
        lines.append(
            Text.assemble(
                "  ",
                safe_text(task.name.ljust(width), "bold"),
                "  ",
                safe_text(shlex.join(task.argv)),
                (f"  ≤{format_seconds(task.timeout_seconds)}", "dim"),
            )
        )
    if len(spec.tasks) > _MAX_TASKS_SHOWN:
        lines.append(Text(f"  … and {len(spec.tasks) - _MAX_TASKS_SHOWN} more", style="dim"))
    if spec.extras:
        lines.append(Text.assemble(("extras    ", "dim"), safe_text(", ".join(spec.extras))))
    if spec.mounts:
        mounts = ", ".join(f"{mount.name} → {mount.path}" for mount in spec.mounts)
        lines.append(Text.assemble(("mounts    ", "dim"), safe_text(mounts)))
    return Text("\n").join(lines)
