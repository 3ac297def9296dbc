"""The outputs' reading rule on real files: links, FIFOs, sparse files, limits and destinations."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from x_tui.compute import outputs as rule
from x_tui.compute.outputs import (
    DestinationError,
    OutputTooLargeError,
    OutsideOutputsError,
    check_destination,
    copy_outputs,
    copy_sparse,
    list_output_dir,
    output_file,
    read_output,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    """Outputs with a task's logs, a link to a directory outside, a link to a file, a FIFO."""
    root = tmp_path / "outputs"
    (root / "t").mkdir(parents=True)
    (root / "t" / "stdout.log").write_text("own\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stdout.log").write_text("SECRET\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "t" / "passwd").symlink_to(outside / "stdout.log")
    os.mkfifo(root / "t" / "pipe")
    return root


def test_read_output_reads_a_file_and_refuses_links_fifos_and_climbing(outputs: Path) -> None:
    assert read_output(outputs, "t/stdout.log") == b"own\n"
    assert read_output(outputs, "t/missing.log") is None
    for refused in ("linked/stdout.log", "t/passwd", "t/pipe", "../outside/stdout.log", "/etc"):
        with pytest.raises(OutsideOutputsError):
            read_output(outputs, refused)


def test_a_fifo_is_refused_at_once_even_with_a_writer_waiting(outputs: Path) -> None:
    # Opened non-blocking and checked with fstat: nothing waits on the pipe's other end.
    done = threading.Event()

    def read() -> None:
        with pytest.raises(OutsideOutputsError):
            read_output(outputs, "t/pipe")
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert done.is_set(), "reading a FIFO blocked"


def test_a_read_over_its_limit_is_refused_without_reading_the_whole_file(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"")
    os.truncate(tmp_path / "big", 50 << 30)

    with pytest.raises(OutputTooLargeError, match="larger than the 1024 bytes"):
        read_output(tmp_path, "big", limit=1024)
    (tmp_path / "small").write_bytes(b"x" * 1024)
    assert read_output(tmp_path, "small", limit=1024) == b"x" * 1024


def test_output_file_names_a_safe_log_and_nothing_through_a_link(outputs: Path) -> None:
    assert output_file(outputs, "t/stdout.log") == outputs / "t" / "stdout.log"
    assert output_file(outputs, "t/not-yet.log") == outputs / "t" / "not-yet.log"
    assert output_file(outputs, "linked/stdout.log") is None
    assert output_file(outputs, "t/passwd") is None
    assert output_file(outputs, "t/pipe") is None


def test_list_output_dir_keeps_real_entries_and_never_lists_through_a_link(outputs: Path) -> None:
    assert list_output_dir(outputs, "t") == ("stdout.log",)
    assert list_output_dir(outputs, "linked") == ()
    assert list_output_dir(outputs, "missing") == ()


def test_copy_outputs_leaves_out_links_and_fifos_and_copies_the_rest(
    outputs: Path, tmp_path: Path
) -> None:
    target = tmp_path / "copy"

    refused = copy_outputs(outputs, target)

    assert [entry.split(" (")[0] for entry in refused] == ["linked", "t/passwd", "t/pipe"]
    assert (target / "t" / "stdout.log").read_text() == "own\n"
    assert sorted(path.name for path in target.rglob("*")) == ["stdout.log", "t"]


def test_copy_outputs_replaces_a_link_in_the_copy_instead_of_writing_through_it(
    outputs: Path, tmp_path: Path
) -> None:
    target = tmp_path / "copy"
    victim = tmp_path / "victim"
    victim.mkdir()
    (target / "t").mkdir(parents=True)
    (target / "t" / "stdout.log").symlink_to(victim / "file")
    (tmp_path / "victim-dir").mkdir()

    copy_outputs(outputs, target)

    assert not (victim / "file").exists()
    assert (target / "t" / "stdout.log").read_text() == "own\n"
    assert not (target / "t" / "stdout.log").is_symlink()


def test_a_copy_into_a_link_or_a_file_is_refused(outputs: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "as-link").symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "as-file").write_text("x")

    with pytest.raises(DestinationError, match="symbolic link"):
        copy_outputs(outputs, tmp_path / "as-link")
    with pytest.raises(DestinationError, match="a file, not a directory"):
        copy_outputs(outputs, tmp_path / "as-file")
    assert list(elsewhere.iterdir()) == []


def test_outputs_replaced_by_a_link_are_refused(outputs: Path, tmp_path: Path) -> None:
    swapped = tmp_path / "swapped"
    swapped.symlink_to(outputs, target_is_directory=True)

    with pytest.raises(OutsideOutputsError, match="symbolic link"):
        copy_outputs(swapped, tmp_path / "copy")


def test_a_write_failure_mid_copy_is_one_destination_error(
    outputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(_fd: int, _data: object, _offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rule.os, "pwrite", full)

    with pytest.raises(DestinationError, match="No space left on device") as stopped:
        copy_outputs(outputs, tmp_path / "copy")
    assert "\n" not in str(stopped.value)


def _sparse(path: Path) -> None:
    with path.open("wb") as data:
        data.write(b"head")
        data.seek(3 << 30)
        data.write(b"tail")
        data.truncate(4 << 30)


@pytest.mark.parametrize("seek", [True, False], ids=["seek-data", "zero-blocks"])
def test_copy_sparse_keeps_holes_with_or_without_seek_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seek: bool
) -> None:
    if not seek:
        monkeypatch.delattr(rule.os, "SEEK_DATA")
    source, copy = tmp_path / "source", tmp_path / "copy"
    _sparse(source)
    size = source.stat().st_size

    reader = os.open(source, os.O_RDONLY)
    writer = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if seek:
            copy_sparse(reader, writer, size)
        else:  # only the first 64 MiB: skipping zero blocks still reads them all
            copy_sparse(reader, writer, 64 << 20)
    finally:
        os.close(reader)
        os.close(writer)

    info = copy.stat()
    assert info.st_blocks * 512 <= 2 << 20  # at most the written chunk and some metadata
    with copy.open("rb") as data:
        assert data.read(4) == b"head"
        if seek:
            assert info.st_size == size
            data.seek(3 << 30)
            assert data.read(4) == b"tail"


def test_check_destination_refuses_files_links_and_unwritable_places(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert check_destination(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists(), "a check creates nothing"
    assert check_destination(tmp_path, "run") == tmp_path / "run"
    with pytest.raises(DestinationError, match="a file, not a directory"):
        check_destination(afile)
    with pytest.raises(DestinationError, match="is a file, not a directory"):
        check_destination(afile / "below")
    (tmp_path / "run").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(DestinationError, match="symbolic link"):
        check_destination(tmp_path, "run")
    with pytest.raises(DestinationError, match="not writable"):
        check_destination(Path("/proc/x-tui-nowhere"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "run"]


def test_a_copied_file_keeps_its_mode(tmp_path: Path) -> None:
    source = tmp_path / "outputs"
    source.mkdir()
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o750)

    copy_outputs(source, tmp_path / "copy")

    assert stat.S_IMODE((tmp_path / "copy" / "run.sh").stat().st_mode) == 0o750
