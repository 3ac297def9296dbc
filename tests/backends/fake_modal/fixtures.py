"""Pytest fixtures of the Modal tests; a test module binds the one it uses (``fake = fake_modal``).

``fake_modal`` makes ``import modal`` give the fake, with a token, for one test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import FakeModal, install_fake_modal


@pytest.fixture
def fake_modal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModal]:
    """The fake ``modal``, installed for one test; what its calls did is printed at the end (pytest
    shows it for a test that failed)."""
    for fake in install_fake_modal(tmp_path, monkeypatch):
        yield fake
        print(f"the fake Modal's calls:\n{fake.account()}")
