"""Large collections of runs gone over a slice at a time, so that other threads get a turn.

A call into C (a ``map`` of a C function, a set operation, a parse) holds the interpreter from
every other thread until it returns. With 100,000 runs, one such call over all of them held the
event loop's thread 20-40 ms while a worker read the store (a key pressed meanwhile waited that
long); over :data:`SLICE` of them it holds it a few milliseconds, and the interpreter may pass to
another thread between two slices. The store's index is checked this way, the kept final states
are written (and so parsed) a slice a line, and what happened while the user was away is worked
out a slice at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

SLICE = 10_000
"""Values gone over per call into C (some 2-4 ms for this many run ids or file names)."""

_T = TypeVar("_T")


def slices(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """``items`` :data:`SLICE` at a time, in order."""
    size = SLICE
    for start in range(0, len(items), size):
        yield items[start : start + size]
