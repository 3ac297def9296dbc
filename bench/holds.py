"""What held a benchmark's app while a key waited: the event loop's long turns and the other
threads' long holds of the interpreter, noted by the child and matched to slow keys by the
parent (``keys_while_listing.py --why``).

In the child, :func:`note_holds` notes, each on a line of its own file as it ends:

- ``turn START SECONDS WHAT``: a turn of the event loop longer than the threshold: the messages
  it began to handle (the widget or app, the message's type), else the task it stepped (its
  coroutine's name);
- ``held START SECONDS WHERE``: a thread of its own that wakes each millisecond waited longer
  than the threshold for the interpreter (a long call into C in another thread, such as one parse
  of a large file, holds every other thread meanwhile; so may the event loop's thread itself,
  or several threads taking turns): after such a wait it notes where the threads other than the
  event loop's are then (a hold of theirs ended there, or just before).

Times are ``time.time()`` seconds, as the parent notes its key presses.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple


class Hold(NamedTuple):
    """Something that kept the app from a key: a long turn or another thread's hold."""

    kind: str
    start: float
    seconds: float
    what: str


def note_holds(path: Path, *, threshold: float = 0.01) -> None:
    """Note in ``path`` each turn of this thread's event loop, and each hold of the interpreter
    by another thread, longer than ``threshold`` seconds (call before the app runs)."""
    import asyncio.events

    import textual.message_pump

    out = path.open("a", encoding="utf-8", buffering=1)
    lock = threading.Lock()

    def note(kind: str, start: float, seconds: float, what: str) -> None:
        with lock:
            out.write(f"{kind} {start!r} {seconds!r} {' '.join(what.split())}\n")

    handled: list[str] = []  # the messages the turn under way began to handle
    dispatch = textual.message_pump.MessagePump._dispatch_message

    def dispatched(self: Any, message: Any) -> Any:
        handled.append(f"{type(self).__name__} {type(message).__name__}")
        return dispatch(self, message)

    textual.message_pump.MessagePump._dispatch_message = dispatched  # type: ignore[method-assign]
    run = asyncio.events.Handle._run

    def timed(self: asyncio.events.Handle) -> None:
        handled.clear()
        started, clock = time.time(), time.perf_counter()
        try:
            run(self)
        finally:
            took = time.perf_counter() - clock
            if took > threshold:
                note("turn", started, took, ", ".join(handled[:3]) or _step_name(self))

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    main = threading.get_ident()

    def watch() -> None:
        last = time.perf_counter()
        while True:
            time.sleep(0.001)
            now = time.perf_counter()
            if now - last > threshold + 0.001:
                frames = sys._current_frames()
                where = "; ".join(
                    f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}"
                    f" {frame.f_code.co_name}"
                    for ident, frame in frames.items()
                    if ident not in (main, threading.get_ident())
                )
                note("held", time.time() - (now - last), now - last, where or "-")
            last = now

    threading.Thread(target=watch, name="bench holds", daemon=True).start()


def _step_name(handle: Any) -> str:
    """The task a loop turn stepped: its coroutine's name (a timer's callback, a worker's
    function, where the coroutine is one of theirs)."""
    callback = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    coroutine = getattr(task, "get_coro", lambda: None)()
    name = getattr(coroutine, "__qualname__", None) or getattr(callback, "__qualname__", None)
    owner = getattr(getattr(coroutine, "cr_frame", None), "f_locals", {}).get("self")
    inner = getattr(owner, "_callback", None) or getattr(owner, "_work", None)
    inner = getattr(inner, "func", inner)  # a worker's method, bound with its arguments
    if inner is not None:
        name = f"{name} {getattr(inner, '__qualname__', type(inner).__name__)}"
    return f"step {name or callback!r}"


def read_holds(lines: Iterable[str]) -> list[Hold]:
    """The holds noted in a child's lines (other lines are passed over)."""
    found: list[Hold] = []
    for line in lines:
        words = line.split(" ", 3)
        if len(words) == 4 and words[0] in ("turn", "held"):
            found.append(Hold(words[0], float(words[1]), float(words[2]), words[3].strip()))
    return found


def explain(pressed: float, waited: float, holds: Iterable[Hold]) -> list[str]:
    """What overlapped a key pressed at ``pressed`` that waited ``waited`` seconds for its
    frame: each hold's offset from the press, its length and what it was."""
    return [
        f"      {1000 * (hold.start - pressed):+6.0f} ms  {1000 * hold.seconds:5.0f} ms"
        f"  {hold.kind} {hold.what[:90]}"
        for hold in sorted(holds, key=lambda hold: hold.start)
        if hold.start < pressed + waited and hold.start + hold.seconds > pressed
    ]
