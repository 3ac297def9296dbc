"""What ``x-tui status`` says of a run's guard: its budget, why it ended, the runs it is linked to.

:func:`guard_json` reads a run's guard side file (:mod:`x_tui.compute.run_guards`) and its ending
side file (:mod:`x_tui.compute.run_endings`) into the keys ``budget``, ``ended_because``,
``resubmitted_from`` and ``resubmitted_as`` of a run's JSON; :func:`with_guard` adds them to a
status line. The reason may quote a provider: it is escaped here (one line, no control bytes).
"""

from __future__ import annotations

import os
from pathlib import Path

from x_tui.compute.guard_book import GuardBook
from x_tui.compute.run_endings import EndingBook, RunEnding
from x_tui.compute.run_guards import RunGuard
from x_tui.compute.sanitize import escaped
from x_tui.compute.worker.records import JsonValue


class GuardNotes:
    """The guard and ending side files of one state directory, each directory listed once, so a
    listing of many runs opens only the files that exist."""

    def __init__(self, state_dir: Path) -> None:
        """List ``state_dir``'s guard and ending side files."""
        self.guards = GuardBook(state_dir)
        self.endings = EndingBook(state_dir)
        self._guarded = _names(self.guards.root)
        self._ended = _names(self.endings.root)

    def any(self) -> bool:
        """Whether any run has a guard or an ending side file."""
        return bool(self._guarded or self._ended)

    def holds(self, run_id: str) -> bool:
        """Whether ``run_id`` has a guard or ending side file (else :meth:`json` is all nulls)."""
        name = f"{run_id}.json"
        return name in self._guarded or name in self._ended

    def json(self, run_id: str) -> dict[str, JsonValue]:
        """:func:`guard_json` of ``run_id``."""
        name = f"{run_id}.json"
        guard = self.guards.load(run_id) if name in self._guarded else RunGuard()
        ending = self.endings.load(run_id) if name in self._ended else None
        return _notes(guard, ending)


def _names(directory: Path) -> frozenset[str]:
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return frozenset()


def guard_json(state_dir: Path, run_id: str) -> dict[str, JsonValue]:
    """The run's ``budget`` (text or null), ``ended_because``, and its links (run ids or null)."""
    return _notes(GuardBook(state_dir).load(run_id), EndingBook(state_dir).load(run_id))


def _notes(guard: RunGuard, ending: RunEnding | None) -> dict[str, JsonValue]:
    return {
        "budget": guard.budget_text().removeprefix("budget ") or None,
        "ended_because": ending.reason if ending is not None else None,
        "resubmitted_from": guard.resubmitted_from,
        "resubmitted_as": guard.resubmitted_as,
    }


def with_guard(line: str, notes: dict[str, JsonValue]) -> str:
    """A status line with the run's budget, why it ended and its links, where it has them."""
    budget = notes.get("budget")
    if isinstance(budget, str):
        line = f"{line}  budget {escaped(budget)}"
    ended = notes.get("ended_because")
    if isinstance(ended, str) and ended:
        line = f"{line}  ({escaped(' '.join(ended.split()))})"
    source = notes.get("resubmitted_from")
    if isinstance(source, str):
        line = f"{line}  resubmission of {source}"
    target = notes.get("resubmitted_as")
    if isinstance(target, str):
        line = f"{line}  resubmitted as {target}"
    return line
