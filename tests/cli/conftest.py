"""The CLI tests' fixtures: ``x-tui`` in a fresh project with a private state directory (see
``tests.cli.cli_support``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.cli_support import Cli, cli_for, make_project


@pytest.fixture(scope="session")
def new_cli(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Cli]:
    """Make ``x-tui`` in a fresh project under a directory: ``new_cli(root, top=...)``."""
    pycache = tmp_path_factory.mktemp("pycache")

    def make(root: Path, *, top: str = 'backend = "local"') -> Cli:
        return cli_for(make_project(root / "project", top=top), root / "state", pycache=pycache)

    return make


@pytest.fixture
def cli(tmp_path: Path, new_cli: Callable[..., Cli]) -> Iterator[Cli]:
    """``x-tui`` in a fresh project (backend ``local``) with its own state directory."""
    runner = new_cli(tmp_path)
    yield runner
    runner.cancel_leftovers()
