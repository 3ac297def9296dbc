"""A local run's compiled zipapp is kept between processes, and a kept file is used only when whole.

Compiling the worker's modules takes about 50 ms; ``cached_worker_zipapp`` keeps the result in
x-tui's state directory, named by the sources and this interpreter, with its own SHA-256 before it.
"""

from __future__ import annotations

import io
import os
import shutil
import time
import zipfile
from pathlib import Path

import pytest

from x_tui.compute import worker_bundle
from x_tui.compute.worker_bundle import cached_worker_zipapp, worker_zipapp_bytes


def compiled() -> bytes:
    """The compiled archive this process built (marshal's bytes vary from one build to the next,
    so the comparison is with this process's own build, which is kept)."""
    return worker_zipapp_bytes(compiled=True)


def _kept(cache: Path) -> list[Path]:
    return sorted(cache.glob("worker-*.pyz"))


def _no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*, compiled: bool = False) -> bytes:
        raise AssertionError(f"built again (compiled={compiled})")

    monkeypatch.setattr(worker_bundle, "worker_zipapp_bytes", refuse)


def test_the_compiled_zipapp_is_built_once_then_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    assert cached_worker_zipapp(cache) == compiled()
    (kept,) = _kept(cache)
    _no_build(monkeypatch)
    assert cached_worker_zipapp(cache) == compiled()
    assert _kept(cache) == [kept]


@pytest.mark.parametrize(
    "damage",
    ["flipped byte", "truncated", "empty", "digest only", "a directory", "a link", "too large"],
)
def test_a_damaged_or_foreign_cache_file_is_never_used_and_is_replaced(
    tmp_path: Path, damage: str
) -> None:
    cache = tmp_path / "cache"
    cached_worker_zipapp(cache)
    (kept,) = _kept(cache)
    data = kept.read_bytes()
    if damage == "flipped byte":
        kept.write_bytes(data[:5000] + bytes([data[5000] ^ 1]) + data[5001:])
    elif damage == "truncated":
        kept.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        kept.write_bytes(b"")
    elif damage == "digest only":
        kept.write_bytes(data[:32])
    elif damage == "a directory":
        kept.unlink()
        kept.mkdir()
    elif damage == "a link":  # to a whole archive, yet not the cache's own file
        elsewhere = tmp_path / "elsewhere.pyz"
        kept.rename(elsewhere)
        kept.symlink_to(elsewhere)
    else:
        with kept.open("ab") as file:
            file.truncate(worker_bundle.CACHE_LIMIT + 1)

    assert cached_worker_zipapp(cache) == compiled()
    if damage != "a directory":  # a directory in its place is left, and the archive built
        assert kept.is_file()
        assert not kept.is_symlink()
        assert kept.read_bytes() == data


def test_a_cache_that_cannot_be_written_costs_only_the_build(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert cached_worker_zipapp(blocked / "cache") == compiled()
    assert blocked.read_text() == "not a directory"


def _edit_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str = "worker/main.py"
) -> None:
    """Ship a copy of x-tui whose ``compute/<module>`` ends in ``# edited``."""
    package = tmp_path / "x_tui"
    shutil.copytree(worker_bundle._PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    edited = package / "compute" / module
    edited.write_text(edited.read_text() + "\n# edited\n")
    monkeypatch.setattr(worker_bundle, "_PACKAGE", package)
    monkeypatch.setattr(worker_bundle, "_SHIPPED", package / "compute" / "worker")


def _forget_builds() -> None:
    worker_bundle.worker_zipapp_bytes.cache_clear()
    worker_bundle._cache_key.cache_clear()


def test_changed_sources_get_a_file_of_their_own_and_the_old_one_goes_once_a_week_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cached_worker_zipapp(cache)
    (old,) = _kept(cache)
    _edit_the_sources(tmp_path, monkeypatch)
    _forget_builds()  # a new process, on the edited sources
    try:
        built = cached_worker_zipapp(cache)
        # Another Python (or version) sharing the state directory keeps its archive: each one's
        # write leaves the other's, which is young, so neither is built at every start.
        assert old in _kept(cache)
        assert len(_kept(cache)) == 2
        (new,) = set(_kept(cache)) - {old}
        # Once the other's archive is a week old, the next write removes it.
        week_ago = time.time() - 8 * 24 * 3600
        os.utime(old, (week_ago, week_ago))
        new.unlink()
        assert cached_worker_zipapp(cache) == built
    finally:
        _forget_builds()
    assert _kept(cache) == [new]
    archive = zipfile.ZipFile(io.BytesIO(built[built.index(b"PK") :]))
    assert archive.read("x_tui/compute/worker/main.py").endswith(b"# edited\n")


def test_sources_edited_while_a_process_runs_never_get_its_earlier_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached_worker_zipapp(tmp_path / "before")
    (before,) = _kept(tmp_path / "before")
    _edit_the_sources(tmp_path, monkeypatch)  # this process keeps its build, and its name
    assert cached_worker_zipapp(tmp_path / "after") == compiled()
    (after,) = _kept(tmp_path / "after")
    assert after.name == before.name


def test_a_partial_file_a_killed_writer_left_is_removed_by_the_next_write(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    left = cache / ".worker-0123.pyz.abcd"
    left.write_bytes(b"half an archive")
    old = time.time() - 3600
    os.utime(left, (old, old))
    young = cache / ".worker-0123.pyz.efgh"  # a live writer's, being written now
    young.write_bytes(b"being written")
    assert cached_worker_zipapp(cache) == compiled()
    assert not left.exists()
    assert young.exists()


def test_a_new_bundler_never_takes_an_archive_an_older_one_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive's ``__main__.py`` and layout are written by ``worker_bundle`` itself: an x-tui
    whose worker modules are the same but whose bundler changed gets an archive of its own."""
    cache = tmp_path / "cache"
    cached_worker_zipapp(cache)
    (old,) = _kept(cache)
    _edit_the_sources(tmp_path, monkeypatch, module="worker_bundle.py")
    _forget_builds()
    try:
        cached_worker_zipapp(cache)
    finally:
        _forget_builds()
    assert len(_kept(cache)) == 2
    assert old in _kept(cache)
