"""Fetch a run's outputs here, after asking where to, with progress.

The fetch runs in a thread worker owned by the app (it goes on when the user leaves the screen);
the copy's size is measured every :data:`PROGRESS_SECONDS` and posted to the screen that asked as
:class:`FetchProgress`, and a toast says where the copy is once it is done.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import App
from textual.message import Message
from textual.screen import Screen

from x_tui.app.app_context import describe_error, notify_from_thread, service_of
from x_tui.app.confirm_screen import AskPathScreen
from x_tui.app.run_sources import RunReader
from x_tui.compute import operations
from x_tui.compute.store import RunHandle
from x_tui.widgets.safe_text import safe_text

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
