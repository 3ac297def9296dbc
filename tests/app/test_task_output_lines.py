"""ML output as it is written, through the real worker: a progress bar redrawn with ``\\r`` on one
stream while metrics are printed on the other, a task killed mid-line, a task past its budget.

Every metric line must reach ``worker.log``, ``x-tui logs`` and the TUI's Log tab whole and
prefixed; every bar state prefixed; the viewer shows the bar's last state; the worker's notice is
a line of its own.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import asynchronous, wait_for, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.compute import operations
from x_tui.compute.sanitize import plain
from x_tui.compute.store import RunHandle
from x_tui.widgets.log_view import LogView

from .app_support import make_app
from .screens_support import submitted, write_project

STEPS = 12

# Draws a tqdm-style bar on one stream while printing metrics on the other; one metric line is
# split in two writes with a bar state drawn between them (what garbled the combined log).
BAR_AND_METRICS = f"""\
import sys, time

bar, metrics = getattr(sys, sys.argv[1]), getattr(sys, sys.argv[2])


def draw(i):
    bar.write(f"\\r{{i * 100 // {STEPS}:3d}}%|{{'#' * i}}{{' ' * ({STEPS} - i)}}| {{i}}/{STEPS}")
    bar.flush()


for i in range({STEPS} + 1):
    draw(i)
    if i:
        metrics.write(f"step {{i}}: ")
        metrics.flush()
        time.sleep(0.01)
        draw(i)
        metrics.write(f"val_loss={{1 / i:.4f}}\\n")
        metrics.flush()
    time.sleep(0.01)
bar.write("\\n")
bar.flush()
"""

DIES = """\
import os, signal, sys

sys.stdout.write("half a li")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""

OVERRUNS = """\
import sys, time

sys.stdout.write("sleeping")
sys.stdout.flush()
time.sleep(600)
"""

ML_JOB = """
[tool.substrax.compute.jobs.ml]
timeout_seconds = 8
[tool.substrax.compute.jobs.ml.commands]
fit = ["python", "bar.py", "stderr", "stdout"]
rev = ["python", "bar.py", "stdout", "stderr"]
dies = ["python", "dies.py"]
over = ["python", "over.py"]
"""

NOTICE = re.compile(r"\[over\] x-tui: ran past its [0-9.]+ s budget; its group was killed")


def _metric(task: str, step: int) -> str:
    return f"[{task}] step {step}: val_loss={1 / step:.4f}"


def _last_state(task: str) -> str:
    return f"[{task}] 100%|{'#' * STEPS}| {STEPS}/{STEPS}"


async def _finished_run(state_dir: Path, tmp_path: Path) -> RunHandle:
    project = write_project(tmp_path / "sample", ML_JOB)
    for name, source in (("bar.py", BAR_AND_METRICS), ("dies.py", DIES), ("over.py", OVERRUNS)):
        (project / name).write_text(source, encoding="utf-8")
    handle = await submitted(project, "ml")
    backend = operations.backend_for(handle)
    await asyncio.to_thread(
        wait_for, lambda: backend.status(handle).is_final, "the run's end", every=0.05
    )
    return handle


def _worker_log(handle: RunHandle) -> bytes:
    return (Path(handle.details["run_dir"]) / "worker.log").read_bytes()


def _check_lines(lines: list[str]) -> None:
    """What every view of the combined log must show, line by line (``\\r`` not resolved)."""
    for task in ("fit", "rev"):
        for step in range(1, STEPS + 1):
            assert _metric(task, step) in lines, f"{task} step {step} is not a whole line"
        bar_lines = [line for line in lines if f"/{STEPS}" in line and line.startswith(f"[{task}]")]
        assert bar_lines, f"no bar line of {task}"
        for line in bar_lines:
            states = [state for state in line.split("\r") if state]
            assert all(state.startswith(f"[{task}] ") for state in states), line
            assert all("step" not in state for state in states), line
    assert "[dies] half a li ↵" in lines
    assert "[over] sleeping ↵" in lines
    assert any(NOTICE.fullmatch(line) for line in lines), "the budget notice is not its own line"


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_bars_and_metrics_reach_worker_log_the_cli_and_the_log_tab_whole_and_prefixed(
    state_dir: Path, tmp_path: Path
) -> None:
    handle = await _finished_run(state_dir, tmp_path)

    # worker.log, as substrax's readers see it.
    _check_lines(_worker_log(handle).decode("utf-8").split("\n"))

    # x-tui logs, another process.
    env = {**os.environ, "SUBSTRAX_STATE_DIR": str(state_dir)}
    printed = subprocess.run(
        [sys.executable, "-m", "x_tui", "logs", handle.run_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert printed.returncode == 0, printed.stderr
    cli_lines = printed.stdout.split("\n")
    for task in ("fit", "rev"):
        for step in range(1, STEPS + 1):
            assert any(line.endswith(_metric(task, step)) for line in cli_lines), (task, step)
    assert any(NOTICE.search(line) for line in cli_lines)

    # The TUI's Log tab: the viewer's text of every line, and what the screen shows.
    app = make_app(tmp_path / "sample")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(RunScreen(handle))
        view = app.screen.query_one("#combined-log", LogView)
        await wait_until(
            pilot, lambda: view.index is not None and view.index.line_count > 0, "the log"
        )
        index = view.index
        assert index is not None
        await wait_until(pilot, lambda: index.complete, "the whole log indexed")
        shown = [plain(index.read(*index.span(n))[0]) for n in range(index.line_count)]
        for task in ("fit", "rev"):
            assert _last_state(task) in shown, f"the viewer does not show {task}'s last state"
            assert not [line for line in shown if "\r" in line]
            for step in range(1, STEPS + 1):
                assert _metric(task, step) in shown
        rows = _rows(view)
        assert "[dies] half a li ↵" in rows
        assert any(NOTICE.fullmatch(row) for row in rows)
        await pilot.press("home")
        await pilot.pause()
        top = _rows(view)
        assert _metric("fit", 1) in top
        assert any(row.startswith("[fit] ") and f"/{STEPS}" in row for row in top)


def _rows(view: LogView) -> list[str]:
    lines = view.lines_view
    height = lines.scrollable_content_region.height
    return [
        "".join(segment.text for segment in lines.render_line(y)).rstrip() for y in range(height)
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("leftovers")
@asynchronous
async def test_t_shows_when_each_line_came_and_a_log_without_times_says_so(
    state_dir: Path, tmp_path: Path
) -> None:
    handle = await _finished_run(state_dir, tmp_path)
    times = Path(handle.details["run_dir"]) / "worker.log.times"
    assert times.is_file()
    app = make_app(tmp_path / "sample")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(RunScreen(handle))
        view = app.screen.query_one("#combined-log", LogView)
        await wait_until(pilot, lambda: "[over] sleeping ↵" in _rows(view), "the log's tail")
        await pilot.press("t")
        stamp = re.compile(r"\d\d:\d\d:\d\d\.\d\d\d \[(fit|rev|dies|over)\] ")
        await wait_until(pilot, lambda: any(stamp.match(row) for row in _rows(view)), "the stamps")
        assert any(re.fullmatch(stamp.pattern + r"sleeping ↵", row) for row in _rows(view))
        await pilot.press("t")
        await wait_until(pilot, lambda: "[over] sleeping ↵" in _rows(view), "no stamps")
        times.unlink()
        view.open(view.path)  # the same log again, now without its times file
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        assert "no timestamps for this log" in [n.message for n in app._notifications]
        assert "[over] sleeping ↵" in _rows(view)
        assert app.screen is not None  # the app goes on
