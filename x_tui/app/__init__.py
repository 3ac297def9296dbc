"""The Textual application. ``run_app`` is the one entry point; it imports Textual only when called.

Nothing is imported here at package import, so ``x_tui.app.service`` and ``x_tui.app.settings``
load without Textual (the settings are read before Textual is imported, because the low-bandwidth
profile sets ``TEXTUAL_FPS``, which Textual reads once).
"""

from __future__ import annotations

import gc
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from x_tui.app.deadlines import Write
    from x_tui.app.service import Service


def run_app(
    project: Path | None,
    *,
    demo: bool = False,
    low_bandwidth: bool | None = None,
    settings_file: Path | None = None,
) -> int:
    """Run the TUI until the user quits.

    Args:
        project: The project root; ``None`` outside a project (the runs are still shown).
        demo: Open the bundled demo project instead (copied once to a writable place).
        low_bandwidth: Force the low-bandwidth profile on or off (``--low-bandwidth``); ``None``
            keeps the settings file's choice.
        settings_file: Read the settings from this file instead of the default one.

    Returns:
        The exit status: 0 after a normal quit.
    """
    hold_garbage_until_listed()
    from x_tui.app.settings import apply_low_bandwidth_environment, load_settings

    settings = load_settings(settings_file)
    if low_bandwidth is not None:
        settings = replace(settings, low_bandwidth=low_bandwidth)
    apply_low_bandwidth_environment(settings)
    if demo:
        from x_tui.demo import prepare_demo_project

        project = prepare_demo_project()
    from x_tui.app.app import XTuiApp

    app = XTuiApp(project, demo=demo, settings=settings)
    result = app.run()
    collect_garbage_from_now_on()  # an app that ended before the store was listed never did
    wait_for_submits(app.service)
    wait_for_writes(app.service)
    return result if isinstance(result, int) else app.return_code or 0


GARBAGE_THRESHOLDS = (50_000, 20, 10)
"""The cycle collector's thresholds while the TUI runs (Python's defaults: 700, 10, 10)."""

GARBAGE_HOLD_SECONDS = 30.0
"""The longest the collector is held after the first frame, should the store never be listed."""

_held_for_start = False


def collect_garbage_in_larger_batches() -> None:
    """Run Python's cycle collector after 50,000 new objects instead of 700.

    Starting the TUI makes and drops a few hundred thousand objects (widgets, styles, segments of
    each drawn line). At the default thresholds the collector ran about 170 times before the first
    screenful of runs, once over every object the modules made, and took 50-60 ms of a 0.4 s start
    (a bare Textual app: 15 ms). At these it runs about 18 times, in 20-27 ms. A running app's
    garbage is still collected, in fewer and larger passes.
    """
    gc.set_threshold(*GARBAGE_THRESHOLDS)


def hold_garbage_until_listed() -> None:
    """No cycle collection until the whole store is in the runs table
    (:func:`collect_garbage_from_now_on`).

    What start-up makes (modules, classes, styles, widgets) and the store's listing (a handle and
    a row a run) live as long as the app, so a pass over them finds nearly nothing: even at
    :data:`GARBAGE_THRESHOLDS` one pass during start-up took 13 ms, a twentieth of the time to
    the first screenful of runs; and while 100,000 runs were read after the first frame, it ran
    some 34 young passes and one of 80 ms over the middle generation, 200-225 ms in all with
    every thread stopped (14-24 ms once held until they are listed). Called first, before
    Textual is imported (``run_app``; the benchmarks, as ``x-tui`` starts).
    """
    global _held_for_start
    collect_garbage_in_larger_batches()
    gc.disable()
    _held_for_start = True


def collect_garbage_from_now_on() -> None:
    """Once the store is listed (or :data:`GARBAGE_HOLD_SECONDS` after the first frame): what
    start-up and the listing made is frozen (never scanned again), and the collector runs from
    here at :data:`GARBAGE_THRESHOLDS`.

    Does nothing unless :func:`hold_garbage_until_listed` held the collector, so an app run by a
    test (or inside another program) leaves that process's collector as it found it.
    """
    global _held_for_start
    if not _held_for_start:
        return
    _held_for_start = False
    gc.freeze()
    gc.enable()


def wait_for_submits(service: Service) -> None:
    """After the app has closed, wait for any submit still going, so its handle is saved.

    A submit the user left (a first image build can take many minutes) creates its run whether or
    not x-tui is open; leaving now would lose the handle, and with it the only way to follow,
    fetch or cancel that run from here. ``ctrl+c`` stops the wait, saying what is lost.

    Args:
        service: The app's service.
    """
    pending = service.submits.pending()
    if not pending:
        return
    names = ", ".join(f"{submit.job} to {submit.backend}" for submit in pending)
    print(
        f"x-tui: waiting for the submit of {names} to finish, so its run's handle is saved"
        " (ctrl+c stops waiting; a run created after that is not known to x-tui)",
        file=sys.stderr,
        flush=True,
    )
    try:
        service.submits.wait()
    except KeyboardInterrupt:
        print("x-tui: stopped waiting; the submit was abandoned", file=sys.stderr, flush=True)


def wait_for_writes(service: Service) -> None:
    """After the app has closed, wait for the cancels and fetches still going, saying so.

    The app let go of them as it closed (their workers would otherwise hold the event loop, with
    nothing on the screen); each is waited for at most until its own deadline. ``ctrl+c`` stops
    the wait, and the program exits, leaving them unfinished.

    Args:
        service: The app's service.
    """
    pending = service.writes.pending()
    if not pending:
        return
    print(
        f"x-tui: waiting for {_writes_named(pending)} to finish"
        f" (ctrl+c stops waiting and leaves {'it' if len(pending) == 1 else 'them'} unfinished)",
        file=sys.stderr,
        flush=True,
    )
    try:
        late = service.writes.wait()
    except KeyboardInterrupt:
        left = service.writes.pending()  # some may have finished while it waited
        print(
            f"x-tui: stopped waiting; left unfinished: {_writes_named(left)}",
            file=sys.stderr,
            flush=True,
        )
        return
    if late:
        print(
            f"x-tui: {_writes_named(late)} did not finish within"
            f" {'its deadline' if len(late) == 1 else 'their deadlines'}",
            file=sys.stderr,
            flush=True,
        )


def _writes_named(writes: Sequence[Write]) -> str:
    from x_tui.compute.sanitize import escaped

    return escaped(", ".join(write.what for write in writes))
