"""What the app loads before its first screen is up: not the run screen and its log view, nor
what plans sweeps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import asyncio, sys
from x_tui.app.app import XTuiApp
from x_tui.app.service import Service

async def main() -> None:
    app = XTuiApp(None, service=Service(), poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.view_keeper is not None
        loaded = [name for name in LATER if name in sys.modules]
        print(" ".join(loaded) or "none")

LATER = (
    "x_tui.app.run_screen",
    "x_tui.widgets.log_view",
    "x_tui.widgets.devices_view",
    "x_tui.widgets.metrics_view",
    "x_tui.compute.sweep_runs",  # the sweeps are read from their store, not planned
)
asyncio.run(main())
"""


def _in_an_app(tmp_path: Path, probe: str) -> str:
    """What ``probe`` prints, run in a fresh interpreter on an empty store and settings."""
    env = dict(
        os.environ,
        SUBSTRAX_STATE_DIR=str(tmp_path / "state"),
        X_TUI_CONFIG=str(tmp_path / "settings.toml"),
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_main_screen_opens_without_loading_the_run_screen(tmp_path: Path) -> None:
    assert _in_an_app(tmp_path, PROBE) == "none"


AT_IMPORT = """
import sys
import x_tui.app.app, x_tui.app.service
print(" ".join(name for name in AFTER_FIRST_FRAME if name in sys.modules) or "none")
"""

AFTER_FIRST_FRAME = (
    "x_tui.compute.operations",  # the project is read once the first frame is drawn
    "x_tui.app.run_watch",  # and the running runs' progress watched
    "x_tui.app.run_sources",
    "x_tui.compute.extensions",
    "x_tui.compute.worker.spec",  # with the project's jobs, or the first run or sweep named
    "x_tui.widgets.spec_view",  # with the first job shown
    "x_tui.app.file_watch",  # the store is watched once the first screenful is shown
    "x_tui.app.inotify",
    "x_tui.compute.launches",  # launch records are read by the poller, after the first frame
    "secrets",  # (with the first run or sweep named)
    "x_tui.compute.secrets",  # (with the first job spec or sweep read)
    "x_tui.compute.logindex_search",  # (with the first log searched, or a search kept)
    "shlex",  # (with the first command line shown)
    "tomllib",  # (with the first settings or lock file read for a handle version)
)


def test_the_app_and_its_engine_load_without_what_waits_for_the_first_frame(
    tmp_path: Path,
) -> None:
    probe = "AFTER_FIRST_FRAME = " + repr(AFTER_FIRST_FRAME) + "\n" + AT_IMPORT
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"


ON_THE_LOOP = """
import asyncio, sys, threading
from x_tui.app.app import XTuiApp
from x_tui.app.service import Service

on_the_loop = []


class Noting:
    # Notes each module first looked for on the event loop's thread (the main one here).
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            on_the_loop.append(name)
        return None


async def main() -> None:
    app = XTuiApp(None, service=Service(), poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        sys.meta_path.insert(0, Noting())  # from the first frame on
        for _ in range(500):
            await pilot.pause(0.01)
            if app.main_screen._watcher is not None:
                break
        else:
            raise SystemExit("the running runs were never watched")
        print(" ".join(name for name in WATCH if name in on_the_loop) or "none")

WATCH = ("x_tui.app.run_watch", "x_tui.app.run_sources", "x_tui.compute.operations")
asyncio.run(main())
"""


def test_the_watch_of_running_runs_is_loaded_off_the_event_loop(tmp_path: Path) -> None:
    # Loading it on the event loop held keys and frames 0.25-0.4 s while a large store was read.
    assert _in_an_app(tmp_path, ON_THE_LOOP) == "none"
