"""A submit killed at any step, or refused a record, leaves no run that x-tui cannot see or stop.

``x-tui run`` is a real process, killed with SIGKILL at each step of its submit in turn (the
steps are x-tui's own fault points: ``X_TUI_KILL_AT_STEP=N`` kills it at the N-th), and so is the
TUI's submit. After each kill, every worker the killed process started is found on this machine
(through ``/proc``, never through x-tui), and must be listed by ``x-tui status`` and stopped by
``x-tui cancel``; every run directory must be named by a record ``status`` lists. A read-only
store and a full disk must refuse a submit with one line and exit 2, starting nothing.
"""

from __future__ import annotations

import concurrent.futures
import errno
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from x_tui.cli import main
from x_tui.compute import launches as launches_module
from x_tui.compute.launches import KILL_AT_ENV, TRACE_ENV
from x_tui.compute.operations import read_launches
from x_tui.compute.store import RunStore

from .cli_support import Cli, Result, cli_for

NAP_JOB = """
[tool.substrax.compute.jobs.nap]
commands = { nap = ["sleep", "600"] }
timeout_seconds = 900
retries = 1
"""

PARALLEL = 4
"""How many killed submits run at once."""


def _nap_project(cli: Cli) -> None:
    cli.write_pyproject(jobs=NAP_JOB, top='backend = "local"')


def live_workers(state: Path) -> set[str]:
    """The run ids of the live worker processes whose run directory lies under ``state``.

    Read from ``/proc`` alone: whatever x-tui recorded, a process that runs is found here.
    """
    runs = f"{state / 'compute' / 'local'}/"
    found: set[str] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = entry.joinpath("cmdline").read_bytes().split(b"\0")
            stat = entry.joinpath("stat").read_bytes()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 :].startswith((b"Z", b"X")):
            continue
        for arg in argv:
            text = arg.decode("utf-8", "replace")
            if text.startswith(runs) and text.endswith("/worker.pyz"):
                found.add(Path(text).parent.name)
    return found


def run_dirs(state: Path) -> set[str]:
    """The run directories staged under ``state``."""
    root = state / "compute" / "local"
    return {path.name for path in root.iterdir()} if root.is_dir() else set()


def in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], state: Path, *args: str
) -> Result:
    """``x-tui ARGS`` in this process, against the state directory ``state``."""
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(state))
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return Result(code, out.out, out.err)


def listed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], state: Path
) -> dict[str, dict[str, object]]:
    """Every run ``x-tui status --json`` lists under ``state``, by id."""
    result = in_process(monkeypatch, capsys, state, "status", "--json")
    assert result.returncode == 0, result.stderr
    return {run["run_id"]: run for run in json.loads(result.stdout)["runs"]}


def step_labels(cli: Cli, trace: Path, *args: str) -> list[str]:
    """The fault points a whole ``x-tui ARGS`` passes, in order (the run is cancelled after)."""
    env = {**cli.env, TRACE_ENV: str(trace)}
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", *args],
        cwd=cli.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [line.split(" ", 1)[1] for line in trace.read_text().splitlines()]


def check_nothing_unseen(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    state: Path,
    where: str,
) -> set[str]:
    """Every started worker is listed and cancellable; every run directory is named by a record.

    Returns:
        The run ids listed.
    """
    started = live_workers(state)
    runs = listed(monkeypatch, capsys, state)
    assert started <= set(runs), f"{where}: workers {started - set(runs)} are not listed"
    for run_id in started:
        assert runs[run_id]["state"] == "running", f"{where}: {runs[run_id]}"
    unnamed = run_dirs(state) - set(runs)
    assert not unnamed, f"{where}: run directories {unnamed} are named by no record"
    assert all(run["state"] != "submitting" for run in runs.values()), f"{where}: {runs}"
    for run_id in started:
        result = in_process(monkeypatch, capsys, state, "cancel", run_id)
        assert result.returncode == 0, f"{where}: {result.stderr}"
    assert not live_workers(state), f"{where}: a worker outlived its cancel"
    return set(runs)


FORK_DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, os, sys
    from x_tui.cli import main

    # Import once what a submit needs, so each forked submitter starts at once.
    with contextlib.redirect_stdout(io.StringIO()):
        main(["plan", "nap"])
    points = json.loads(sys.argv[1])
    outcome = {}
    running = {}

    def reap():
        pid, status = os.wait()
        outcome[running.pop(pid)] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else (
            os.WEXITSTATUS(status)
        )

    for step, state in points:
        while len(running) >= int(sys.argv[2]):
            reap()
        pid = os.fork()
        if pid == 0:
            os.environ["X_TUI_KILL_AT_STEP"] = str(step)
            os.environ["SUBSTRAX_STATE_DIR"] = state
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os._exit(main(["run", "nap", "--detach"]))
        running[pid] = step
    while running:
        reap()
    print(json.dumps(outcome))
    """
)


def killed_at_each(cli: Cli, driver: Path, points: dict[int, Path]) -> dict[int, int]:
    """``x-tui run nap --detach`` once per step, each process killed at its step.

    Each submitter is a process forked from one that has already imported x-tui (so forty of
    them take a few seconds), running x-tui's own ``main``, with its own state directory.

    Returns:
        Each step's exit status (``-9``: killed by SIGKILL).
    """
    driver.write_text(FORK_DRIVER)
    done = subprocess.run(
        [
            sys.executable,
            str(driver),
            json.dumps([[step, str(state)] for step, state in points.items()]),
            str(PARALLEL),
        ],
        cwd=cli.project,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {int(step): code for step, code in json.loads(done.stdout).items()}


@pytest.mark.slow
def test_a_cli_submit_killed_at_every_step_leaves_every_worker_listed_and_cancellable(
    tmp_path: Path,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _nap_project(cli)
    labels = step_labels(cli, tmp_path / "trace", "run", "nap", "--detach")
    assert len(labels) >= 40, labels
    for phase in ("launch record written", "spec.json", "worker started", "handle saved"):
        assert any(phase in label for label in labels), (phase, labels)
    points = {step: tmp_path / f"s{step}" for step in range(1, len(labels) + 1)}
    codes = killed_at_each(cli, tmp_path / "fork_driver.py", points)
    first_started = labels.index("worker process started, its start time not read yet") + 1
    adopted = 0
    for step, state in points.items():
        where = f"killed at step {step} ({labels[step - 1]})"
        assert codes[step] == -9, where
        started = live_workers(state)
        assert len(started) == (1 if step >= first_started else 0), f"{where}: {started}"
        runs = check_nothing_unseen(monkeypatch, capsys, state, where)
        assert len(runs) <= 1, f"{where}: {runs}"
        adopted += len(started)
    # Every kill from the worker's start on left a worker, and each one was found and stopped.
    assert adopted == len(labels) - first_started + 1


@pytest.mark.parametrize("label", ["staging directory recorded", "worker started", "handle saved"])
def test_python_m_x_tui_run_killed_at_a_step_leaves_its_worker_listed_and_cancellable(
    label: str,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _nap_project(cli)
    done = subprocess.run(
        [sys.executable, "-m", "x_tui", "run", "nap", "--detach"],
        cwd=cli.project,
        env={**cli.env, KILL_AT_ENV: label},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    started = live_workers(cli.state)
    assert len(started) == (0 if label == "staging directory recorded" else 1)
    check_nothing_unseen(monkeypatch, capsys, cli.state, f"killed at {label!r}")


def test_a_run_killed_before_its_worker_started_reads_failed_with_the_reason(
    tmp_path: Path,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _nap_project(cli)
    labels = step_labels(cli, tmp_path / "trace", "run", "nap", "--detach")
    cli.cancel_leftovers()
    step = labels.index("spec.json: renamed into place") + 1
    fresh = cli_for(cli.project, tmp_path / "fresh", pycache=Path(cli.env["PYTHONPYCACHEPREFIX"]))
    assert killed_at_each(fresh, tmp_path / "driver.py", {step: fresh.state}) == {step: -9}
    runs = listed(monkeypatch, capsys, fresh.state)
    [(run_id, run)] = runs.items()
    assert run["state"] == "failed"
    assert run["reason"] == "the submitting process died before the worker started (nothing ran)"
    assert not run_dirs(fresh.state), "the half-staged directory is left"
    shown = in_process(monkeypatch, capsys, fresh.state, "status", run_id)
    assert shown.stdout.split()[:4] == [run_id, "local", "nap", "failed"]
    assert "died before the worker started" in shown.stderr
    cancelled = in_process(monkeypatch, capsys, fresh.state, "cancel", run_id)
    assert cancelled.stdout == f"{run_id} already ended (failed); nothing to cancel.\n"


TUI_DRIVER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from x_tui.app.app import XTuiApp
    from x_tui.app.service import Service
    from x_tui.app.submit_screen import SubmitScreen

    async def until(pilot, condition):
        for _ in range(1200):
            if condition():
                return
            await pilot.pause(0.05)
        raise SystemExit("gave up")

    async def main():
        app = XTuiApp(Path(sys.argv[1]), service=Service(), poll=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.main_screen.jobs.highlighted_job == "nap")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, SubmitScreen))
            await until(pilot, lambda: app.screen.plan is not None)
            await pilot.press("enter")
            for _ in range(400):  # killed long before this ends
                await pilot.pause(0.05)

    asyncio.run(main())
    """
)

TUI_STEPS = ("launch record written", "run directory made", "worker started", "handle saved")


@pytest.mark.slow
def test_the_tui_killed_while_it_submits_leaves_every_worker_listed_and_cancellable(
    tmp_path: Path,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = tmp_path / "nap-only"
    project.mkdir()
    local = f"[tool.substrax.compute.backends.local]\npython = {json.dumps(sys.executable)}\n"
    (project / "pyproject.toml").write_text(
        f'[tool.substrax.compute]\nbackend = "local"\n\n{local}{NAP_JOB}'
    )
    driver = tmp_path / "drive_tui.py"
    driver.write_text(TUI_DRIVER)
    pycache = Path(cli.env["PYTHONPYCACHEPREFIX"])

    def kill_tui(label: str) -> tuple[Cli, subprocess.CompletedProcess[str]]:
        one = cli_for(project, tmp_path / label.replace(" ", "-"), pycache=pycache)
        env = {
            **one.env,
            KILL_AT_ENV: label,
            "X_TUI_CONFIG": str(tmp_path / "no-settings.toml"),
            "X_TUI_DEMO_DIR": str(tmp_path / "demo"),
        }
        done = subprocess.run(
            [sys.executable, str(driver), str(project)],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return one, done

    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(kill_tui, TUI_STEPS))
    for label, (one, done) in zip(TUI_STEPS, results, strict=True):
        where = f"the TUI killed at {label!r}"
        assert done.returncode == -9, f"{where}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
        started = live_workers(one.state)
        runs = check_nothing_unseen(monkeypatch, capsys, one.state, where)
        if label in ("worker started", "handle saved"):
            assert started, where
            assert started <= runs, where


# --- a store that cannot be written ----------------------------------------------------------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs mounted for the test; skipped where this machine does not allow it."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs is not allowed here (the simulated tests still run)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _fill(directory: Path) -> None:
    block = b"\0" * 4096
    with (directory / "filler").open("wb", buffering=0) as filler:
        for _ in range(1 << 20):
            try:
                filler.write(block)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error  # noqa: PT017
                return
    raise AssertionError("the tmpfs never filled")


def _refused_with_nothing_started(cli: Cli, result: Result, why: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("x-tui: cannot write the run's record in "), line
    assert why in line, line
    assert line.endswith("nothing was started"), line
    assert "Traceback" not in result.stderr
    assert not live_workers(cli.state)
    assert not run_dirs(cli.state)
    runs = cli.state / "compute" / "runs"
    assert not (runs.is_dir() and any(runs.glob("*.json")))


def test_a_full_disk_refuses_the_submit_on_one_line_and_starts_nothing(
    tmpfs: Path, cli: Cli, tmp_path: Path
) -> None:
    _nap_project(cli)
    full = cli_for(cli.project, tmpfs / "state", pycache=Path(cli.env["PYTHONPYCACHEPREFIX"]))
    (tmpfs / "state").mkdir()
    _fill(tmpfs)
    result = full("run", "nap", "--detach")
    _refused_with_nothing_started(full, result, "No space left on device")
    assert sorted(path.name for path in tmpfs.rglob("*") if path.is_file()) == ["filler"]


def test_a_read_only_store_refuses_the_submit_on_one_line_and_starts_nothing(
    tmpfs: Path, cli: Cli
) -> None:
    _nap_project(cli)
    frozen = cli_for(cli.project, tmpfs / "state", pycache=Path(cli.env["PYTHONPYCACHEPREFIX"]))
    (tmpfs / "state" / "compute" / "runs").mkdir(parents=True)
    remounted = subprocess.run(
        ["mount", "-o", "remount,ro", str(tmpfs)], capture_output=True, check=False
    )
    assert remounted.returncode == 0, remounted.stderr
    result = frozen("run", "nap", "--detach")
    _refused_with_nothing_started(frozen, result, "Read-only file system")


def test_a_simulated_full_disk_refuses_the_submit_and_leaves_nothing(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _nap_project(cli)
    monkeypatch.chdir(cli.project)
    real_fsync = os.fsync

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = in_process(monkeypatch, capsys, cli.state, "run", "nap", "--detach")
    monkeypatch.setattr(os, "fsync", real_fsync)
    _refused_with_nothing_started(cli, result, "No space left on device")
    assert not [path for path in cli.state.rglob("*") if path.is_file()]


def test_a_store_that_fills_after_staging_stops_the_run_and_says_so(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _nap_project(cli)
    monkeypatch.chdir(cli.project)
    from x_tui.compute.store import RunStore

    def full(self: RunStore, handle: object, **_: object) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(RunStore, "save", full)
    result = in_process(monkeypatch, capsys, cli.state, "run", "nap", "--detach")
    monkeypatch.undo()
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("x-tui: cannot write the run's handle in "), line
    assert line.endswith("No space left on device; the run was stopped"), line
    deadline = time.monotonic() + 10
    while live_workers(cli.state) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not live_workers(cli.state)
    assert not list((cli.state / "x-tui" / "launches").glob("*.json"))
    assert not run_dirs(cli.state), "the stopped run's directory is left"


# --- cancel while submitting, and a launch record that cannot be read --------------------------


def test_cancel_of_a_run_being_submitted_is_done_by_its_submitter_once_the_run_exists(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _nap_project(cli)
    monkeypatch.chdir(cli.project)
    asked: list[str] = []

    def cancel_mid_submit(label: str) -> None:
        if label == "worker started" and not asked:
            # What `x-tui cancel` does from another shell while this submit is going on.
            [record] = read_launches(RunStore(cli.runs)).records
            asked.append(record.run_id)
            assert record.state == "submitting"
            result = in_process(monkeypatch, capsys, cli.state, "cancel", record.run_id)
            assert result.stdout == (
                f"{record.run_id} is being submitted; it is stopped as soon as its submit"
                " finishes.\n"
            )

    monkeypatch.setattr(launches_module, "fault_point", cancel_mid_submit)
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(cli.state))
    code = main(["run", "nap", "--detach"])
    assert code == 0
    runs = listed(monkeypatch, capsys, cli.state)
    assert asked
    assert runs[asked[0]]["state"] == "cancelled"
    assert not live_workers(cli.state)


def test_an_unreadable_launch_record_is_named_and_every_run_still_listed(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _nap_project(cli)
    good = cli.submitted_id(cli("run", "nap", "--detach").stdout)
    broken = cli.state / "x-tui" / "launches" / "nap-20260101T000000Z-abcdef.json"
    broken.write_text('{"schema_version": 1, "run_id": ')
    result = in_process(monkeypatch, capsys, cli.state, "status")
    assert result.returncode == 1
    assert result.stdout.split()[:4] == [good, "local", "nap", "running"]
    [complaint] = result.stderr.splitlines()
    assert complaint.startswith(f"x-tui: {broken}: not JSON")
