"""The submit screen on the local backend warns when the job asks for an accelerator this machine
does not have, and submits only once the user has acknowledged it with a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import asynchronous, wait_until
from x_tui.app.run_screen import RunScreen
from x_tui.app.submit_screen import SubmitScreen
from x_tui.backends.local import machine as local_machine
from x_tui.compute.operations import open_project
from x_tui.compute.store import RunStore

from .app_support import make_app, screen_text
from .screens_support import QUICK_JOB, write_project

H100_JOB = """
[tool.substrax.compute.jobs.big]
timeout_seconds = 120
resources = { accelerator = { kind = "H100", count = 8 } }
[tool.substrax.compute.jobs.big.commands]
hello = ["python", "-c", "print('hello on what there is')"]
"""


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_machine, "gpu_lines", lambda: ())


def test_the_local_machine_without_the_accelerator_falls_short() -> None:
    assert local_machine.shortfall([("H100", 8)], names=()) == (
        "the job asks for H100:8; the local backend runs it on this machine, without a GPU"
        " (nvidia-smi lists none) instead"
    )
    h100s = ("NVIDIA H100 80GB HBM3",) * 8
    assert local_machine.shortfall([("H100", 8)], names=h100s) is None
    assert local_machine.shortfall([("H100", 8)], names=h100s[:4]) is not None
    assert local_machine.shortfall([("H100", 8), ("L4", 1)], names=("NVIDIA L4",)) is None
    assert local_machine.shortfall([], names=()) is None


@pytest.mark.usefixtures("no_gpu", "leftovers")
@asynchronous
async def test_enter_submits_only_after_a_acknowledges_the_warning(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", QUICK_JOB + H100_JOB)
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = SubmitScreen("big", project=open_project(project))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        assert screen.warning is not None
        assert "H100:8" in screen.warning
        assert "a acknowledges it" in screen_text(app)
        assert "without a GPU" in screen_text(app)

        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.screen is screen
        assert "press a to acknowledge" in screen_text(app)
        assert RunStore().read_all().handles == ()

        await pilot.press("a")
        await wait_until(pilot, lambda: "acknowledged" in screen_text(app), "the acknowledgement")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        (handle,) = RunStore().read_all().handles
        assert handle.job == "big"


@pytest.mark.usefixtures("no_gpu")
@asynchronous
async def test_a_job_without_an_accelerator_needs_no_acknowledgement(
    state_dir: Path, tmp_path: Path
) -> None:
    project = write_project(tmp_path / "sample", QUICK_JOB)
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = SubmitScreen("quick", project=open_project(project))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.plan is not None, "the plan")
        assert screen.warning is None
        assert "Ready: enter submits" in screen_text(app)
