"""Open a shell in a run's directory, with the environment its tasks ran in (the ``!`` action).

The shell (``$SHELL``, else ``/bin/sh``) starts in the run's directory (its staged spec, worker log
and outputs) with the variables its tasks had: this process's, then the job's ``env``, then its
JAX runtime settings (:func:`~x_tui.compute.worker.environment.child_environment`, as the
worker builds them; no secret is in there, as none is ever in a spec). The app is suspended while
the shell runs and comes back when it exits. Only a run whose files are on this machine has a
directory to open; for any other run, or where the terminal cannot be handed over (the web view),
a toast says why and nothing starts.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from textual.app import App, SuspendNotSupported
from textual.screen import Screen

from x_tui.app.app_context import describe_error, notify, notify_from_thread, service_of
from x_tui.app.run_sources import RunReader
from x_tui.compute.store import RunHandle
from x_tui.compute.worker.environment import EnvironmentConflict, child_environment

DEFAULT_SHELL = "/bin/sh"
"""The shell started when ``$SHELL`` is not set."""


def open_shell(screen: Screen[object], handle: RunHandle) -> None:
    """Find the run's directory and environment in a worker, then open the shell in them."""
    app = screen.app
    app.run_worker(
        lambda: _prepare(app, handle),
        thread=True,
        group=f"shell {handle.run_id}",
        exit_on_error=False,
        description=f"shell in {handle.run_id}",
    )


def _prepare(app: App[object], handle: RunHandle) -> None:
    service = service_of(app)
    try:
        files = service.run_files(handle)
    except Exception as error:  # the backend cannot be built here: said, never raised
        notify_from_thread(app, f"No shell: {describe_error(error)}", severity="error")
        return
    if files is None:
        notify_from_thread(
            app,
            f"No shell: {handle.run_id} ran on {handle.backend}, so its directory is not on this"
            " machine (the shell is for runs on this machine; f fetches its outputs)",
            severity="warning",
        )
        return
    run_dir = files.worker_log.parent
    if not run_dir.is_dir():
        notify_from_thread(app, f"No shell: {run_dir} is gone", severity="warning")
        return
    spec, note = RunReader(service, handle).spec()
    environment: Mapping[str, str] = os.environ
    if spec is None:
        notify_from_thread(app, f"The shell has this app's environment: {note}", severity="warning")
    else:
        try:
            environment = child_environment(spec.runtime, spec.env)
        except EnvironmentConflict as error:
            notify_from_thread(
                app, f"The shell has this app's environment: {error}", severity="warning"
            )
    app.call_from_thread(run_shell, app, run_dir, dict(environment))


def run_shell(app: App[object], directory: Path, environment: Mapping[str, str]) -> None:
    """Suspend the app and run the user's shell in ``directory`` until it exits.

    Args:
        app: The app, which gives the terminal to the shell meanwhile.
        directory: Where the shell starts.
        environment: The shell's environment variables.
    """
    shell = os.environ.get("SHELL") or DEFAULT_SHELL
    failure: str | None = None
    try:
        with app.suspend():
            try:
                subprocess.run([shell], cwd=directory, env=dict(environment), check=False)
            except OSError as error:  # no such shell: the app must still come back
                failure = f"{shell}: {error.strerror or error}"
    except SuspendNotSupported:
        notify(
            app, "No shell: this terminal cannot be handed over (the web view)", severity="warning"
        )
        return
    if failure is not None:
        notify(app, f"No shell: {failure}", severity="error")
        return
    notify(app, f"Back from the shell in {directory}")
