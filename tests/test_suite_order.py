"""The order the suite's tests are handed to its parallel workers in (``tests/conftest.py``)."""

from __future__ import annotations

from tests.support import deal_to_workers


def _slices(items: list[str], workers: int) -> list[list[str]]:
    """The contiguous slices pytest-xdist's ``worksteal`` gives each worker first."""
    cut, start = [], 0
    for worker in range(workers):
        size = (len(items) - start) // (workers - worker)
        cut.append(items[start : start + size])
        start += size
    return cut


def _suite() -> list[str]:
    """Forty files of ten tests; files 5-9 and 30 have slow tests (named ``...-slow``)."""
    slow_files = {5: 4, 6: 3, 7: 2, 8: 2, 9: 1, 30: 5}
    return [
        f"f{file:02d}::t{test}{'-slow' if test < slow_files.get(file, 0) else ''}"
        for file in range(40)
        for test in range(10)
    ]


def _deal(items: list[str], workers: int) -> list[str]:
    return deal_to_workers(
        items,
        workers,
        file_of=lambda item: item.split("::")[0],
        is_slow=lambda item: item.endswith("-slow"),
    )


def test_every_test_is_handed_out_once_and_each_worker_starts_on_slow_ones() -> None:
    items = _suite()
    dealt = _deal(items, 6)
    assert sorted(dealt) == sorted(items)
    for part in _slices(dealt, 6):
        assert part[0].split("::")[0] in {"f05", "f06", "f07", "f08", "f09", "f30"}
    # Each file with a slow test stays whole in one worker's slice, in its own order.
    for file in ("f05", "f06", "f07", "f08", "f09", "f30"):
        holding = [part for part in _slices(dealt, 6) if any(t.startswith(file) for t in part)]
        assert len(holding) == 1
        assert [t for t in holding[0] if t.startswith(file)] == [
            t for t in items if t.startswith(file)
        ]
    # The heaviest file first, each to the worker with the fewest slow tests so far.
    assert [part[0].split("::")[0] for part in _slices(dealt, 6)] == [
        "f30",
        "f05",
        "f06",
        "f07",
        "f08",
        "f09",
    ]


def test_one_worker_or_no_slow_test_keeps_the_collections_order() -> None:
    items = _suite()
    assert _deal(items, 1) == items
    quick = [item.replace("-slow", "") for item in items]
    assert _deal(quick, 6) == quick
