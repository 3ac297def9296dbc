"""What a user can do to a run, on any screen that shows one: cancel, fetch, re-run, copy its id.

Each action is a function of the screen it was started from and the run's handle, so the run
screen and the main screen's runs table share one implementation; :class:`RunActions` wires them
to keys (:data:`RUN_ACTION_BINDINGS`) for a screen that says which run is selected. Backend calls
go through the app's :class:`~x_tui.app.service.Service` in thread workers owned by the app (a
fetch goes on when the user leaves the screen); the workers never touch a widget: they notify,
post :class:`FetchProgress` to the screen that asked, or schedule a screen push on the app.

Cancel and re-run ask first (:class:`~x_tui.app.confirm_screen.ConfirmScreen`); fetch asks where
to, prefilled with ``operations.fetch_root()``. None of them is bound to ``ctrl+d``, ``ctrl+k``,
``ctrl+b`` or ``ctrl+a``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from rich.text import Text
from textual.app import App
from textual.binding import ActiveBinding, Binding
from textual.message import Message
from textual.screen import Screen

from x_tui.app.confirm_screen import AskPathScreen, ConfirmScreen
from x_tui.app.run_sources import RunReader
from x_tui.app.service import Service
from x_tui.compute import operations
from x_tui.compute.errors import UserError
from x_tui.compute.operations import RunPlan
from x_tui.compute.sanitize import plain
from x_tui.compute.store import RunHandle
from x_tui.compute.sweeps import Sweep, parameters_text
from x_tui.widgets.safe_text import safe_text

if TYPE_CHECKING:
    from x_tui.app.monitor import RunMonitor

Severity = Literal["information", "warning", "error"]

RUN_ACTION_BINDINGS: list[Binding] = [
    Binding("c", "cancel_run", "Cancel run", id="run.cancel"),
    Binding("f", "fetch_run", "Fetch", id="run.fetch"),
    Binding("r", "rerun", "Re-run", id="run.rerun"),
    Binding("y", "copy_run_id", "Copy id", id="run.copy_id"),
]
"""The run actions' keys, for a screen's ``BINDINGS`` (each has an id for the user's keymap)."""

PROGRESS_SECONDS = 0.25
"""How often a fetch's progress is measured and posted."""


@dataclass
class FetchProgress(Message):
    """How a fetch started from a screen is going; posted to that screen.

    Attributes:
        run_id: The run being fetched.
        target: The directory the copy goes to (``<destination>/<run_id>``).
        copied_bytes: Bytes in ``target`` so far.
        total_bytes: The outputs' size when it is known beforehand (a run on this machine).
        finished: Whether the fetch has ended (see ``error``).
        error: Why it failed, if it did (untrusted text: show it through ``safe_text``).
        files: Files in ``target`` so far.
    """

    run_id: str
    target: Path
    copied_bytes: int
    total_bytes: int | None
    finished: bool = False
    error: str | None = None
    files: int = 0


def service_of(app: App[object]) -> Service:
    """The app's service (``app.service``).

    Raises:
        RuntimeError: If the app has none; every x-tui app has one.
    """
    service = getattr(app, "service", None)
    if not isinstance(service, Service):
        raise RuntimeError(f"{type(app).__name__} has no x-tui service")
    return service


def monitor_of(app: App[object]) -> RunMonitor | None:
    """The app's run monitor (``app.monitor``), when it has one."""
    from x_tui.app.monitor import RunMonitor

    monitor = getattr(app, "monitor", None)
    return monitor if isinstance(monitor, RunMonitor) else None


def notify(app: App[object], message: str, *, severity: Severity = "information") -> None:
    """A toast of untrusted text: control sequences removed, never read as markup."""
    app.notify(
        plain(message), severity=severity, markup=False, timeout=8 if severity == "error" else 4
    )


def notify_from_thread(
    app: App[object], message: str, *, severity: Severity = "information"
) -> None:
    """:func:`notify` from a worker thread."""
    app.call_from_thread(notify, app, message, severity=severity)


def describe_error(error: BaseException) -> str:
    """A user error's message as it is; anything else with its type, since it is unexpected."""
    if isinstance(error, UserError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def format_bytes(count: int) -> str:
    """``1536`` as ``1.5 KiB``."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def directory_size(path: Path) -> tuple[int, int]:
    """The bytes and the number of files under ``path`` (links not followed; ``(0, 0)`` if none)."""
    total = files = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
            files += 1
    return total, files


# Copy the run id ------------------------------------------------------------------------------


def copy_run_id(screen: Screen[object], handle: RunHandle) -> None:
    """Put the run's id on the clipboard (OSC 52, so it works over SSH) and say so."""
    screen.app.copy_to_clipboard(handle.run_id)
    notify(screen.app, f"Copied {handle.run_id}")


# Cancel ---------------------------------------------------------------------------------------


def ask_cancel(screen: Screen[object], handle: RunHandle) -> None:
    """Ask to cancel the run, then cancel it in a worker; a run that already ended is left."""
    app = screen.app
    monitor = monitor_of(app)
    state = monitor.state_of(handle.run_id) if monitor is not None else None
    if state is not None and state.is_final:
        notify(app, f"{handle.run_id} already {state.value}; nothing to cancel")
        return
    question = Text("Cancel run ")
    question.append_text(safe_text(handle.run_id, "bold"))
    question.append_text(safe_text(f" on {handle.backend}?"))
    question.append("\nIts tasks are stopped; outputs written so far are kept.", style="dim")

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            app.run_worker(
                lambda: _cancel(app, handle),
                thread=True,
                group=f"cancel-{handle.run_id}",
                exit_on_error=False,
                description=f"cancel {handle.run_id}",
            )

    app.push_screen(ConfirmScreen(question, confirm_label="Cancel run"), answered)


def _cancel(app: App[object], handle: RunHandle) -> None:
    notify_from_thread(app, f"Cancelling {handle.run_id}…")
    try:
        service_of(app).cancel(handle)
    except Exception as error:  # a provider's failure is shown, never raised into the UI
        notify_from_thread(app, f"Cancel failed: {describe_error(error)}", severity="error")
        return
    notify_from_thread(app, f"Cancelled {handle.run_id}")
    monitor = monitor_of(app)
    if monitor is not None:
        monitor.poll_soon(handle.run_id)


# Sweeps ---------------------------------------------------------------------------------------


def sweep_action(
    screen: Screen[object], action: str, sweep: Sweep, handles: tuple[RunHandle, ...]
) -> None:
    """A run action on a sweep's group row: cancel every run, or copy the sweep id.

    Args:
        screen: The screen it was started from.
        action: ``cancel_run``, ``copy_run_id``, ``fetch_run`` or ``rerun``.
        sweep: The sweep.
        handles: Its runs in the store.
    """
    if action == "cancel_run":
        ask_cancel_sweep(screen, sweep, handles)
    elif action == "copy_run_id":
        screen.app.copy_to_clipboard(sweep.sweep_id)
        notify(screen.app, f"Copied {sweep.sweep_id}")
    else:
        verb = "fetch" if action == "fetch_run" else "re-run"
        notify(screen.app, f"Select one run of the sweep to {verb} it", severity="warning")


def ask_cancel_sweep(screen: Screen[object], sweep: Sweep, handles: tuple[RunHandle, ...]) -> None:
    """Ask to cancel every unfinished run of a sweep, then cancel them one by one in a worker."""
    app = screen.app
    monitor = monitor_of(app)

    def unfinished(handle: RunHandle) -> bool:
        state = monitor.state_of(handle.run_id) if monitor is not None else None
        return state is None or not state.is_final

    going = tuple(handle for handle in handles if unfinished(handle))
    if not going:
        notify(app, f"Every run of {sweep.sweep_id} has ended; nothing to cancel")
        return
    question = Text(f"Cancel {len(going)} run{'' if len(going) == 1 else 's'} of sweep ")
    question.append_text(safe_text(sweep.sweep_id, "bold"))
    question.append_text(safe_text(f" ({sweep.job} on {sweep.backend})?"))
    for handle in going:
        values = sweep.parameters_of(handle.run_id) or {}
        question.append("\n  ")
        question.append_text(safe_text(f"{handle.run_id}  {parameters_text(values)}"))
    question.append("\nTheir tasks are stopped; outputs written so far are kept.", style="dim")

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            app.run_worker(
                lambda: _cancel_sweep(app, sweep, going),
                thread=True,
                group=f"cancel-{sweep.sweep_id}",
                exit_on_error=False,
                description=f"cancel {sweep.sweep_id}",
            )

    app.push_screen(ConfirmScreen(question, confirm_label="Cancel runs"), answered)


def _cancel_sweep(app: App[object], sweep: Sweep, handles: tuple[RunHandle, ...]) -> None:
    notify_from_thread(app, f"Cancelling {len(handles)} runs of {sweep.sweep_id}…")
    service = service_of(app)
    monitor = monitor_of(app)
    failed: list[str] = []
    for handle in handles:
        try:
            service.cancel(handle)
        except Exception as error:  # each run is tried; the failures are reported together
            failed.append(f"{handle.run_id}: {describe_error(error)}")
        if monitor is not None:
            monitor.poll_soon(handle.run_id)
    if failed:
        notify_from_thread(
            app,
            f"Cancelled {len(handles) - len(failed)} of {len(handles)} runs of {sweep.sweep_id};"
            f" failed: {'; '.join(failed)}",
            severity="error",
        )
        return
    notify_from_thread(app, f"Cancelled {len(handles)} runs of {sweep.sweep_id}")


# Fetch ----------------------------------------------------------------------------------------


def ask_fetch(screen: Screen[object], handle: RunHandle) -> None:
    """Ask where to fetch the run's outputs (prefilled with the fetch root), then fetch them."""
    question = Text("Fetch the outputs of ")
    question.append_text(safe_text(handle.run_id, "bold"))
    question.append(" into this directory (the copy goes in a folder named by the run id):")

    def answered(destination: Path | None) -> None:
        if destination is not None:
            start_fetch(screen, handle, destination)

    screen.app.push_screen(AskPathScreen(question, default=operations.fetch_root()), answered)


def start_fetch(screen: Screen[object], handle: RunHandle, destination: Path) -> None:
    """Fetch the run's outputs into ``destination / run_id`` in an app worker.

    Progress goes to ``screen`` as :class:`FetchProgress` messages, and a toast says where the
    copy is once it is done.
    """
    app = screen.app
    app.run_worker(
        lambda: _fetch(app, screen, handle, destination),
        thread=True,
        group=f"fetch-{handle.run_id}",
        exit_on_error=False,
        description=f"fetch {handle.run_id}",
    )


def _fetch(app: App[object], screen: Screen[object], handle: RunHandle, destination: Path) -> None:
    service = service_of(app)
    target = destination / handle.run_id
    notify_from_thread(app, f"Fetching {handle.run_id} into {target}…")
    total: int | None = None
    try:
        source = RunReader(service, handle).files()
        if source is not None:
            total, _ = directory_size(source.outputs)
    except Exception:  # the size is only a hint for the progress bar
        total = None
    outcome: list[Path | BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            destination.mkdir(parents=True, exist_ok=True)
            outcome.append(service.fetch(handle, destination))
        except BaseException as error:
            outcome.append(error)
        finally:
            done.set()

    threading.Thread(target=run, name=f"x-tui fetch {handle.run_id}", daemon=True).start()
    while not done.wait(PROGRESS_SECONDS):
        copied, files = directory_size(target)
        screen.post_message(FetchProgress(handle.run_id, target, copied, total, files=files))
    result = outcome[0]
    copied, files = directory_size(target)
    if isinstance(result, BaseException):
        reason = describe_error(result)
        screen.post_message(
            FetchProgress(
                handle.run_id, target, copied, total, finished=True, error=reason, files=files
            )
        )
        notify_from_thread(app, f"Fetch of {handle.run_id} failed: {reason}", severity="error")
        return
    screen.post_message(
        FetchProgress(handle.run_id, result, copied, total, finished=True, files=files)
    )
    notify_from_thread(app, f"Fetched {files} files ({format_bytes(copied)}) into {result}")


# Re-run ---------------------------------------------------------------------------------------


def rerun_plan(service: Service, handle: RunHandle) -> tuple[RunPlan, str]:
    """The plan that runs ``handle``'s job again: same backend, same frozen settings, same spec,
    and the job's extensions (retries, dependencies, secrets by name).

    The job is planned again through the service from the project's pyproject.toml, on the run's
    backend, which brings back what a spec cannot hold (the extensions, the resource request,
    the cost bound); the spec the run was staged with replaces the planned one when this machine
    keeps it (a sweep's values, an accelerator chosen at submit), and the settings are the ones
    frozen into the handle. Secret values are not kept anywhere: submit reads them again from
    this shell.

    Args:
        service: The service.
        handle: The run to repeat.

    Returns:
        The plan and where it came from, in words.

    Raises:
        UserError: If neither the staged spec nor the job can be found, or the backend cannot
            be built.
    """
    spec, note = RunReader(service, handle).spec()
    project = Path(handle.project)
    settings = dict(handle.settings)
    staged = spec.resources.accelerator if spec is not None else None
    try:
        opened = service.open_project(project)
        planned = service.plan(opened, handle.job, backend=handle.backend)
        if staged is not None and planned.spec.resources.accelerator != staged:
            # Chosen at submit, not configured: ask for it again, as it was given.
            planned = service.plan(
                opened, handle.job, backend=handle.backend, accelerator=str(staged)
            )
    except UserError as error:
        if spec is None:
            raise
        plan = RunPlan(
            project=project, spec=spec, backend=handle.backend, settings=settings,
            provider_request=None,
        )  # fmt: skip
        return plan, f"the spec it was staged with, without the job's extensions ({error})"
    if spec is None:
        where = f"the job as {project}/pyproject.toml declares it now ({note})"
        return dataclasses.replace(planned, settings=settings), where
    request = planned.request
    if staged is None and request is not None and request.accelerator is not None:
        request = dataclasses.replace(request, accelerator=None)
    plan = dataclasses.replace(planned, spec=spec, settings=settings, request=request)
    return plan, "the spec it was staged with and the job's extensions"


def ask_rerun(screen: Screen[object], handle: RunHandle) -> None:
    """Ask to run the job again with the run's settings, then submit it and open the new run."""
    app = screen.app
    question = Text("Run ")
    question.append_text(safe_text(handle.job, "bold"))
    question.append_text(safe_text(f" again on {handle.backend}, with the settings of "))
    question.append_text(safe_text(handle.run_id, "bold"))
    question.append(
        "?\nThe staged spec is reused when this machine keeps it; the job's retries and"
        " dependencies come from pyproject.toml, its secrets from this shell, as now.",
        style="dim",
    )

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            app.run_worker(
                lambda: _rerun(app, handle),
                thread=True,
                group=f"rerun-{handle.run_id}",
                exit_on_error=False,
                description=f"re-run {handle.run_id}",
            )

    app.push_screen(ConfirmScreen(question, confirm_label="Re-run", danger=False), answered)


def _rerun(app: App[object], handle: RunHandle) -> None:
    service = service_of(app)
    try:
        plan, origin = rerun_plan(service, handle)
        new = service.submit(plan)
    except Exception as error:  # nothing was submitted, or the backend said why not
        notify_from_thread(app, f"Re-run failed: {describe_error(error)}", severity="error")
        return
    notify_from_thread(app, f"Submitted {new.run_id} from {origin}")
    app.call_from_thread(open_run, app, new)


def open_run(app: App[object], handle: RunHandle) -> None:
    """Push the run screen of ``handle``, following its combined log."""
    from x_tui.app.run_screen import RunScreen

    app.push_screen(RunScreen(handle))


# The mixin ------------------------------------------------------------------------------------


class RunActions:
    """Run actions for a screen: mix in before ``Screen`` and add :data:`RUN_ACTION_BINDINGS`.

    The screen says which run the actions apply to by overriding :meth:`selected_run`.
    """

    def selected_run(self) -> RunHandle | None:
        """The run the actions apply to; ``None`` when no run is selected."""
        return None

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The screen's active bindings with its own first, so the footer shows the run actions
        even when a widget with many keys of its own (a log view) has the focus."""
        screen = cast("Screen[object]", self)
        bindings: dict[str, ActiveBinding] = Screen.active_bindings.fget(screen)  # type: ignore[attr-defined]
        own = {key: active for key, active in bindings.items() if active.node is screen}
        rest = {key: active for key, active in bindings.items() if active.node is not screen}
        return {**own, **rest}

    def _run_for_action(self) -> tuple[Screen[object], RunHandle] | None:
        screen = cast("Screen[object]", self)
        handle = self.selected_run()
        if handle is None:
            notify(screen.app, "No run selected", severity="warning")
            return None
        return screen, handle

    def action_cancel_run(self) -> None:
        """Cancel the selected run, after asking."""
        chosen = self._run_for_action()
        if chosen is not None:
            ask_cancel(*chosen)

    def action_fetch_run(self) -> None:
        """Fetch the selected run's outputs, after asking where to."""
        chosen = self._run_for_action()
        if chosen is not None:
            ask_fetch(*chosen)

    def action_rerun(self) -> None:
        """Run the selected run's job again with its settings, after asking."""
        chosen = self._run_for_action()
        if chosen is not None:
            ask_rerun(*chosen)

    def action_copy_run_id(self) -> None:
        """Copy the selected run's id to the clipboard."""
        chosen = self._run_for_action()
        if chosen is not None:
            copy_run_id(*chosen)


__all__ = [
    "RUN_ACTION_BINDINGS",
    "FetchProgress",
    "RunActions",
    "ask_cancel",
    "ask_cancel_sweep",
    "ask_fetch",
    "ask_rerun",
    "copy_run_id",
    "open_run",
    "rerun_plan",
    "service_of",
    "start_fetch",
    "sweep_action",
]
