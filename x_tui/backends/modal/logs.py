"""A run's log lines from Modal's own log stream: ``python -m modal app logs APP``.

The command runs in a child process of this interpreter, so nothing Modal prints reaches x-tui's
terminal. Without follow it fetches every entry since the run was submitted (``--since``; without
it Modal prints only the last 100) and must finish within a deadline. With follow (``--follow``,
which Modal does not let ``--since`` join) the stream is read through a thread, and the run is
asked every few seconds whether it has ended; once it has, what is still coming is read until the
stream has been silent for a few seconds (and for a bounded time at most), and the stream is
stopped, since a detached app's stream may outlive its run. A stream that has said nothing by then
may not have started yet (the CLI connects first): the run's whole log is then fetched once
without follow, so a short run's lines are not lost.

Both ways the lines are given as they come, through a bounded queue: the reading thread waits for
the consumer, and a line longer than :data:`MAX_LINE` comes in pieces, so however much Modal sends
x-tui holds a bounded amount of it.
"""

from __future__ import annotations

import datetime as dt
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from x_tui.backends.modal.sdk import unanswered
from x_tui.compute.sanitize import one_line
from x_tui.compute.worker.errors import ProviderError

MAX_RANGE: Final = dt.timedelta(days=34)
"""The longest range asked for without follow (Modal refuses more than 35 days)."""
EARLY: Final = dt.timedelta(minutes=1)
"""How long before submission the range starts, so the container's first lines are in it."""
LONGEST_DRAIN: Final = 12
"""However the stream goes on once the run is final (a task's leftover process may print for
ever), it is read for at most this many drain times after the end."""
MAX_LINE: Final = 1 << 16
"""The longest piece of a line read at once (64 KiB); a longer line comes in pieces."""
QUEUED_LINES: Final = 1024
"""Lines read ahead of the consumer at most."""
EXIT_SECONDS: Final = 5.0
"""How long a following command whose output has ended is waited for to exit."""
_END: Final = object()
_STDERR_LINES: Final = 20


def logs_command(
    app_id: str,
    *,
    environment: str | None,
    follow: bool,
    since: dt.datetime,
    now: dt.datetime | None = None,
) -> list[str]:
    """The ``modal app logs`` command line for a run's app.

    Args:
        app_id: The app (``ap-...``).
        environment: The Modal environment, when one is set.
        follow: Stream until the app stops, rather than fetch what is there.
        since: When the run was submitted; the fetched range starts a minute earlier.
        now: The current time (for tests); the clock's when ``None``.

    Returns:
        The argv.
    """
    command = [sys.executable, "-m", "modal", "app", "logs", app_id]
    if environment:
        command += ["--env", environment]
    if follow:
        command.append("--follow")
    else:
        current = now or dt.datetime.now(dt.UTC)
        start = max(since - EARLY, current - MAX_RANGE)
        command += ["--since", start.astimezone(dt.UTC).isoformat()]
    return command


def _decode(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    if text.endswith("\n"):
        text = text[:-1]
    return text.removesuffix("\r")


def _failure(code: int, stderr: str) -> ProviderError:
    lines = [line for line in stderr.splitlines() if line.strip()]
    said = one_line(lines[-1]) if lines else "no message"
    return ProviderError(f"`modal app logs` failed (exit {code}): {said}")


def fetch_lines(command: list[str], *, seconds: float) -> Iterator[str]:
    """Run a non-following ``modal app logs`` and give its lines as they come.

    Raises:
        ProviderError: If it did not finish within ``seconds``, or failed (its last line said),
            after the lines read until then.
    """
    stream = _Stream(command)
    give_up = time.monotonic() + seconds
    try:
        while True:
            left = give_up - time.monotonic()
            try:
                if left <= 0:
                    raise queue.Empty
                item = stream.get(left)
            except queue.Empty:
                raise unanswered(seconds, "reading the run's logs") from None
            if item is _END:
                stream.end(seconds=give_up - time.monotonic(), total=seconds)
                return
            assert isinstance(item, str)
            yield item
    finally:
        stream.stop()


def _asked_final(is_final: Callable[[], bool]) -> bool:
    """``is_final()``, a :class:`ProviderError` counting as "not yet"."""
    try:
        return is_final()
    except ProviderError:
        return False


class _Stream:
    """A running ``modal app logs``: its lines through a bounded queue, the end of its stderr
    kept for the message when it fails."""

    def __init__(self, command: list[str]) -> None:
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        self._lines: queue.Queue[object] = queue.Queue(maxsize=QUEUED_LINES)
        self._tail: list[str] = []
        self._stopped = threading.Event()
        threading.Thread(target=self._pump, name="x-tui modal logs", daemon=True).start()
        self._errors = threading.Thread(
            target=self._keep_tail, name="x-tui modal logs", daemon=True
        )
        self._errors.start()

    def get(self, timeout: float) -> object:
        """The next line, or the end (``_END``); :class:`queue.Empty` after ``timeout``."""
        return self._lines.get(timeout=max(0.0, timeout))

    def end(self, *, seconds: float, total: float) -> None:
        """The stream has ended: wait at most ``seconds`` for the command to exit (a command that
        closed its output may still hang; :meth:`stop` then ends it).

        Args:
            seconds: How long it may take from now.
            total: The deadline the error names (the whole read's, where ``seconds`` is its rest).

        Raises:
            ProviderError: If it failed (its last line said), or did not exit in time.
        """
        try:
            code = self._process.wait(timeout=max(0.0, seconds))
        except subprocess.TimeoutExpired:
            raise unanswered(total, "reading the run's logs") from None
        self._errors.join(timeout=2.0)
        if code != 0:
            raise _failure(code, "\n".join(self._tail))

    def stop(self) -> None:
        """End the command, and the reading thread with it."""
        self._stopped.set()
        if self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _pump(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        for raw in iter(lambda: stdout.readline(MAX_LINE), b""):
            if not self._put(_decode(raw)):
                return
        self._put(_END)

    def _put(self, item: object) -> bool:
        """Queue ``item`` once there is room; ``False`` if the stream was stopped first."""
        while not self._stopped.is_set():
            try:
                self._lines.put(item, timeout=0.1)
            except queue.Full:
                continue
            return True
        return False

    def _keep_tail(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        for raw in iter(lambda: stderr.readline(MAX_LINE), b""):
            self._tail.append(_decode(raw))
            del self._tail[:-_STDERR_LINES]


def follow_lines(
    command: list[str],
    *,
    is_final: Callable[[], bool],
    poll_seconds: float,
    drain_seconds: float,
    fetch_all: Callable[[], Iterable[str]],
) -> Iterator[str]:
    """Stream a following ``modal app logs`` until it ends or the run is final and drained.

    Args:
        command: The argv, with ``--follow``.
        is_final: Whether the run has ended; asked every ``poll_seconds`` until it has, lines
            or none. A :class:`ProviderError` from it counts as "not yet".
        poll_seconds: How often the run is asked whether it has ended.
        drain_seconds: How long the stream must be silent, once the run is final, before it is
            stopped (each line read starts the wait again; :data:`LONGEST_DRAIN` of them at
            most after the end).
        fetch_all: The run's whole log without follow; its lines are given instead when the
            stream said nothing at all before it was stopped.

    Yields:
        Each line, without its line ending.

    Raises:
        ProviderError: If the stream failed before the run was final (its last line said), or
            the fetch that stands in for a silent stream failed.
    """
    stream = _Stream(command)
    final_at: float | None = None
    heard_at: float | None = None  # when the stream last gave a line
    asked_at = time.monotonic()  # when the run was last asked whether it is final
    try:
        while True:
            now = time.monotonic()
            if final_at is None and now >= asked_at + poll_seconds:  # lines flowing or not
                asked_at = now
                if _asked_final(is_final):
                    final_at = now
            if final_at is None:
                wait = asked_at + poll_seconds - now
            elif now >= final_at + LONGEST_DRAIN * drain_seconds:
                return  # lines still come, but the run ended long enough ago
            else:
                quiet_since = final_at if heard_at is None else max(final_at, heard_at)
                wait = quiet_since + drain_seconds - now
            try:
                item = stream.get(wait)
            except queue.Empty:
                if final_at is not None:
                    if heard_at is None:  # the stream may not have started: read it all once
                        stream.stop()
                        yield from fetch_all()
                    return
                continue
            if item is _END:
                if final_at is None:
                    stream.end(seconds=EXIT_SECONDS, total=EXIT_SECONDS)
                return
            assert isinstance(item, str)
            heard_at = time.monotonic()
            yield item
    finally:
        stream.stop()
