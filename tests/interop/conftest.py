"""Every test here drives the published substrax; all are marked ``interop`` (run them alone
with ``pytest -m interop``) and skip, saying why, when ``scripts/install_substrax.sh`` has not
made its environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.harness import Substrax, missing_reason, shared_project, substrax_home


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/interop/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.interop)


@pytest.fixture(scope="session")
def substrax_installed() -> Path:
    """substrax's environment; the test skips when it is not there."""
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    return substrax_home()


@pytest.fixture
def shared(
    tmp_path: Path, substrax_installed: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Substrax]:
    """A project locking substrax, with both tools on one store; leftover runs cancelled."""
    tools = shared_project(tmp_path, substrax_installed, pycache=tmp_path_factory.getbasetemp())
    yield tools
    tools.cli.cancel_leftovers()
