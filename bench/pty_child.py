"""A benchmark's child process in a pseudo-terminal of 120x40, as x-tui runs over SSH: Textual's
real driver, a terminal the child writes to and the benchmark reads (so that the child never
blocks on a full terminal). ``BENCH_DEBUG=1`` copies what the child draws to standard error.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass

COLUMNS, LINES = 120, 40


@dataclass(frozen=True)
class PtyChild:
    """A child started by :func:`in_pty`.

    Attributes:
        pid: Its process id.
        master: The terminal's side the benchmark reads and writes.
    """

    pid: int
    master: int

    def read(self, wait: float) -> bool:
        """Read what the child wrote, waiting up to ``wait`` seconds for it.

        Returns:
            ``False`` once the child has closed the terminal (it exited).
        """
        ready, _, _ = select.select([self.master], [], [], wait)
        if ready:
            try:
                output = os.read(self.master, 1 << 16)
            except OSError:
                return False
            if os.environ.get("BENCH_DEBUG"):
                sys.stderr.buffer.write(output)
        return True

    def drain(self, until: float) -> None:
        """Read what the child writes until ``until`` (``time.monotonic``), or it exits."""
        while (left := until - time.monotonic()) > 0:
            if not self.read(min(0.2, left)):
                return

    def write(self, data: bytes) -> None:
        """Type ``data`` at the child's terminal."""
        os.write(self.master, data)


@contextlib.contextmanager
def in_pty(argv: list[str], env: dict[str, str]) -> Iterator[PtyChild]:
    """Run ``argv`` with ``env`` in a 120x40 pseudo-terminal; killed and reaped after the block."""
    pid, master = pty.fork()
    if pid == 0:  # the child
        os.execve(argv[0], argv, env)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    try:
        yield PtyChild(pid, master)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(master)
