"""Keys while a large store is listed: how long a key takes to show on the screen in the seconds
after x-tui starts on 100,000 runs (the rest of the store is read, and taken into the runs table,
once the newest runs are on the screen), against a bare Textual app pressed the same way.

Each sample is a fresh process in a 120x40 pseudo-terminal (Textual's real driver, as over SSH),
started as ``x-tui`` starts (the cycle collector held as ``run_app`` holds it) with a view kept
from an earlier session, as a user's store has one. Once the first screenful of runs is drawn,
``down`` and ``up`` are written to the terminal in turn, one every 100 ms for ``--seconds``; the
app notes when each move of the cursor is next drawn. A key's time is from its bytes written to
the terminal to that frame. The reference is a bare Textual app with the same widgets and a data
table of 30 rows (``bench/bare_app.py``), pressed the same way in the same run.

    uv run python bench/keys_while_listing.py [--runs 100000] [--samples 3] [--seconds 4]
        [--state DIR] [--why MS]

``--state DIR`` keeps the store there (as ``bench/startup.py --state``; made on the first run).
``--why MS`` prints, under each x-tui key that waited more than ``MS`` milliseconds, what held the
app meanwhile: the event loop's turns of over 10 ms (the messages each handled) and the other
threads' holds of the interpreter (``bench/holds.py``); the noting costs the app a little time.

Aim: no key waits more than 0.25 s for its frame while the store is listed (the bare app's worst
is printed beside it; the median of both shows what a key costs when nothing else runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bare_app import bare_app
from holds import Hold, explain, note_holds, read_holds
from pty_child import COLUMNS, LINES, in_pty
from startup import bench_store

PRESS_EVERY = 0.1
KEYS = (b"\x1b[B", b"\x1b[A")  # down, up: the cursor moves at every press


# The child side ---------------------------------------------------------------------------------


def _note_drawn_moves(table_class: type, marker: Path) -> Callable[[], None]:
    """Note, for each move of ``table_class``'s cursor, when the frame that shows it is drawn.

    Returns:
        What starts the count (the app's own moves before the keys are not counted).
    """
    import textual.screen

    moves: list[int] = []  # each counted move's step: +1 down, -1 up, else what it was
    drawn = [0]
    counting = [False]
    watch = table_class.watch_cursor_coordinate  # type: ignore[attr-defined]

    def watched(self: object, old: Any, new: Any) -> None:
        if counting[0]:
            moves.append(new.row - old.row)
        watch(self, old, new)

    table_class.watch_cursor_coordinate = watched  # type: ignore[attr-defined]
    refresh = textual.screen.Screen._compositor_refresh

    def refreshed(self: textual.screen.Screen[object]) -> None:
        refresh(self)
        if drawn[0] < len(moves):
            at = time.time()
            with marker.open("a", encoding="utf-8") as out:
                for step in moves[drawn[0] :]:
                    out.write(f"drawn {step} {at!r}\n")
            drawn[0] = len(moves)

    textual.screen.Screen._compositor_refresh = refreshed  # type: ignore[method-assign,assignment]

    def start() -> None:
        counting[0] = True

    return start


def _child_xtui(marker: Path, holds: Path | None) -> None:
    from x_tui.app import hold_garbage_until_listed

    hold_garbage_until_listed()  # first, as ``x-tui`` itself starts (``run_app``)
    if holds is not None:
        note_holds(holds)
    from x_tui.app.app import XTuiApp
    from x_tui.app.service import Service
    from x_tui.widgets.runs_table import RunsTable

    start_counting = _note_drawn_moves(RunsTable, marker)

    class Timed(XTuiApp):
        def on_ready(self) -> None:
            self.set_interval(0.01, self._check_rows)

        def _check_rows(self) -> None:
            table = self.main_screen.runs
            if table.row_count >= 30 and not marker.exists():
                table.focus()
                start_counting()
                marker.write_text(f"ready {time.time()!r}\n", encoding="utf-8")

    Timed(None, service=Service()).run()


def _child_bare(marker: Path) -> None:
    from textual.widgets import DataTable

    start_counting = _note_drawn_moves(DataTable, marker)

    def ready(app: Any) -> None:
        app.query_one(DataTable).focus()
        start_counting()
        marker.write_text(f"ready {time.time()!r}\n", encoding="utf-8")

    bare_app(rows=30, on_ready=ready).run()


# The parent side --------------------------------------------------------------------------------


def sample(
    kind: str, state: Path, scratch: Path, *, seconds: float, why: bool = False
) -> tuple[list[tuple[float, float]], list[Hold]]:
    """One fresh process of ``kind`` (``bare`` or ``x-tui``): each key's press time and seconds
    to its frame, and what held the app (with ``why``; x-tui only)."""
    marker = scratch / f"{kind}.marks"
    marker.unlink(missing_ok=True)
    holds = scratch / f"{kind}.holds"
    holds.unlink(missing_ok=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(SUBSTRAX_STATE_DIR=str(state), X_TUI_CONFIG=str(scratch / "settings.toml"))
    env.update(TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(LINES))
    argv = [sys.executable, __file__, "--child", kind, "--marker", str(marker)]
    if why and kind == "x-tui":
        argv += ["--holds", str(holds)]
    pressed: list[float] = []
    with in_pty(argv, env) as child:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            child.read(0.01)
        next_press = time.monotonic()
        stop = next_press + seconds
        while time.monotonic() < stop:
            child.read(max(0.0, next_press - time.monotonic()))
            if time.monotonic() >= next_press:
                pressed.append(time.time())
                child.write(KEYS[len(pressed) % 2 - 1])
                next_press += PRESS_EVERY
        child.drain(time.monotonic() + 2)
    drawn = [
        (int(words[1]), float(words[2]))
        for words in (line.split() for line in marker.read_text(encoding="utf-8").splitlines())
        if words[0] == "drawn"
    ]
    held = read_holds(holds.read_text(encoding="utf-8").splitlines()) if holds.exists() else []
    return paired(pressed, drawn), held


def paired(pressed: list[float], drawn: list[tuple[int, float]]) -> list[tuple[float, float]]:
    """Each key's press time and seconds to the frame that shows its move: the next move drawn
    after it, one row down for ``down`` (odd keys) and one up for ``up`` (a move the app made
    itself, such as keeping the cursor on its run as rows come in above it, is passed over)."""
    found: list[tuple[float, float]] = []
    moves = iter(drawn)
    for number, at in enumerate(pressed, 1):
        step = 1 if number % 2 else -1
        for moved, shown in moves:
            if moved == step and shown >= at:
                found.append((at, shown - at))
                break
    return found


def keep_a_view(state: Path) -> None:
    """A view kept from an earlier session, as a user's store has (the main screen, an hour ago)."""
    view = {
        "screen": "main",
        "pane": "runs",
        "run_id": None,
        "tab": None,
        "log_filter": None,
        "log_search": None,
        "log_top": None,
        "runs_filter": None,
        "selected_run": None,
        "seen_at": time.time() - 3600,
    }
    path = state / "x-tui" / "view.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(view), encoding="utf-8")


def main() -> int:
    """Press keys in both apps and print how long they took to show."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--state", type=Path)
    parser.add_argument("--why", type=float, metavar="MS")
    parser.add_argument("--child", choices=("bare", "x-tui"))
    parser.add_argument("--marker", type=Path)
    parser.add_argument("--holds", type=Path)
    args = parser.parse_args()
    if args.child == "bare":
        _child_bare(args.marker)
        return 0
    if args.child == "x-tui":
        _child_xtui(args.marker, args.holds)
        return 0
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        state, runs = bench_store(args.state, scratch, args.runs)
        found: dict[str, list[float]] = {"bare": [], "x-tui": []}
        worst: dict[str, list[float]] = {"bare": [], "x-tui": []}
        why: list[str] = []
        for index in range(args.samples + 1):  # the first pair warms up, not counted
            for kind in ("bare", "x-tui"):
                keep_a_view(state)
                keys, held = sample(
                    kind, state, scratch, seconds=args.seconds, why=args.why is not None
                )
                taken = [seconds for _, seconds in keys]
                if index and taken:
                    found[kind] += taken
                    worst[kind].append(max(taken))
                if index and kind == "x-tui" and args.why is not None:
                    why += _why(keys, held, args.why / 1000, sample_number=index)
    print(
        f"keys while x-tui lists {runs:,} runs (the {args.seconds:g} s after its first screenful),"
        f" a key every {PRESS_EVERY * 1000:.0f} ms, {args.samples} samples"
    )
    for kind in ("bare", "x-tui"):
        keys = found[kind]
        if not keys:
            print(f"  {kind}: no key was drawn")
            return 1
        ms = sorted(seconds * 1000 for seconds in keys)
        print(
            f"  {kind:6} {len(keys):4d} keys: median {statistics.median(ms):5.1f} ms,"
            f" 95th {ms[int(len(ms) * 0.95)]:5.1f} ms,"
            f" worst per sample {', '.join(f'{w * 1000:.0f}' for w in worst[kind])} ms"
        )
    ratio = max(found["x-tui"]) / max(found["bare"])
    print(f"  worst key, x-tui over bare: {ratio:.1f}x")
    met = max(found["x-tui"]) <= 0.25
    print(f"  aim, no key over 0.25 s while the store is listed: {'met' if met else 'NOT met'}")
    if why:
        print(f"  x-tui keys over {args.why:g} ms, and what held the app meanwhile:")
        print("\n".join(why))
    return 0


def _why(
    keys: list[tuple[float, float]], held: list[Hold], over: float, *, sample_number: int
) -> list[str]:
    """For each key that waited more than ``over`` seconds: a line, and what held the app."""
    lines: list[str] = []
    first = keys[0][0] if keys else 0.0
    for pressed, seconds in keys:
        if seconds > over:
            at = pressed - first
            lines.append(f"    sample {sample_number}, key at {at:5.2f} s: {seconds * 1000:.0f} ms")
            lines += explain(pressed, seconds, held) or ["      (nothing noted)"]
    return lines


if __name__ == "__main__":
    sys.exit(main())
