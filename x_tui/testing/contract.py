"""``BackendContract``: the tests every compute backend must pass, as a class to inherit.

A backend's test module subclasses :class:`BackendContract` and defines ``make_backend``::

    class TestMyBackend(BackendContract):
        def make_backend(self, state_dir: Path) -> ComputeBackend:
            return MyBackend({"state_dir": str(state_dir)})

The scripts the jobs run import nothing but the standard library, so each test finishes in
seconds on a local backend. Assertions raise :class:`AssertionError` with their own messages,
because pytest does not rewrite ``assert`` inside an installed package. This module needs pytest
and never imports Textual.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from x_tui.compute.backend import ComputeBackend, RunState
from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.errors import UserError
from x_tui.compute.worker.manifest import MANIFEST_NAME, MANIFEST_VERSION, TaskStatus, load_manifest
from x_tui.compute.worker.spec import JobSpec, Task

TASK_SECONDS = 120.0
"""Each task's budget."""
WAIT_SECONDS = 180.0
"""How long a test waits for a run, and the job's budget."""
POLL_SECONDS = 0.2
"""How often a test asks for a run's state or logs."""

SCRIPTS = {
    "writes": (
        "import os, pathlib\n"
        "print('hello from the task', flush=True)\n"
        "result = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR']) / 'result'\n"
        "result.mkdir(parents=True, exist_ok=True)\n"
        "(result / 'value.txt').write_text('42')\n"
    ),
    "fails": "import sys\nsys.exit(7)\n",
    "sleeps": "import time\nprint('sleeping', flush=True)\ntime.sleep(600)\n",
    "links": (
        "import os, pathlib\n"
        "out = pathlib.Path(os.environ['AVITAI_OUTPUT_DIR'])\n"
        "(out / 'kept.txt').write_text('kept')\n"
        "os.symlink('/etc', out / 'escape')\n"
        "print('linked', flush=True)\n"
    ),
}
"""The scripts of the ``project`` fixture, by name, under ``scripts/``."""


def check(condition: bool, message: str) -> None:
    """Raise :class:`AssertionError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise AssertionError(message)


def contract_spec(*scripts: str) -> JobSpec:
    """The job every contract test submits: one task per named script, in order."""
    return JobSpec(
        name="contract",
        tasks=tuple(
            Task(name=name, argv=("python", f"scripts/{name}.py"), timeout_seconds=TASK_SECONDS)
            for name in scripts
        ),
        timeout_seconds=WAIT_SECONDS,
    )


def wait_until_final(
    backend: ComputeBackend, handle: RunHandle, timeout: float = WAIT_SECONDS
) -> RunState:
    """Poll ``status`` until the run is final.

    Returns:
        The final state.

    Raises:
        TimeoutError: If the run is not final after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        state = backend.status(handle)
        if state.is_final:
            return state
        if time.monotonic() >= deadline:
            raise TimeoutError(f"run {handle.run_id} still {state.value} after {timeout:g} s")
        time.sleep(POLL_SECONDS)


def wait_for_line(
    backend: ComputeBackend, handle: RunHandle, wanted: str, timeout: float = WAIT_SECONDS
) -> list[str]:
    """Read the logs without following until a line equals ``wanted``.

    Returns:
        The lines of the read that held it.

    Raises:
        TimeoutError: If no read yields the line within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        lines = list(backend.logs(handle, follow=False))
        if wanted in lines:
            return lines
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"run {handle.run_id} logged no line {wanted!r} in {timeout:g} s; last read: "
                f"{lines[-5:]!r}"
            )
        time.sleep(POLL_SECONDS)


_wait_for_line = wait_for_line
"""substrax's name for :func:`wait_for_line`."""


class BackendContract:
    """The behaviour every compute backend must have; subclass it and define ``make_backend``."""

    def make_backend(self, state_dir: Path) -> ComputeBackend:
        """Build a fresh backend that keeps its state under ``state_dir``.

        Raises:
            NotImplementedError: Always; a subclass defines it.
        """
        raise NotImplementedError("a BackendContract subclass defines make_backend(state_dir)")

    @pytest.fixture
    def project(self, tmp_path: Path) -> Path:
        """A project whose ``scripts/`` holds the scripts of :data:`SCRIPTS`."""
        root = tmp_path / "project"
        scripts = root / "scripts"
        scripts.mkdir(parents=True)
        for name, text in SCRIPTS.items():
            (scripts / f"{name}.py").write_text(text, encoding="utf-8")
        return root

    @pytest.fixture
    def state_dir(self, tmp_path: Path) -> Path:
        """Where the backend keeps its state (not created beforehand)."""
        return tmp_path / "state"

    @pytest.fixture
    def submitted(self) -> Iterator[list[tuple[ComputeBackend, RunHandle]]]:
        """The runs a test submits; each one still running afterwards is cancelled."""
        runs: list[tuple[ComputeBackend, RunHandle]] = []
        yield runs
        for backend, handle in runs:
            with contextlib.suppress(Exception):
                if not backend.status(handle).is_final:
                    backend.cancel(handle)

    def submit_job(
        self,
        submitted: list[tuple[ComputeBackend, RunHandle]],
        backend: ComputeBackend,
        project: Path,
        *scripts: str,
    ) -> RunHandle:
        """Submit the contract job of ``scripts`` and remember it for clean-up."""
        handle = backend.submit(contract_spec(*scripts), project=project)
        submitted.append((backend, handle))
        return handle

    def test_a_job_succeeds_and_its_outputs_come_back(
        self,
        project: Path,
        state_dir: Path,
        tmp_path: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """A succeeded run's outputs come back: manifest on top, each task's files below."""
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "writes")
        state = wait_until_final(backend, handle)
        check(state is RunState.SUCCEEDED, f"the run ended {state.value}, not succeeded")
        fetched = backend.fetch(handle, tmp_path / "fetched")
        expected = tmp_path / "fetched" / handle.run_id
        check(fetched == expected, f"fetch returned {fetched}, not {expected}")
        manifest = load_manifest(fetched / MANIFEST_NAME)
        check(manifest is not None, f"no {MANIFEST_NAME} at the top of {fetched}")
        assert manifest is not None
        check(
            manifest.schema_version == MANIFEST_VERSION,
            f"the manifest is version {manifest.schema_version}, not {MANIFEST_VERSION}",
        )
        check(manifest.finished, "the fetched manifest is not finished")
        statuses = [task.status for task in manifest.tasks]
        check(statuses == [TaskStatus.SUCCEEDED], f"task statuses are {statuses}")
        value = fetched / "writes" / "result" / "value.txt"
        check(value.is_file(), f"{value} was not fetched")
        check(value.read_text() == "42", f"{value} holds {value.read_text()!r}, not '42'")
        stdout = (fetched / "writes" / "stdout.log").read_text(errors="replace")
        check("hello from the task" in stdout, f"writes/stdout.log holds {stdout!r}")

    def test_a_failed_task_fails_the_run_and_the_tasks_after_it_still_run(
        self,
        project: Path,
        state_dir: Path,
        tmp_path: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """A failing task fails the run, and the task after it still runs."""
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "fails", "writes")
        state = wait_until_final(backend, handle)
        check(state is RunState.FAILED, f"the run ended {state.value}, not failed")
        fetched = backend.fetch(handle, tmp_path / "fetched")
        manifest = load_manifest(fetched / MANIFEST_NAME)
        check(manifest is not None, f"no {MANIFEST_NAME} in {fetched}")
        assert manifest is not None
        outcomes = [(task.status, task.returncode) for task in manifest.tasks]
        expected = [(TaskStatus.FAILED, 7), (TaskStatus.SUCCEEDED, 0)]
        check(outcomes == expected, f"task outcomes are {outcomes}, not {expected}")

    def test_following_the_logs_ends_with_the_run_and_names_each_task(
        self,
        project: Path,
        state_dir: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """Following the logs yields each task's lines prefixed, and ends with the run."""
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "writes")
        lines = list(backend.logs(handle, follow=True))
        check(
            "[writes] hello from the task" in lines,
            f"no line '[writes] hello from the task' in {lines[-10:]!r}",
        )
        state = backend.status(handle)
        check(state.is_final, f"following the logs ended while the run was {state.value}")

    def test_a_cancelled_run_ends_cancelled(
        self,
        project: Path,
        state_dir: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """Cancel ends a running run cancelled, and cancelling again changes nothing."""
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "sleeps")
        wait_for_line(backend, handle, "[sleeps] sleeping")
        backend.cancel(handle)
        state = wait_until_final(backend, handle)
        check(state is RunState.CANCELLED, f"the cancelled run ended {state.value}")
        backend.cancel(handle)
        again = backend.status(handle)
        check(again is RunState.CANCELLED, f"a second cancel left the run {again.value}")

    def test_a_stored_handle_finds_the_run_from_a_new_backend(
        self,
        project: Path,
        state_dir: Path,
        tmp_path: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """A handle saved and loaded again equals the submitted one and finds the run."""
        handle = self.submit_job(submitted, self.make_backend(state_dir), project, "writes")
        store = RunStore(tmp_path / "handles")
        store.save(handle)
        loaded = store.load(handle.run_id)
        check(loaded == handle, f"the loaded handle {loaded!r} differs from {handle!r}")
        fresh = self.make_backend(state_dir)
        submitted.append((fresh, loaded))
        state = wait_until_final(fresh, loaded)
        check(state is RunState.SUCCEEDED, f"the run ended {state.value}, not succeeded")

    def test_logs_without_follow_return_while_the_run_is_running(
        self,
        project: Path,
        state_dir: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """Reading the logs without following returns what is there before the run ends."""
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "sleeps")
        lines = wait_for_line(backend, handle, "[sleeps] sleeping")
        state = backend.status(handle)
        check(
            not state.is_final,
            f"the run was {state.value} after a log read; sleeps.py sleeps 600 s",
        )
        check("[sleeps] sleeping" in lines, f"no '[sleeps] sleeping' in {lines!r}")

    def test_cancelling_a_finished_run_leaves_it_succeeded(
        self,
        project: Path,
        state_dir: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """Cancel leaves a run that already ended as it is."""
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "writes")
        check(wait_until_final(backend, handle) is RunState.SUCCEEDED, "the run did not succeed")
        backend.cancel(handle)
        state = backend.status(handle)
        check(state is RunState.SUCCEEDED, f"cancelling a succeeded run left it {state.value}")

    def test_fetch_never_brings_back_a_link_leading_outside_the_outputs(
        self,
        project: Path,
        state_dir: Path,
        tmp_path: Path,
        submitted: list[tuple[ComputeBackend, RunHandle]],
    ) -> None:
        """A task's symbolic link to ``/etc`` is not fetched as a link or as /etc's files.

        A backend may refuse the whole fetch or copy the rest; either way it says so with a
        :class:`~x_tui.compute.worker.errors.UserError`, or leaves the link out silently.
        """
        backend = self.make_backend(state_dir)
        handle = self.submit_job(submitted, backend, project, "links")
        check(wait_until_final(backend, handle) is RunState.SUCCEEDED, "the run did not succeed")
        destination = tmp_path / "fetched"
        with contextlib.suppress(UserError):
            backend.fetch(handle, destination)
        escape = destination / handle.run_id / "links" / "escape"
        check(not escape.is_symlink(), f"fetch brought back the link {escape}")
        check(
            not (escape.is_dir() and any(escape.iterdir())),
            f"fetch copied the files the link leads to into {escape}",
        )
