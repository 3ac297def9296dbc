"""Test helpers for x-tui's backends and third-party ones: the :class:`BackendContract`.

Importing this package needs pytest and imports no Textual.
"""

from __future__ import annotations

from x_tui.testing.contract import (
    POLL_SECONDS,
    SCRIPTS,
    TASK_SECONDS,
    WAIT_SECONDS,
    BackendContract,
    check,
    contract_spec,
    wait_for_line,
    wait_until_final,
)

__all__ = [
    "POLL_SECONDS",
    "SCRIPTS",
    "TASK_SECONDS",
    "WAIT_SECONDS",
    "BackendContract",
    "check",
    "contract_spec",
    "wait_for_line",
    "wait_until_final",
]
