"""The real app on a real pseudo-terminal: ``python -m x_tui`` on an 80x24 pty, every byte it
writes kept, keys typed into it; and runs of the local backend run to their end first.

For the tests that must see what reaches a terminal (escape sequences, a hang-up), which Textual's
``Pilot`` cannot show.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import DEADLINE, wait_for
from x_tui.compute import operations
from x_tui.compute.store import RunHandle, RunStore


def run_to_the_end(project: Path, job: str, *, detail: str) -> RunHandle:
    """Submit ``job`` of ``project`` to the local backend and wait for its end; its handle, saved
    again with ``detail`` among its details (as a provider's message would be)."""
    plan = operations.plan_run(operations.open_project(project), job)
    handle = operations.submit_run(plan)
    backend = operations.backend_for(handle)
    wait_for(lambda: backend.status(handle).is_final, f"{job} to end", every=0.1)
    with_detail = dataclasses.replace(handle, details={**handle.details, "note": detail})
    RunStore().save(with_detail)
    return with_detail


@dataclass
class Terminal:
    """The app on a pty, and every byte it wrote."""

    process: subprocess.Popen[bytes]
    master: int
    output: bytearray = field(default_factory=bytearray)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read_forever(self) -> None:
        """Copy the app's output until the pty closes."""
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.output += chunk

    def seen(self) -> bytes:
        """Everything written so far."""
        with self.lock:
            return bytes(self.output)

    def wait_for(self, text: str) -> None:
        """Wait until ``text`` has been drawn (after the last key sent)."""
        wanted = text.encode()
        give_up = time.monotonic() + DEADLINE
        while wanted not in self.seen()[self._mark :]:
            assert self.process.poll() is None, f"the app exited while waiting for {text!r}"
            assert time.monotonic() < give_up, f"gave up waiting for {text!r} on the terminal"
            time.sleep(0.05)

    def press(self, key: bytes) -> None:
        """Type ``key`` and remember where the output was, for :meth:`wait_for`."""
        self._mark = len(self.seen())
        os.write(self.master, key)

    def settle(self) -> None:
        """Wait until the app has written nothing for half a second."""
        last, quiet_since = -1, time.monotonic()
        give_up = time.monotonic() + DEADLINE
        while time.monotonic() - quiet_since < 0.5 and time.monotonic() < give_up:
            size = len(self.seen())
            if size != last:
                last, quiet_since = size, time.monotonic()
            time.sleep(0.05)

    _mark: int = 0


def start_in_terminal(project: Path, state: Path, tmp: Path) -> Terminal:
    """``python -m x_tui`` on ``project`` and the store ``state``, on a new 80x24 pty with
    ``TERM=xterm-256color`` and no settings file (``tmp`` holds where it would be)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {key: value for key, value in os.environ.items() if not key.startswith("SUBSTRAX_")}
    env.update(
        TERM="xterm-256color",
        COLUMNS="80",
        LINES="24",
        SUBSTRAX_STATE_DIR=str(state),
        X_TUI_CONFIG=str(tmp / "no-settings.toml"),
    )
    env.pop("NO_COLOR", None)
    env.pop("TEXTUAL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "x_tui", "--project", str(project)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=project,
        start_new_session=True,
    )
    os.close(slave)
    terminal = Terminal(process=process, master=master)
    threading.Thread(target=terminal.read_forever, daemon=True).start()
    return terminal
