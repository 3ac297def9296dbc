"""Starting the background watcher from the TUI, when the settings ask for it.

With ``start_watcher = true`` in the settings' ``[notify]`` table, a submit from the TUI starts
``x-tui watch --detach`` for the app's state directory unless a watcher already runs, so the run
is followed (and announced) after the TUI closes. Called from the submit's worker thread.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from x_tui.app.notify_settings import NotifySettings
from x_tui.app.watch_lock import running_pid
from x_tui.compute.store import STATE_DIR_ENV

START_SECONDS = 30.0
"""How long starting the watcher may take (it returns once the watcher holds its lock)."""


def start_watcher_if_asked(settings: NotifySettings, state_dir: Path) -> bool:
    """Start the watcher of ``state_dir`` when ``settings`` ask and none runs.

    Returns:
        Whether a watcher was started here (one that fails to start is only not started).
    """
    if not settings.start_watcher or running_pid(state_dir) is not None:
        return False
    environment = {**os.environ, STATE_DIR_ENV: str(state_dir)}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            [sys.executable, "-m", "x_tui", "watch", "--detach"],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=START_SECONDS,
            check=False,
        )
        return done.returncode == 0
    return False
