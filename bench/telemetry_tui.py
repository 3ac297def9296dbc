"""CPU x-tui uses while showing the live telemetry of 20 runs, against a bare Textual app.

Twenty real runs of the local backend are started in a private state directory, each with 8
stand-in GPUs (``tests/fake_gpus/nvidia-smi``, figures changing every loop) on its ``PATH``, a
sample every ``--telemetry-seconds`` (1 s unless told: five times the default pace, the worst
case), and a task that prints ``step=N loss=X`` once a second with a tqdm bar on stderr. x-tui is
then opened on their project in a 120x40 pseudo-terminal (its real driver, as over SSH) three
ways, each left to settle, then its CPU time (user + system, from ``/proc/<pid>/stat``) measured
over a window:

- the main screen: the runs table's Progress, GPU and Cost columns for the 20 runs, re-read every
  5 s;
- one run's Log tab, its log followed (x-tui's own reference: the run screen showing no
  telemetry);
- one run's Devices tab: 8 GPUs' live values and sparklines;
- one run's Metrics tab: the loss plotted against step, the latest values in a table.

The reference is a bare Textual app with the same widgets as the main screen, idle in the same
terminal, measured the same way in the same run (``bench/idle_cpu.py``'s). The runs are cancelled
at the end.

    uv run python bench/telemetry_tui.py [--runs 20] [--warmup 15] [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from idle_cpu import measure  # the same pseudo-terminal and CPU reading

FAKE_GPUS = Path(__file__).resolve().parent.parent / "tests" / "fake_gpus"

TRAIN = """\
import sys, time
for i in range(1, 3601):
    print(f"step={i} loss={2 / (i + 1):.5f} lr=0.0003", flush=True)
    sys.stderr.write(f"\\r{i}/3600 [00:{i % 60:02d}<59:00, 1.00it/s]")
    sys.stderr.flush()
    time.sleep(1)
"""


def _child_bare() -> None:
    from idle_cpu import _child_bare as bare

    bare()


def _child_xtui(project: Path, run_id: str | None, tab: str | None) -> None:
    from x_tui.app import hold_garbage_until_listed

    hold_garbage_until_listed()  # first, as ``x-tui`` itself starts (``run_app``)
    from x_tui.app.app import XTuiApp
    from x_tui.app.run_screen import RunScreen
    from x_tui.app.service import Service

    service = Service()

    class Opened(XTuiApp):
        """x-tui, with one run's screen opened on a tab once it has started."""

        def on_mount(self) -> None:
            if run_id is not None:
                self.set_timer(1.0, self._open)

        def _open(self) -> None:
            handle = service.store.load(run_id or "")
            self.push_screen(RunScreen(handle, tab=tab))

    Opened(project, service=service).run()


def write_project(root: Path, telemetry_seconds: float) -> Path:
    """A project whose job ``train`` logs a metric and a bar once a second, sampled often."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        f"""\
[project]
name = "live"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = {json.dumps(sys.executable)}

[tool.substrax.compute.jobs.train]
timeout_seconds = 7200
commands = {{ train = ["python", "train.py"] }}

[tool.x-tui.jobs.train]
telemetry_seconds = {telemetry_seconds}
""",
        encoding="utf-8",
    )
    return root


def main() -> int:
    """Start the runs, measure the bare app and x-tui's three views, cancel, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--telemetry-seconds", type=float, default=1.0)
    parser.add_argument("--child", choices=("bare", "x-tui"))
    parser.add_argument("--project", type=Path)
    parser.add_argument("--run-id")
    parser.add_argument("--tab")
    parser.add_argument(
        "--only", help="measure only the views whose name holds this text (and the bare app)"
    )
    args = parser.parse_args()
    if args.child == "bare":
        _child_bare()
        return 0
    if args.child == "x-tui":
        _child_xtui(args.project, args.run_id, args.tab)
        return 0

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        env = dict(os.environ)
        env.update(
            SUBSTRAX_STATE_DIR=str(scratch / "state"),
            X_TUI_CONFIG=str(scratch / "no-settings.toml"),
            TERM="xterm-256color",
            PATH=f"{FAKE_GPUS}{os.pathsep}{os.environ['PATH']}",
        )
        os.environ.update(
            SUBSTRAX_STATE_DIR=env["SUBSTRAX_STATE_DIR"], PATH=env["PATH"]
        )  # the runs' workers inherit the fake GPUs
        from x_tui.app.service import Service

        service = Service()
        project = service.open_project(write_project(scratch / "live", args.telemetry_seconds))
        handles = [service.submit(service.plan(project, "train")) for _ in range(args.runs)]
        time.sleep(3)  # every worker has named its GPUs
        try:
            me = [sys.executable, __file__]
            bare = measure([*me, "--child", "bare"], env, warmup=args.warmup, seconds=args.seconds)
            xtui = [sys.executable, __file__, "--child", "x-tui", "--project", str(project.root)]
            one = ["--run-id", handles[0].run_id]
            views = {
                f"main screen, {args.runs} runs' Progress/GPU/Cost": xtui,
                "one run's Log tab (no telemetry shown)": [*xtui, *one, "--tab", "tab-log"],
                "one run's Devices tab (8 GPUs)": [*xtui, *one, "--tab", "tab-devices"],
                "one run's Metrics tab": [*xtui, *one, "--tab", "tab-metrics"],
            }
            figures = {
                name: measure(argv, env, warmup=args.warmup, seconds=args.seconds)
                for name, argv in views.items()
                if args.only is None or args.only in name
            }
            running = sum(service.status(handle).value == "running" for handle in handles)
        finally:
            with ThreadPoolExecutor(max_workers=len(handles) or 1) as pool:
                list(pool.map(service.cancel, handles))
    print(
        f"TUI CPU showing live telemetry: {running} of {args.runs} runs running, 8 fake GPUs"
        f" each, a sample every {args.telemetry_seconds:g} s, a metric line a second;"
        f" {args.seconds:g} s after {args.warmup:g} s warm-up, 120x40 pseudo-terminal"
    )
    print(f"  bare Textual app, same widgets, idle        {bare:6.2f}% of one core")
    for name, figure in figures.items():
        ratio = f"{figure / bare:5.1f}x the bare app" if bare > 0 else "(bare app at 0)"
        print(f"  x-tui, {name:<37}{figure:6.2f}% of one core  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
