"""SVG snapshots of the run, submit and help screens at 80x24, 60x20 and 120x40.

Deterministic by construction: the run is written as files at a fixed place with fixed ids and
times, the screens are given a fixed clock, the monitor does not poll, and what the local
backend's plan says about this machine is pinned. Review a changed snapshot with
``pytest --snapshot-report`` and accept it with ``--snapshot-update``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import TabbedContent

from tests.support import exclusive, wait_until
from x_tui.app.help_screen import HelpScreen
from x_tui.app.run_screen import RunScreen
from x_tui.app.submit_screen import SubmitScreen
from x_tui.backends.local import machine as local_machine
from x_tui.compute.operations import open_project
from x_tui.compute.worker.manifest import RunDevices, TaskStatus
from x_tui.compute.worker.spec import Accelerator

from .app_support import make_app, screen_text
from .screens_support import NOW, finished_run

pytestmark = pytest.mark.one_worker  # the lock on the fixed paths (see the fixture)

BASE = Path("/tmp/x-tui-screen-snapshots")
"""A fixed place for the snapshot's files, because their paths are on screen."""

SIZES = [(80, 24), (60, 20), (120, 40)]

WORKER_LOG = """\
[prepare] downloading shards 1-4
[prepare] \x1b[32mok\x1b[0m 4 shards, 1.2 GiB
[train] step 100 loss 2.314
[train] step 200 loss 1.872
[train] step 300 loss 1.604
[train] Traceback (most recent call last):
[train]   File "train.py", line 88, in <module>
[train] RuntimeError: CUDA out of memory
[evaluate] accuracy 0.912
"""

SNAPSHOT_PYPROJECT = """\
[project]
name = "sample"
version = "0.1.0"

[tool.substrax.compute]
backend = "local"

[tool.substrax.compute.backends.local]
python = "python3"

[tool.substrax.compute.jobs.train]
timeout_seconds = 3600
task_timeout_seconds = 1200
resources = { accelerator = { kind = "H100", count = 8 }, cpu = 32, memory_mib = 262144 }
env = { TF_CPP_MIN_LOG_LEVEL = "1" }
[tool.substrax.compute.jobs.train.commands]
prepare = ["python", "-m", "sample.prepare"]
train = ["python", "-m", "sample.train", "--steps", "1000"]
evaluate = ["python", "-m", "sample.evaluate"]
"""


@pytest.fixture
def fixed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state directory and a project at fixed paths, and this machine's description pinned.

    The paths are the same for every test here (they show on screen), so one test at a time on
    this machine holds them.
    """
    with exclusive("x-tui-screen-snapshots"):
        yield from _fixed_files(monkeypatch)


def _fixed_files(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    shutil.rmtree(BASE, ignore_errors=True)
    state = BASE / "state"
    project = BASE / "sample"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text(SNAPSHOT_PYPROJECT, encoding="utf-8")
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(state))
    monkeypatch.setenv("X_TUI_CONFIG", str(BASE / "no-settings.toml"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    gpus = ("NVIDIA H200, 143771 MiB",) * 8
    monkeypatch.setattr(local_machine, "gpu_lines", lambda: gpus)
    monkeypatch.setattr(
        local_machine, "machine", lambda: {"cpus": 16, "memory_mib": 131072, "gpus": list(gpus)}
    )
    finished_run(
        state,
        job="train",
        tasks=[
            ("prepare", TaskStatus.SUCCEEDED, 0, 42.5, ("shards/index.json",)),
            ("train", TaskStatus.FAILED, 1, 611.2, ("checkpoints/step_300.ckpt",)),
            ("evaluate", TaskStatus.SUCCEEDED, 0, 18.0, ("metrics.json", "plots/loss.png")),
        ],
        accelerator=Accelerator(kind="H100", count=8),
        devices=RunDevices(platform="gpu", kinds=("NVIDIA H200",) * 8),
        worker_log=WORKER_LOG,
        attempts=[
            {"task": "train", "attempt": 1, "status": "failed", "returncode": 1, "seconds": 7.0},
            {"task": "train", "attempt": 2, "status": "failed", "returncode": 1, "seconds": 611.2},
        ],
        attempt_logs={("train", 1): "step 1 loss nan\n"},
        project=str(project),
    )
    (outputs,) = (state / "compute" / "local").glob("*/outputs")
    _write_side_files(outputs)
    yield project
    shutil.rmtree(BASE, ignore_errors=True)


def _write_side_files(outputs: Path) -> None:
    """Telemetry of 8 GPUs over 40 samples, and a loss and accuracy over 50 steps with a bar."""
    lines = [
        '{"x_tui_telemetry":1,"interval":5.0,"stall_seconds":600.0,"started":0,'
        '"memory_limit_mib":131072}',
        '{"devices":[' + ",".join(f'[{i},"NVIDIA H200"]' for i in range(8)) + "]}",
    ]
    for tick in range(40):
        gpus = ",".join(
            f"[{i},{(tick * 9 + i * 13) % 100},{60000 + tick * 500 + i * 10},143771,"
            f"{300 + (tick * 17 + i * 7) % 400},{45 + i}]"
            for i in range(8)
        )
        lines.append(
            f'{{"t":{tick * 5},"gpus":[{gpus}],"cpu":{400 + tick},"rss_mib":{20000 + tick * 10},'
            f'"procs":9,"last_output":{tick * 5}}}'
        )
    (outputs / "telemetry.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    metrics = ['{"x_tui_metrics": 1}']
    for step in range(0, 500, 10):
        loss = 2.5 * 0.99**step + 0.1
        metrics.append(f'{{"step":{step},"values":{{"loss":{loss:.4f},"acc":{step / 600:.3f}}}}}')
    metrics.append(
        '{"t":200,"task":"train","progress":{"n":300,"total":1000,"percent":30.0,'
        '"rate":2.5,"eta_seconds":280}}'
    )
    (outputs / "metrics.jsonl").write_text("\n".join(metrics) + "\n", encoding="utf-8")


def _app() -> Any:
    return make_app(None, poll=False, clock=NOW.timestamp)


async def _open_run(pilot: Pilot[Any], tab: str | None = None) -> None:
    from x_tui.compute.store import RunStore

    app = pilot.app
    handle = RunStore().read_all().handles[0]
    screen = RunScreen(handle, clock=lambda: NOW)
    await app.push_screen(screen)
    await wait_until(pilot, lambda: screen.loaded, "the run's files")
    await wait_until(pilot, lambda: "evaluate] accuracy" in screen_text(app), "the log")
    if tab is not None:
        screen.query_one("#run-tabs", TabbedContent).active = tab
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_run_screen_log(
    fixed: Path, snap_compare: Callable[..., bool], size: tuple[int, int]
) -> None:
    assert snap_compare(_app(), terminal_size=size, run_before=_open_run)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_run_screen_manifest(
    fixed: Path, snap_compare: Callable[..., bool], size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _open_run(pilot, "tab-manifest")

    assert snap_compare(_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_run_screen_devices(
    fixed: Path, snap_compare: Callable[..., bool], size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _open_run(pilot, "tab-devices")

    assert snap_compare(_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_run_screen_metrics(
    fixed: Path, snap_compare: Callable[..., bool], size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _open_run(pilot, "tab-metrics")

    assert snap_compare(_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_submit_screen(
    fixed: Path, snap_compare: Callable[..., bool], size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        screen = SubmitScreen("train", project=open_project(fixed))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        await app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_help_screen(fixed: Path, snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _open_run(pilot)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), "the help")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=size, run_before=run_before)
