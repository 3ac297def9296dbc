"""Open a 500 MB, 5-million-line log: time until its last lines are on screen, and peak memory.

x-tui's ``LogView`` against toolong (the Textual log viewer x-tui's design follows) on the same
file, measured in the same run, each in a fresh child process running the app headless at 80x24
(``App.run_test``) and polling the rendered rows until the bottom row shows the file's last line.
Times are from the start of the child's script (before it imports Textual) and include the
imports; the peak resident memory is the child's own (``ru_maxrss``). For x-tui the time until
the whole file is indexed (line numbers from the first line) is noted too. toolong runs in its
own environment (``uv run --no-project --with toolong``); if it cannot be installed, the
reference is ``tail -n 50`` on the same file and the output says so.

    uv run python bench/log_open.py [--lines 5000000] [--dir /tmp/x-tui-bench] [--samples 3]

The log is generated once (100-byte lines) and reused while its size matches.
"""

from __future__ import annotations

import time

_SCRIPT_START = time.monotonic()

import argparse  # noqa: E402 - the start time is taken before any import
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

LINE_BYTES = 100
SIZE = (80, 24)
DEADLINE_SECONDS = 300.0


def line_text(number: int) -> str:
    """The text of line ``number`` (99 characters; the newline makes 100 bytes)."""
    head = (
        f"2026-09-19T{(number // 3_600_000) % 24:02d}:{(number // 60_000) % 60:02d}:"
        f"{(number // 1000) % 60:02d}.{number % 1000:03d}Z INFO train step={number:09d} "
        f"loss={1.0 / (1 + number % 977):.6f}"
    )
    return head.ljust(LINE_BYTES - 1, ".")


def ensure_log(directory: Path, lines: int) -> Path:
    """The benchmark log, written once (reused while its size is right)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"bench-{lines}.log"
    if path.exists() and path.stat().st_size == lines * LINE_BYTES:
        return path
    partial = path.with_suffix(".partial")
    started = time.perf_counter()
    with partial.open("w", encoding="ascii") as out:
        batch = 10_000
        for first in range(0, lines, batch):
            stop = min(lines, first + batch)
            out.write("".join(f"{line_text(n)}\n" for n in range(first, stop)))
    partial.rename(path)
    print(f"wrote {path} ({lines:,} lines) in {time.perf_counter() - started:.1f} s")
    return path


# The child side ---------------------------------------------------------------------------------


def _rows_of(widget: Any) -> list[str]:
    height = widget.size.height
    return ["".join(s.text for s in widget.render_line(y)).rstrip() for y in range(height)]


async def _wait_last_line(app: Any, pilot: Any, last: str) -> float:
    begin = time.monotonic()
    while time.monotonic() - begin < DEADLINE_SECONDS:
        try:
            lines = app.screen.query_one("LogLines")
            shown = [row for row in _rows_of(lines) if row]
        except Exception:  # not mounted yet (toolong mounts its view lazily)
            shown = []
        if shown and shown[-1].startswith(last[:60]):
            return time.monotonic()
        await pilot.pause(0.005)
    raise SystemExit("the last line never showed")


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def child_xtui(path: Path, last: str) -> dict[str, float]:
    """Run x-tui's LogView headless; report when the last line and the full index were there."""
    from textual.app import App, ComposeResult

    from x_tui.widgets.log_view import LogView

    class Viewer(App[None]):
        def compose(self) -> ComposeResult:
            yield LogView(path)

    result: dict[str, float] = {}

    async def run() -> None:
        app = Viewer()
        async with app.run_test(size=SIZE) as pilot:
            result["app_start"] = time.monotonic()
            result["last_line"] = await _wait_last_line(app, pilot, last)
            result["rss_last_line_kib"] = _rss_kib()
            view = app.query_one(LogView)
            while view.index is None or not view.index.complete:
                await pilot.pause(0.005)
            result["indexed"] = time.monotonic()
            result["rss_indexed_kib"] = _rss_kib()
            result["line_count"] = view.index.line_count

    asyncio.run(run())
    return result


def child_toolong(path: Path, last: str) -> dict[str, float]:
    """Run toolong's app headless; report when the last line was there."""
    from toolong.ui import UI  # type: ignore[import-not-found]

    result: dict[str, float] = {}

    async def run() -> None:
        app = UI([str(path)])
        async with app.run_test(size=SIZE) as pilot:
            result["app_start"] = time.monotonic()
            result["last_line"] = await _wait_last_line(app, pilot, last)
            result["rss_last_line_kib"] = _rss_kib()

    asyncio.run(run())
    return result


def child_main(kind: str, path: Path, lines: int) -> None:
    last = line_text(lines - 1)
    result = child_xtui(path, last) if kind == "x-tui" else child_toolong(path, last)
    relative = {
        key: (value - _SCRIPT_START if key in {"app_start", "last_line", "indexed"} else value)
        for key, value in result.items()
    }
    relative["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(relative), flush=True)


# The parent side --------------------------------------------------------------------------------


def run_child(command: list[str], env: dict[str, str] | None = None) -> dict[str, float] | None:
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        print(f"  failed: {' '.join(command[:6])}...\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def tail_reference(path: Path) -> dict[str, float]:
    started = time.monotonic()
    process = subprocess.Popen(["tail", "-n", "50", str(path)], stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return {"last_line": time.monotonic() - started, "peak_rss_kib": usage.ru_maxrss}


def median_of(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(sample[key] for sample in samples if key in sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "x-tui-bench")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--child", choices=["x-tui", "toolong"], help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child, args.path, args.lines)
        return

    path = ensure_log(args.dir, args.lines)
    size_mb = path.stat().st_size / 1e6
    print(f"log: {path} ({size_mb:.0f} MB, {args.lines:,} lines); {args.samples} samples each")
    me = [sys.executable, __file__, "--path", str(path), "--lines", str(args.lines)]
    xtui = [s for s in (run_child([*me, "--child", "x-tui"]) for _ in range(args.samples)) if s]
    uv = shutil.which("uv")
    toolong_env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    toolong: list[dict[str, float]] = []
    if uv is not None:
        command = [uv, "run", "--quiet", "--no-project", "--with", "toolong", "python"]
        for _ in range(args.samples):
            sample = run_child([*command, *me[1:], "--child", "toolong"], env=toolong_env)
            if sample is None:
                break
            toolong.append(sample)
    if not xtui:
        raise SystemExit("x-tui's viewer failed; see above")

    print()
    print(f"{'viewer':<28}{'last lines shown':>18}{'peak RSS':>12}")
    x_last = median_of(xtui, "last_line")
    x_rss = median_of(xtui, "peak_rss_kib") / 1024
    print(f"{'x-tui LogView':<28}{x_last:>16.3f} s{x_rss:>9.0f} MiB")
    print(
        f"{'  (whole file indexed)':<28}{median_of(xtui, 'indexed'):>16.3f} s"
        f"{median_of(xtui, 'rss_indexed_kib') / 1024:>9.0f} MiB"
        f"   {int(xtui[0]['line_count']):,} lines"
    )
    if toolong:
        t_last = median_of(toolong, "last_line")
        t_rss = median_of(toolong, "peak_rss_kib") / 1024
        print(f"{'toolong 1.5 (same file)':<28}{t_last:>16.3f} s{t_rss:>9.0f} MiB")
        print()
        print(f"time to last lines: x-tui / toolong = {x_last / t_last:.2f}")
        print(f"peak memory:        x-tui / toolong = {x_rss / t_rss:.2f}")
    else:
        tail = [tail_reference(path) for _ in range(args.samples)]
        t_last = median_of(tail, "last_line")
        t_rss = median_of(tail, "peak_rss_kib") / 1024
        print("toolong could not be installed: the reference is `tail -n 50` instead")
        print(f"{'tail -n 50':<28}{t_last:>16.3f} s{t_rss:>9.1f} MiB")
        print()
        print(f"time to last lines: x-tui / tail = {x_last / t_last:.1f}")
    print(
        "times are medians from the child's script start (imports included); "
        "x-tui's app itself started at "
        f"{median_of(xtui, 'app_start'):.3f} s"
        + (f", toolong's at {median_of(toolong, 'app_start'):.3f} s" if toolong else "")
    )


if __name__ == "__main__":
    main()
