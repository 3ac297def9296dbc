"""What every test gets: files of its own.

The suite runs in parallel (``pytest-xdist``, see ``addopts`` in pyproject.toml), so no test may
touch a file another test (or the user) also uses: each test's run store, settings file and demo
copy are under its own ``tmp_path``, whatever the test itself sets. Session fixtures that start a
server (sshd, moto) or make an environment (the fake SkyPilot) run once per worker, on a free port
and under that worker's own temporary directory.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path

import pytest

pytest_plugins = ("tests.backends.fake_sky.fixtures",)
"""The fake SkyPilot's fixtures, registered once for the suite: a session fixture (its tool
environment, moto, sshd) is then made once per worker. Bound by name in each test module
instead, pytest made one of each per module: three modules on one worker started three moto
servers."""

PYCACHE_ENV = "X_TUI_TEST_PYCACHE"
"""Where the suite keeps compiled bytecode when the environment says not to write it (default
``~/.cache/x-tui-tests/pycache``)."""


def pytest_configure(config: pytest.Config) -> None:
    """Keep compiled bytecode for every interpreter the suite starts (see :func:`cache_bytecode`).

    This runs before ``pytest-xdist`` starts its workers, so they inherit it too.
    """
    cache_bytecode()
    let_children_be_interrupted()
    collect_garbage_less_often()
    name_uvs_python()


def name_uvs_python() -> None:
    """Have every ``uv`` the suite starts use this interpreter's base Python by its path.

    The test projects and fake clusters run ``uv lock`` and ``uv sync``; left to find a Python on
    ``PATH``, each ``uv`` asks the first ``python3`` there, which on a machine with pyenv is a shim
    that runs a dozen shell scripts (about 0.1 CPU s a time). Given a path, uv asks it once and
    keeps the answer. A ``UV_PYTHON`` already set is kept.
    """
    os.environ.setdefault("UV_PYTHON", os.path.realpath(sys._base_executable))


def collect_garbage_less_often() -> None:
    """Run Python's cycle collector in the larger batches the TUI itself uses
    (:func:`x_tui.app.collect_garbage_in_larger_batches`).

    A TUI test's app makes and drops hundreds of thousands of objects; at the default threshold
    the collector ran thousands of times per test file and took about a quarter of the CPU time
    of the app tests (29% of ``test_actions``, ``test_main_screen`` and ``test_run_screen``:
    13.1 s of 45.4 s; 6.0 s of 37.9 s at 50,000). Garbage is still collected, in fewer and larger
    passes; a worker's memory grows by about a third.
    """
    from x_tui.app import collect_garbage_in_larger_batches

    collect_garbage_in_larger_batches()


def let_children_be_interrupted() -> None:
    """Have every process the suite starts take SIGINT as Ctrl-C, and SIGHUP as a hang-up,
    however the suite was started.

    A shell starts a background job (``pytest &``, a script's ``... &``) with SIGINT ignored, and
    an ignored signal stays ignored through ``exec``: every ``x-tui`` a test starts would then
    ignore the Ctrl-C a test sends it, and wait for its run to end. A handled signal is reset to
    its default at ``exec``, so handling it here gives the children Python's own Ctrl-C.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Likewise SIGHUP under ``nohup``: the tests of a closed terminal or SSH connection hang up
    # on an app or a submitter and wait for it to go, as it does in a user's session.
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def cache_bytecode() -> None:
    """Have this interpreter and every one it starts read and write bytecode in one cache.

    Where ``PYTHONDONTWRITEBYTECODE`` is set, each of the suite's many interpreters (pytest's
    workers, ``x-tui`` verbs, apps on a terminal, bridges, workers) would compile Textual, Rich
    and x-tui from source again: about half of a short ``x-tui`` process's time. The cache lies
    outside the tree (``PYTHONPYCACHEPREFIX``), so no project or run directory a test compares
    gains a ``__pycache__``. A ``PYTHONPYCACHEPREFIX`` already set is kept.
    """
    if not (sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE")):
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or os.environ.get(PYCACHE_ENV)
    if not prefix:
        prefix = str(Path.home() / ".cache" / "x-tui-tests" / "pycache")
    Path(prefix).mkdir(parents=True, exist_ok=True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


@pytest.fixture(autouse=True)
def own_user_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run store, settings file and demo directory of this test alone."""
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("X_TUI_CONFIG", str(tmp_path / "no-settings.toml"))
    monkeypatch.setenv("X_TUI_DEMO_DIR", str(tmp_path / "demo"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start each parallel worker on whole test files with slow tests
    (:func:`tests.support.deal_to_workers`), so none is left alone with a slow one at the end.

    A file whose tests share a machine-wide lock (marked ``one_worker``: the snapshot files, whose
    paths are on screen) is dealt the same way: spread over the workers, they met at the end of
    the run and all but one waited on the lock, some 15 s of the suite's last 20.
    """
    from tests.support import deal_to_workers

    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = deal_to_workers(
        items,
        workers,
        file_of=lambda item: item.nodeid.split("::", 1)[0],
        is_slow=lambda item: any(item.get_closest_marker(name) for name in ("slow", "one_worker")),
    )


def pytest_sessionfinish() -> None:
    """Collect the worker's garbage once, then set what is left aside from later collections.

    At the end of a session pytest runs the cycle collector five times over (to report
    exceptions raised in finalizers); over a worker's whole heap that took a second or more of
    CPU per worker, all of them at once, at the very end of the run. One collection here finds
    the same garbage (its finalizers' exceptions are still reported), and ``gc.freeze`` leaves
    pytest's five passes only what is made after it.
    """
    gc.collect()
    gc.freeze()
