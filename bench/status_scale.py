"""``x-tui status`` with a large store, against substrax 0.1.22's own ``status`` on the same store.

The store holds ``--runs`` finished runs of the local backend, each a version 1 handle as
substrax 0.1.x writes it (so both tools read the same files), of a project whose pyproject.toml
names the local backend. Each tool is a fresh process; the figures are wall time and CPU time
(user + system of the process and its children, from ``getrusage``), so a busy machine shows in
the wall figure but not in the CPU one. Measured:

- ``x-tui status``, the first time (no store index yet: every handle file is read) and again
  (from the index the first call made); every run's final state is kept, as after the TUI, the
  watcher or an earlier ``status`` saw them end;
- ``x-tui status`` after substrax saved one more run (the runs directory changed, so every handle
  file's stamp is looked at and the index written again);
- ``x-tui status RUN_ID`` on this store and on a store of 100 runs: a constant-time answer costs
  the same on both;
- ``substrax-compute status`` (the reference), on the same store, stopped after ``--substrax-limit``
  seconds: then the runs it listed in that time give its rate and a lower bound on its time.

substrax comes from ``scripts/install_substrax.sh`` (the interop tests' cached environment); without
it the reference is skipped, saying why.

    uv run python bench/status_scale.py [--runs 100000] [--substrax-limit 120] [--store DIR]

``--store DIR`` keeps the generated stores in ``DIR`` (made there once, then reused; the index is
removed before the first call), so a run of the benchmark need not write 100,000 files again.

Aims: ``x-tui status`` under 2 s with 100,000 runs (judged by CPU seconds; the wall figure is
printed too); ``status RUN_ID`` the same at any size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBSTRAX_VERSION = "0.1.22"
X_TUI = [sys.executable, "-m", "x_tui"]
ADDED_AT = dt.datetime(2099, 1, 1, tzinfo=dt.UTC)
ADDED_RUN = f"train-{ADDED_AT:%Y%m%dT%H%M%SZ}-ffffff"
"""The run saved after the first listings (its final state is kept, as after the TUI saw it)."""


def substrax_home() -> Path:
    """Where ``scripts/install_substrax.sh`` keeps substrax's environment."""
    base = os.environ.get("X_TUI_SUBSTRAX_HOME") or str(Path.home() / ".cache" / "x-tui-tests")
    return Path(base) / f"substrax-{SUBSTRAX_VERSION}"


def make_store(root: Path, count: int, *, known_final: bool = True) -> tuple[Path, list[str]]:
    """``count`` finished local runs (version 1 handles) of a project under ``root``.

    With ``known_final``, x-tui's kept final states name them (as after the TUI, the watcher
    or an earlier ``status`` saw them end); substrax keeps none and asks about every run.

    Returns:
        The state directory and the run ids, oldest first.
    """
    project = root / "project"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "scale"\nversion = "0.1.0"\n\n'
        '[tool.substrax.compute]\nbackend = "local"\n\n'
        "[tool.substrax.compute.backends.local]\n\n"
        '[tool.substrax.compute.jobs.train]\ncommands = { main = ["python", "-c", "0"] }\n',
        encoding="utf-8",
    )
    state = root / "state"
    runs = state / "compute" / "runs"
    runs.mkdir(parents=True)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    ids = []
    for index in range(count):
        moment = start + dt.timedelta(minutes=index)
        run_id = f"train-{moment:%Y%m%dT%H%M%SZ}-{index % 0xFFFFFF:06x}"
        (runs / f"{run_id}.json").write_text(_handle_text(state, run_id, moment), encoding="utf-8")
        ids.append(run_id)
    if known_final:
        from x_tui.app.final_states import final_states_path, write_final_states
        from x_tui.compute.backend import RunState

        write_final_states(
            final_states_path(runs),
            {
                run_id: (RunState.FAILED, start.timestamp() + 60 * index + 30)
                for index, run_id in enumerate([*ids, ADDED_RUN])  # the run added, once seen
            },
        )
    (root / "ids.txt").write_text("\n".join(ids) + "\n", encoding="utf-8")
    return state, ids


def _handle_text(state: Path, run_id: str, moment: dt.datetime) -> str:
    """A finished local run's version 1 handle, as substrax 0.1.x writes it."""
    handle = {
        "schema_version": 1,
        "run_id": run_id,
        "backend": "local",
        "job": "train",
        "project": str(state.parent / "project"),
        "submitted_at": moment.isoformat(),
        "details": {"pid": "999999999", "run_dir": str(state / "compute" / "local" / run_id)},
    }
    return json.dumps(handle, indent=2) + "\n"


def add_run(state: Path) -> Path:
    """Save one more run as substrax does (a partial file renamed into place): the newest.

    Returns:
        Its handle file.
    """
    runs = state / "compute" / "runs"
    partial = runs / f".{ADDED_RUN}.partial"
    partial.write_text(_handle_text(state, ADDED_RUN, ADDED_AT), encoding="utf-8")
    return partial.replace(runs / f"{ADDED_RUN}.json")


def kept_store(root: Path, count: int) -> tuple[Path, list[str]]:
    """The store of ``count`` runs under ``root``, made by :func:`make_store` if it is not there.

    Its index is removed, so the first call reads every handle file again.
    """
    ids_file = root / "ids.txt"
    if ids_file.is_file():
        ids = ids_file.read_text(encoding="utf-8").split()
        if len(ids) == count:
            state = root / "state"
            (state / "x-tui" / "runs-index.json").unlink(missing_ok=True)
            return state, ids
    if root.exists():
        shutil.rmtree(root)
    return make_store(root, count)


def timed(
    argv: list[str], env: dict[str, str], cwd: Path, limit: float
) -> tuple[float, float, int]:
    """Run ``argv`` to its end (or ``limit`` seconds).

    Returns:
        Wall seconds, CPU seconds (user + system, with its children) and the lines it printed
        (``-1`` lines when it was stopped at the limit: then the count is in the second place of
        the caller's reading, see :func:`main`).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as process:
        assert process.stdout is not None
        out = process.stdout.fileno()
        lines = 0
        deadline = started + limit
        stopped = False
        # Read as fast as the command writes (a poll with sleeps would slow its writes down).
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                process.kill()
                stopped = True
                break
            ready, _, _ = select.select([out], [], [], left)
            if not ready:
                continue
            chunk = os.read(out, 1 << 20)
            if not chunk:
                break
            lines += chunk.count(b"\n")
        process.wait()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, -lines - 1 if stopped else lines


def _lines(count: int) -> str:
    return f"{count} lines" if count >= 0 else "stopped at the limit"


def _aim(warm: tuple[float, float, int]) -> str:
    """The aim, judged by CPU seconds (the wall figure also holds the machine's other load)."""

    def verdict(seconds: float) -> str:
        return "met" if seconds < 2 else "NOT met"

    return (
        f"  aim: x-tui status < 2 s: {verdict(warm[1])} by CPU ({warm[1]:.2f} s);"
        f" wall {warm[0]:.2f} s: {verdict(warm[0])}"
    )


def main() -> int:
    """Build the stores, time each command, print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--substrax-limit", type=float, default=120.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--x-tui-limit", type=float, default=600.0)
    parser.add_argument("--store", type=Path, default=None, help="keep the stores here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        kept = args.store.resolve() if args.store is not None else scratch
        build = time.perf_counter()
        state, ids = kept_store(kept / f"runs-{args.runs}", args.runs)
        small_state, small_ids = kept_store(kept / "runs-100", 100)
        print(f"stores written in {time.perf_counter() - build:.1f} s")
        env = {
            **os.environ,
            "SUBSTRAX_STATE_DIR": str(state),
            "X_TUI_CONFIG": str(scratch / "none.toml"),
            "COLUMNS": "200",
        }
        small_env = {**env, "SUBSTRAX_STATE_DIR": str(small_state)}
        project = state.parent / "project"
        print(f"status with {args.runs:,} runs in the store (wall s / CPU s)")
        cold = timed([*X_TUI, "status"], env, project, args.x_tui_limit)
        print(
            f"  x-tui status, first call         {cold[0]:7.2f} / {cold[1]:7.2f}  {_lines(cold[2])}"
        )
        warm = min(
            (timed([*X_TUI, "status"], env, project, args.x_tui_limit) for _ in range(args.repeat)),
            key=lambda figures: figures[1],
        )
        print(
            f"  x-tui status, again              {warm[0]:7.2f} / {warm[1]:7.2f}  {_lines(warm[2])}"
        )
        added = add_run(state)  # the store changed: every file's stamp is looked at
        changed = timed([*X_TUI, "status"], env, project, args.x_tui_limit)
        added.unlink()
        print(
            f"  x-tui status, after a new run    {changed[0]:7.2f} / {changed[1]:7.2f}"
            f"  {_lines(changed[2])}"
        )
        one = min(
            (
                timed([*X_TUI, "status", ids[len(ids) // 2]], env, project, 60)
                for _ in range(args.repeat)
            ),
            key=lambda figures: figures[1],
        )
        small_one = min(
            (
                timed([*X_TUI, "status", small_ids[50]], small_env, project, 60)
                for _ in range(args.repeat)
            ),
            key=lambda figures: figures[1],
        )
        print(f"  x-tui status RUN_ID                {one[0]:7.2f} / {one[1]:7.2f}")
        print(
            f"  x-tui status RUN_ID, 100 runs      {small_one[0]:7.2f} / {small_one[1]:7.2f}"
            f"   ratio (CPU) {one[1] / small_one[1]:4.2f}x"
        )
        substrax = substrax_home() / "bin" / "substrax-compute"
        if not substrax.exists():
            print(f"  substrax-compute status: not installed: {substrax}")
            return 0
        wall, cpu, lines = timed([str(substrax), "status"], env, project, args.substrax_limit)
        if lines < 0:
            listed = -lines - 1
            rate = listed / wall if listed else 0.0
            whole = f"> {args.substrax_limit:.0f} s" if not rate else f"~{args.runs / rate:.0f} s"
            print(
                f"  substrax-compute status (ref.)     stopped at {wall:.0f} s / {cpu:.0f} s CPU,"
                f" {listed:,} of {args.runs:,} runs listed: whole store {whole}"
            )
            # Its CPU so far is a lower bound on its CPU for the whole store.
            print(f"  x-tui status again / substrax    <= {warm[1] / cpu:6.3f}x (CPU, a bound)")
            print(_aim(warm))
            return 0
        else:
            print(f"  substrax-compute status (ref.)     {wall:7.2f} / {cpu:7.2f}   {lines} lines")
        print(f"  x-tui status again / substrax      {warm[1] / cpu:6.3f}x (CPU)")
        print(_aim(warm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
