"""Submitting a run without ever abandoning it while the backend may still create it.

A provider may take far longer to submit than to answer anything else: Modal builds the image
first, minutes on a project's first run. So a submit is never raced against a short deadline and
forgotten. It runs in a thread of its own, where ``operations.submit_run`` saves the handle the
moment the backend returns it, whether or not anyone still waits; the caller waits for as long as
the backend declares a submit may take (its ``submit_seconds`` attribute, plus
:data:`SUBMIT_GRACE_SECONDS`), or the service's own deadline for a backend that declares none,
and hears how long it has been each second. A caller that stops waiting (the user quit) leaves the
thread to finish; :meth:`SubmitTracker.wait` lets the app wait for it at exit, so the handle is on
disk before the process ends and the run is not left running unseen.

This module imports no Textual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from x_tui.compute.store import RunHandle, RunStore
from x_tui.compute.worker.errors import ProviderError

if TYPE_CHECKING:  # (loaded with the first plan, not at start-up)
    from x_tui.compute.operations import RunPlan

SUBMIT_GRACE_SECONDS = 60.0
"""Waited beyond a backend's declared submit deadline: its staging before the provider call,
and the handle's save after it."""

PROGRESS_SECONDS = 1.0
"""How often a waiting caller hears how long the submit has taken."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SubmitProgress:
    """How long a submit has been going.

    Attributes:
        job: The job being submitted.
        backend: The backend it goes to.
        elapsed: Seconds since the submit started.
        limit: Seconds the caller waits in all.
        builds_image: Whether the backend declared a long submit of its own (``submit_seconds``),
            which it does because it builds an image first.
    """

    job: str
    backend: str
    elapsed: float
    limit: float
    builds_image: bool

    @property
    def doing(self) -> str:
        """What the backend is doing, in words: ``building image…`` or ``submitting…``."""
        return "building image…" if self.builds_image else "submitting…"


class SubmitStillGoing(ProviderError):
    """The caller stopped waiting, but the submit goes on and its run will be kept if created."""


@dataclass(eq=False, kw_only=True, slots=True)
class PendingSubmit:
    """A submit under way.

    Attributes:
        job: The job.
        backend: The backend.
        started: When it started (``time.monotonic()``).
        done: Set once the backend's submit has returned or raised and the handle is saved.
        handle: The saved handle, once there is one.
        error: What the submit raised, if it did.
    """

    job: str
    backend: str
    started: float
    done: threading.Event = field(default_factory=threading.Event)
    handle: RunHandle | None = None
    error: BaseException | None = None


def declared_submit_seconds(backend: object) -> float | None:
    """The submit deadline a backend declares (``submit_seconds``), or ``None`` if none."""
    declared = getattr(backend, "submit_seconds", None)
    if isinstance(declared, bool) or not isinstance(declared, (int, float)) or declared <= 0:
        return None
    return float(declared)


class SubmitTracker:
    """Runs submits in threads of their own and remembers those still going."""

    def __init__(self, store: RunStore) -> None:
        """Save handles in ``store``.

        Args:
            store: Where each submitted run's handle is saved, the moment the backend returns it.
        """
        self.store = store
        self._lock = threading.Lock()
        self._pending: list[PendingSubmit] = []

    def pending(self) -> tuple[PendingSubmit, ...]:
        """The submits still going, oldest first."""
        with self._lock:
            return tuple(self._pending)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every submit still going to finish (its handle saved, or its error kept).

        Args:
            timeout: The most seconds to wait in all; ``None`` waits as long as they take.

        Returns:
            Whether none is left going.
        """
        give_up = None if timeout is None else time.monotonic() + timeout
        for submit in self.pending():
            left = None if give_up is None else max(0.0, give_up - time.monotonic())
            if not submit.done.wait(left):
                return False
        return not self.pending()

    def submit(
        self,
        plan: RunPlan,
        *,
        limit: float,
        builds_image: bool,
        progress: Callable[[SubmitProgress], object] | None = None,
        keep_waiting: Callable[[], bool] | None = None,
    ) -> RunHandle:
        """Submit ``plan`` in a thread of its own and wait for its handle.

        Args:
            plan: The run.
            limit: The most seconds to wait.
            builds_image: Said in each progress report (see :class:`SubmitProgress`).
            progress: Called each :data:`PROGRESS_SECONDS` while waiting.
            keep_waiting: Asked each :data:`PROGRESS_SECONDS`; waiting stops once it is false.

        Returns:
            The handle, already saved in the store.

        Raises:
            SubmitStillGoing: If ``limit`` passed or ``keep_waiting`` turned false first; the
                submit goes on and its handle is saved if the backend creates the run.
            UserError: If the backend refused the run.
        """
        pending = PendingSubmit(job=plan.spec.name, backend=plan.backend, started=time.monotonic())
        with self._lock:
            self._pending.append(pending)
        threading.Thread(
            target=self._run,
            args=(plan, pending),
            name=f"x-tui submit {plan.spec.name} to {plan.backend}",
            daemon=True,
        ).start()
        while not pending.done.wait(PROGRESS_SECONDS):
            elapsed = time.monotonic() - pending.started
            if progress is not None:
                progress(
                    SubmitProgress(
                        job=pending.job,
                        backend=pending.backend,
                        elapsed=elapsed,
                        limit=limit,
                        builds_image=builds_image,
                    )
                )
            if elapsed >= limit:
                raise SubmitStillGoing(
                    f"backend '{plan.backend}': the submit of job '{pending.job}' did not finish"
                    f" within {limit:g} s; it goes on, and if it creates the run, its handle is"
                    " saved and the run appears in the runs table"
                )
            if keep_waiting is not None and not keep_waiting():
                raise SubmitStillGoing(
                    f"stopped waiting for the submit of job '{pending.job}' to {plan.backend};"
                    " it goes on, and its run appears in the runs table once created"
                )
        if pending.error is not None:
            raise pending.error
        assert pending.handle is not None
        return pending.handle

    def _run(self, plan: RunPlan, pending: PendingSubmit) -> None:
        from x_tui.compute.operations import submit_run

        try:
            pending.handle = submit_run(plan, store=self.store)
        except BaseException as error:  # kept for the caller, who raises it as it was
            pending.error = error
        finally:
            with self._lock:
                self._pending.remove(pending)
            pending.done.set()
