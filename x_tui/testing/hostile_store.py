"""A run store as a user or an attacker could leave it: good runs among hostile entries.

:func:`build_hostile_store` writes, under a state directory, a few good run handles (local runs
that ended long ago) and, beside them, at least forty entries of every file type, size, depth and
encoding: FIFOs, a socket, links to devices, dangling and to directories, a directory named
``*.json``, a 100 MB sparse file, JSON nested 100,000 deep, invalid UTF-8, UTF-16, NUL bytes,
huge strings, a wrong type for every field, a handle filed under another run's name, copies,
unknown versions; hostile sweep records; good runs whose manifest was replaced by a FIFO, a
directory, a link or an enormous file; and x-tui's own caches replaced by garbage. Each bad entry
comes with a word its reason must contain, so a test can check that every one is named.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from x_tui.compute.store import RunHandle
from x_tui.compute.sweeps import Sweep, SweepAxis, SweepRun
from x_tui.compute.worker.record_files import MANIFEST_BYTES, RECORD_BYTES
from x_tui.compute.worker.records import dump_record

GOOD_RUNS = 5
"""How many good runs the store holds (four more have a hostile manifest)."""

MANY_STRINGS = (MANIFEST_BYTES - (1 << 20)) // 28
"""How many output names the largest hostile manifest lists (it stays under the size cap)."""

_SPARSE_BYTES = 100 << 20


@dataclass(frozen=True, slots=True)
class HostileStore:
    """What :func:`build_hostile_store` wrote.

    Attributes:
        state: The state directory (``SUBSTRAX_STATE_DIR``).
        good: The run ids of the readable handles, newest first.
        bad: Each hostile record file (run store and sweep store), with a word its reason holds.
        bad_manifests: The good runs whose manifest is hostile, with a word the reason holds.
        caches: x-tui's own cache files, replaced by something unreadable.
    """

    state: Path
    good: tuple[str, ...]
    bad: dict[Path, str] = field(default_factory=dict)
    bad_manifests: dict[str, str] = field(default_factory=dict)
    caches: tuple[Path, ...] = ()


def handle_data(run_id: str, *, run_dir: Path, minutes_ago: int = 60) -> dict[str, object]:
    """A local run's handle as substrax writes it, as a JSON object."""
    moment = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) - dt.timedelta(minutes=minutes_ago)
    handle = RunHandle(
        run_id=run_id,
        backend="local",
        job=run_id.split("-", maxsplit=1)[0],
        project="/home/user/sample",
        submitted_at=moment,
        settings={"python": None, "state_dir": None},
        details={"pid": "999999999", "run_dir": str(run_dir)},
    )
    return dump_record(handle)


def build_hostile_store(state: Path, *, hostile: bool = True) -> HostileStore:
    """Write the corpus under ``state``.

    Args:
        state: The state directory (created if missing).
        hostile: Off, only the good runs are written (the clean store to compare with).

    Returns:
        What was written.
    """
    runs = state / "compute" / "runs"
    sweeps = state / "x-tui" / "sweeps"
    work = state / "elsewhere"
    for directory in (runs, sweeps, work):
        directory.mkdir(parents=True, exist_ok=True)
    good: list[str] = []
    for index in range(GOOD_RUNS + 4):
        run_id = f"good{index}-20251231T{10 + index:02d}0000Z-{index:06x}"
        run_dir = work / run_id
        (run_dir / "outputs").mkdir(parents=True)
        _write(
            runs / f"{run_id}.json", handle_data(run_id, run_dir=run_dir, minutes_ago=60 - index)
        )
        good.insert(0, run_id)
    sweep_id = "sweep-good-20251231T000000Z-00000001"
    _write(sweeps / f"{sweep_id}.json", _sweep(sweep_id, [good[1], good[2]]))
    if not hostile:
        return HostileStore(state=state, good=tuple(good))
    bad: dict[Path, str] = {}
    sample = handle_data(good[0], run_dir=work / good[0])

    def name(index: int) -> Path:
        return runs / f"bad-20251230T{index // 60:02d}{index % 60:02d}00Z-{index:06x}.json"

    entries = list(_bad_handles(sample, work))
    for index, (make, reason) in enumerate(entries):
        path = name(index)
        make(path)
        bad[path] = reason
    # Misfiled and copied records: the real one stays listed, the others are named.
    real = runs / f"{good[0]}.json"
    misfiled = name(len(entries))
    misfiled.write_bytes(real.read_bytes())
    bad[misfiled] = "filed under another run's name"
    copy = runs / f"{good[0]} (copy).json"
    copy.write_bytes(real.read_bytes())
    bad[copy] = "is not a run id"
    bad[runs / "notes.json"] = "is not a run id"
    _write(runs / "notes.json", {"note": "kept here by hand"})
    sweep_copy = sweeps / f"{sweep_id}.json.json"
    sweep_copy.write_bytes((sweeps / f"{sweep_id}.json").read_bytes())
    bad[sweep_copy] = "is not a sweep id"
    for index, (make, reason) in enumerate(_bad_sweeps()):
        path = sweeps / f"sweep-bad-20251230T0000{index:02d}Z-{index:08x}.json"
        make(path)
        bad[path] = reason
    misfiled_sweep = sweeps / "sweep-bad-20251230T000099Z-00000099.json"
    _write(misfiled_sweep, _sweep("sweep-other-20251230T000000Z-0000abcd", [good[1]]))
    bad[misfiled_sweep] = "filed under another sweep's name"
    bad_manifests = _bad_manifests(work, good)
    caches = _bad_caches(state)
    return HostileStore(
        state=state,
        good=tuple(good),
        bad=bad,
        bad_manifests=bad_manifests,
        caches=caches,
    )


Maker = Callable[[Path], None]


def _bad_handles(sample: dict[str, object], work: Path) -> Iterator[tuple[Maker, str]]:
    outside = work / "outside-handle.json"
    _write(outside, sample)
    yield os.mkfifo, "FIFO"
    yield _socket_at, "is a socket"
    yield _link_to(Path("/dev/zero")), "symbolic link"
    yield _link_to(Path("/dev/urandom")), "symbolic link"
    yield _link_to(work / "no-such-file.json"), "symbolic link"
    yield _link_to(work), "symbolic link"
    yield _link_to(outside), "symbolic link"
    yield (lambda path: path.mkdir()), "directory"
    yield _sparse, "larger than"
    yield _text("[" * 100_000 + "]" * 100_000), "nested deeper"
    yield _text('{"a":' * 100_000), "nested deeper"
    yield _text("[" * 70 + "]" * 70), "nested deeper"
    yield _text("[" + "[]," * 300_000 + "[]]"), "arrays and objects"
    yield _raw(b'{"schema_version": 2, "job": "\xff\xfe\xfd"}'), "not UTF-8"
    yield _raw(json.dumps(sample).encode("utf-16")), "not UTF-8"
    yield _raw(b'{"schema_version":\x00 2}'), "not JSON"
    yield _raw(b"\x00" * 4096), "not JSON"
    yield _raw(b"\xef\xbb\xbf" + json.dumps(sample).encode()), "not JSON"
    yield _raw(b""), "not JSON"
    yield _raw(b"   \n"), "not JSON"
    yield _raw(json.dumps(sample).encode()[:-10]), "not JSON"
    yield _text(json.dumps({**sample, "job": "x" * (2 << 20)})), "larger than"
    yield _text(json.dumps({**sample, "run_id": "r" * 500_000})), "run id"
    yield _text("null"), "JSON object"
    yield _text("[1, 2, 3]"), "JSON object"
    yield _text('"a string"'), "JSON object"
    yield _text("NaN"), "JSON object"
    versions: list[tuple[str, object]] = [
        ("schema_version", 99),
        ("schema_version", "2"),
        ("schema_version", True),
        ("schema_version", None),
    ]
    for key, value in versions:
        yield _text(json.dumps({**sample, key: value})), "version"
    wrong_types: list[tuple[str, object]] = [
        ("run_id", 5),
        ("backend", []),
        ("job", {}),
        ("project", 1.5),
        ("submitted_at", "yesterday"),
        ("submitted_at", 1767225600),
        ("settings", [1]),
        ("details", {"pid": 1}),
        ("details", "pid"),
    ]
    for key, value in wrong_types:
        yield _text(json.dumps({**sample, key: value})), key
    yield _text(json.dumps({**sample, "extra": 1})), "unknown key"
    yield _text(json.dumps({k: v for k, v in sample.items() if k != "backend"})), "backend"
    deep_settings: object = 1
    for _ in range(80):
        deep_settings = {"k": deep_settings}
    yield _text(json.dumps({**sample, "settings": deep_settings})), "nested deeper"


def _sweep(sweep_id: str, run_ids: list[str]) -> dict[str, object]:
    sweep = Sweep(
        sweep_id=sweep_id,
        job="good",
        backend="local",
        project="/home/user/sample",
        created_at=dt.datetime(2025, 12, 30, tzinfo=dt.UTC),
        axes=(SweepAxis(name="LR", values=tuple(str(n) for n in range(len(run_ids)))),),
        runs=tuple(
            SweepRun(run_id=run_id, parameters={"LR": str(n)}) for n, run_id in enumerate(run_ids)
        ),
    )
    return dump_record(sweep)


def _bad_sweeps() -> Iterator[tuple[Maker, str]]:
    # Just under the size cap, countless tiny arrays: refused by the scan before parsing.
    yield _text("[" + "[]," * ((RECORD_BYTES - 16) // 3) + "[]]"), "arrays and objects"
    yield os.mkfifo, "FIFO"
    yield (lambda path: path.mkdir()), "directory"
    yield _link_to(Path("/dev/zero")), "symbolic link"
    yield _text("[" * 100_000 + "]" * 100_000), "nested deeper"
    yield _raw(b"\xff" * 64), "not UTF-8"
    yield _sparse, "larger than"


def _bad_manifests(work: Path, good: list[str]) -> dict[str, str]:
    makers: list[tuple[Maker, str]] = [
        (os.mkfifo, "FIFO"),
        (lambda path: path.mkdir(), "directory"),
        # Just under the size cap, the most a manifest read may cost: parsed, then refused.
        (_text(json.dumps([f"out/shard-{n:09d}.bin" for n in range(MANY_STRINGS)])), "object"),
        (_link_to(Path("/dev/zero")), "symbolic link"),
    ]
    found: dict[str, str] = {}
    for run_id, (make, reason) in zip(good[-len(makers) :], makers, strict=True):
        make(work / run_id / "outputs" / "manifest.json")
        found[run_id] = reason
    return found


def _bad_caches(state: Path) -> tuple[Path, ...]:
    cache = state / "x-tui" / "final-states.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(cache)
    return (cache,)


def _write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _text(text: str) -> Maker:
    return _raw(text.encode("utf-8"))


def _raw(data: bytes) -> Maker:
    def make(path: Path) -> None:
        path.write_bytes(data)

    return make


def _link_to(target: Path) -> Maker:
    def make(path: Path) -> None:
        path.symlink_to(target)

    return make


def _sparse(path: Path) -> None:
    with path.open("wb") as out:
        out.truncate(_SPARSE_BYTES)


def _socket_at(path: Path) -> None:
    # A socket's path must be short: bind by a name relative to its directory.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = Path.cwd()
    try:
        os.chdir(path.parent)
        listener.bind(path.name)
    finally:
        os.chdir(here)
        with contextlib.suppress(OSError):
            listener.close()
