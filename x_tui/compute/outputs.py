"""The one rule for reading a run's outputs on this machine, used by every reader.

A task writes what it likes under its outputs, symbolic links, FIFOs and sparse files included
(``outputs/x -> /etc``, ``mkfifo outputs/p``, ``truncate -s 50G outputs/big``), and may still be
running while they are read. Fetch, ``x-tui logs --attempts``, the run screen's files and task
logs, and a local peek all read them through this module, which holds to one rule:

- **No link out.** Every path is opened relative to an already opened directory, one component
  at a time, with ``O_NOFOLLOW``: no symbolic link is followed, to a file or a directory, and an
  entry swapped for a link while it is read cannot lead outside the outputs.
- **No special files.** Only regular files are read or copied; a FIFO, device or socket is left
  out (opened non-blocking, so a FIFO never blocks the open, and checked with ``fstat``).
- **Sparse stays sparse.** A fetch copies only a file's data (``SEEK_DATA``/``SEEK_HOLE``, else
  by skipping all-zero blocks) and leaves its holes as holes.
- **Bounded reads.** :func:`read_output` reads at most its limit and refuses a larger file.

Writes into a fetch's destination follow the same care: its directories are opened without
following links, an entry of the copy that is a link is replaced, never written through, and the
destination is checked before anything runs (:func:`check_destination`).

It imports no Textual, Rich or provider SDK, and never starts or signals a process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path, PurePosixPath

from x_tui.compute.worker.errors import UserError

READ_LIMIT = 64 << 20
"""The most :func:`read_output` reads of one file unless told otherwise (64 MiB)."""

_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


class OutsideOutputsError(UserError, ValueError):
    """A path that would lead outside a run's outputs, or through a symbolic link."""


class NoOutputsError(UserError, FileNotFoundError):
    """A run whose outputs directory does not exist (yet): its worker never got to start."""


class OutputTooLargeError(UserError, ValueError):
    """A file of the outputs larger than the reader's limit; nothing of it was kept in memory."""


class DestinationError(UserError, ValueError):
    """A fetch destination that cannot take the copy: a file, a link, unwritable, or full."""


class UnsafeOutputsError(UserError, RuntimeError):
    """A fetch that left out entries of the outputs that are not plain files or directories.

    Everything else was copied. The message names the copy and each entry left out.

    Attributes:
        copy: The directory the rest was copied to.
        refused: Each entry left out, relative to the outputs, with why.
    """

    def __init__(self, copy: Path, refused: tuple[str, ...]) -> None:
        """Describe a fetch that left ``refused`` out of ``copy``."""
        listed = "; ".join(refused)
        super().__init__(
            f"copied the run's outputs to {copy}, but left out {len(refused)} "
            f"{'entry' if len(refused) == 1 else 'entries'} that could lead outside them: {listed}"
        )
        self.copy = copy
        self.refused = refused


# --- destinations ------------------------------------------------------------------------------


def check_destination(destination: Path, run_id: str | None = None) -> Path:
    """Refuse a fetch destination that cannot take a run's outputs, before anything runs.

    ``destination`` itself may be a link to a directory (the user named it); the run's own
    directory under it may not be a link or anything but a directory. The nearest existing
    directory must accept a new entry (tried with an empty directory made and removed at once).

    Args:
        destination: Where the outputs go (``--into``, or the state directory's fetch root).
        run_id: The run, whose outputs go to ``destination / run_id``; ``None`` before it is
            submitted (only ``destination`` is checked).

    Returns:
        ``destination / run_id`` (``destination`` without a run id), absolute.

    Raises:
        DestinationError: If ``destination`` or a directory above it is not a directory, the
            run's directory under it is a link or not a directory, or nothing can be created
            there; the message names the path and why.
    """
    destination = Path(os.path.abspath(destination))
    target = destination if run_id is None else destination / run_id
    if run_id is not None and target.is_symlink():
        raise DestinationError(
            f"{target} is a symbolic link; a fetch never writes through one (remove it, or"
            " fetch elsewhere with --into)"
        )
    if target.exists() and not target.is_dir():
        raise DestinationError(f"cannot fetch into {target}: it is a file, not a directory")
    existing = target
    while not existing.exists() and not existing.is_symlink():
        existing = existing.parent
    if not existing.is_dir():
        raise DestinationError(
            f"cannot fetch into {destination}: {existing} is a file, not a directory"
        )
    try:
        probe = tempfile.mkdtemp(prefix=".x-tui-fetch-", dir=existing)
    except OSError as error:
        raise DestinationError(
            f"cannot fetch into {destination}: {existing} is not writable"
            f" ({error.strerror or error})"
        ) from None
    os.rmdir(probe)
    return target


# --- fetch -------------------------------------------------------------------------------------


def copy_outputs(outputs: Path, target: Path) -> tuple[str, ...]:
    """Copy the regular files and directories under ``outputs`` into ``target``, merging.

    Symbolic links, devices, pipes and sockets are not copied (a link may lead anywhere on this
    machine, and a pipe would block the copy). A sparse file's holes stay holes. An existing
    file in ``target`` is replaced (unlinked first, so a hard link elsewhere is not written
    through); an existing link in ``target`` is replaced, never followed.

    Args:
        outputs: The run's outputs directory.
        target: Where to copy them (created if missing); it must not be a symbolic link.

    Returns:
        Each entry left out, as ``<relative path> (<why>)``, in walk order.

    Raises:
        NoOutputsError: If ``outputs`` does not exist.
        OutsideOutputsError: If ``outputs`` itself is a symbolic link or not a directory.
        DestinationError: If ``target`` cannot take the copy (see :func:`check_destination`),
            or writing it fails (a full disk, a read-only file system); the message says where.
    """
    refused: list[str] = []
    try:
        root = os.open(outputs, _DIR_FLAGS)
    except FileNotFoundError:
        raise NoOutputsError(f"the run has no outputs yet: {outputs} does not exist") from None
    except OSError:
        raise OutsideOutputsError(
            f"{outputs} is a symbolic link or not a directory; a run's outputs are read only"
            " from the directory its worker made"
        ) from None
    try:
        check_destination(target.parent, target.name)
        try:
            target.mkdir(parents=True, exist_ok=True)
            into = os.open(target, _DIR_FLAGS)
        except OSError as error:
            raise _destination_error(target, error) from None
        try:
            _copy_dir(root, into, PurePosixPath(), refused, target)
        finally:
            os.close(into)
    finally:
        os.close(root)
    return tuple(refused)


def _destination_error(path: Path, error: OSError) -> DestinationError:
    where = f"{path}/{error.filename}" if isinstance(error.filename, str) else str(path)
    return DestinationError(f"fetching into {where} stopped: {error.strerror or error}")


def _copy_dir(
    source: int, into: int, relative: PurePosixPath, refused: list[str], target: Path
) -> None:
    with os.scandir(source) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        path = relative / name
        try:
            info = os.stat(name, dir_fd=source, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            refused.append(f"{path} (a symbolic link to {_link_target(source, name)})")
        elif stat.S_ISDIR(info.st_mode):
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=source)
            except FileNotFoundError:
                continue
            except OSError:
                refused.append(f"{path} (replaced while it was copied)")
                continue
            try:
                inner_into = _make_dir(into, name, target / path)
                try:
                    _copy_dir(inner, inner_into, path, refused, target)
                finally:
                    os.close(inner_into)
            finally:
                os.close(inner)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(source, name, into, path=path, refused=refused, target=target)
        else:
            refused.append(f"{path} (not a regular file)")


def _make_dir(into: int, name: str, shown: Path) -> int:
    """Open directory ``name`` of the copy, replacing a link or file that stands in its way."""
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=into)
        except FileNotFoundError:
            pass
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(name, dir_fd=into)  # a link or a file: replaced, never followed
        os.mkdir(name, dir_fd=into)
        return os.open(name, _DIR_FLAGS, dir_fd=into)
    except OSError as error:
        raise DestinationError(
            f"fetching into {shown} stopped: {error.strerror or error}"
        ) from None


def _copy_file(
    source: int,
    name: str,
    into: int,
    *,
    path: PurePosixPath,
    refused: list[str],
    target: Path,
) -> None:
    try:
        descriptor = os.open(name, _FILE_FLAGS, dir_fd=source)
    except FileNotFoundError:
        return
    except OSError:
        refused.append(f"{path} (replaced while it was copied)")
        return
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            refused.append(f"{path} (not a regular file)")
            return
        try:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(name, dir_fd=into)
            writer = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=into)
        except OSError as error:
            raise DestinationError(
                f"fetching into {target / path} stopped: {error.strerror or error}"
            ) from None
        try:
            copy_sparse(descriptor, writer, info.st_size)
            os.fchmod(writer, stat.S_IMODE(info.st_mode))
            os.utime(writer, ns=(info.st_atime_ns, info.st_mtime_ns))
        except OSError as error:
            raise DestinationError(
                f"fetching into {target / path} stopped: {error.strerror or error}"
            ) from None
        finally:
            os.close(writer)
    finally:
        os.close(descriptor)


def copy_sparse(reader: int, writer: int, size: int) -> None:
    """Copy the first ``size`` bytes of ``reader`` to ``writer``, leaving holes as holes.

    The data extents are found with ``SEEK_DATA``/``SEEK_HOLE`` where the file system tells
    them; elsewhere every all-zero block is skipped. The copy is then cut or extended to
    ``size``, which makes the skipped ranges holes.

    Args:
        reader: A regular file open for reading.
        writer: A new, empty regular file open for writing.
        size: How many bytes to copy (the source's size when it was opened; a file still
            growing is copied up to there).

    Raises:
        OSError: If reading or writing fails.
    """
    for start, end in _data_extents(reader, size):
        offset = start
        while offset < end:
            chunk = os.pread(reader, min(_CHUNK, end - offset), offset)
            if not chunk:
                break
            if chunk.count(0) != len(chunk):
                _pwrite_all(writer, chunk, offset)
            offset += len(chunk)
    os.ftruncate(writer, size)


def _data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        return [(0, size)]
    extents: list[tuple[int, int]] = []
    offset = 0
    try:
        while offset < size:
            try:
                start = os.lseek(fd, offset, seek_data)
            except OSError as error:
                if error.errno == errno.ENXIO:  # no data after offset: the rest is a hole
                    break
                raise
            if start >= size:
                break
            end = min(os.lseek(fd, start, seek_hole), size)
            extents.append((start, end))
            offset = end
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.EOPNOTSUPP):  # not told: skip zero blocks
            return [(0, size)]
        raise
    return extents


def _pwrite_all(fd: int, chunk: bytes, offset: int) -> None:
    view = memoryview(chunk)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[written:]
        offset += written


def _link_target(directory: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError:
        return "an unreadable target"


# --- reading one file --------------------------------------------------------------------------


def read_output(outputs: Path, relative: str, *, limit: int = READ_LIMIT) -> bytes | None:
    """The bytes of one file under ``outputs``, read without following any symbolic link.

    Args:
        outputs: The run's outputs directory.
        relative: The file's path relative to it, with ``/`` separators, such as
            ``"manifest.json"`` or ``"train/stdout.log"``.
        limit: The most bytes read; a larger file is refused, not cut.

    Returns:
        Its content; ``None`` when it does not exist (yet).

    Raises:
        OutsideOutputsError: If ``relative`` is absolute, climbs with ``..``, or passes through
            a symbolic link or something that is not a directory or regular file.
        OutputTooLargeError: If the file holds more than ``limit`` bytes.
    """
    descriptor = open_output(outputs, relative)
    if descriptor is None:
        return None
    with os.fdopen(descriptor, "rb") as reader:
        data = reader.read(limit + 1)
    if len(data) > limit:
        raise OutputTooLargeError(
            f"{relative!r} in the run's outputs is larger than the {limit} bytes read of it;"
            " fetch the run to read it whole"
        )
    return data


def output_file(outputs: Path, relative: str) -> Path | None:
    """The path of one file under ``outputs`` for a reader that opens it by name (a log view).

    The path is checked now as :func:`read_output` would read it; a link put there later is
    the reader's to refuse (it is opened again with the same check next time).

    Args:
        outputs: The run's outputs directory.
        relative: The file's path relative to it.

    Returns:
        The file's path, also when it does not exist yet (a log not yet written); ``None``
        when it is a link, a special file, or under one.
    """
    try:
        descriptor = open_output(outputs, relative)
    except OutsideOutputsError:
        return None
    if descriptor is not None:
        os.close(descriptor)
    return outputs.joinpath(*_parts(relative))


def list_output_dir(outputs: Path, relative: str) -> tuple[str, ...]:
    """The names of the real directories and regular files in one directory of the outputs.

    Args:
        outputs: The run's outputs directory.
        relative: The directory's path relative to it (``"attempts/train"``).

    Returns:
        The names, sorted; empty when the directory does not exist, is a link or is under one.
    """
    try:
        descriptors = _open_dirs(outputs, _parts(relative))
    except OutsideOutputsError:
        return ()
    if descriptors is None:
        return ()
    try:
        last = descriptors[-1]
        with os.scandir(last) as listing:
            names = sorted(entry.name for entry in listing)
        kept = []
        for name in names:
            try:
                mode = os.stat(name, dir_fd=last, follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                kept.append(name)
        return tuple(kept)
    except OSError:
        return ()
    finally:
        _close_all(descriptors)


def _open_dirs(outputs: Path, parts: list[str]) -> list[int] | None:
    """Open ``outputs`` and each directory of ``parts`` below it; ``None`` when one is missing.

    Raises:
        OutsideOutputsError: If one is a link or not a directory.
    """
    descriptors: list[int] = []
    try:
        try:
            descriptors.append(os.open(outputs, _DIR_FLAGS))
        except FileNotFoundError:
            return None
        except OSError:
            raise OutsideOutputsError(
                f"{outputs} is a symbolic link or not a directory, not a run's outputs"
            ) from None
        for part in parts:
            try:
                descriptors.append(os.open(part, _DIR_FLAGS, dir_fd=descriptors[-1]))
            except FileNotFoundError:
                _close_all(descriptors)
                return None
            except OSError:
                raise OutsideOutputsError(_refusal("/".join(parts), "is not a directory")) from None
    except BaseException:
        _close_all(descriptors)
        raise
    return descriptors


def open_output(outputs: Path, relative: str) -> int | None:
    """A descriptor of the regular file ``relative`` under ``outputs`` (blocking, read-only),
    opened as :func:`read_output` opens it; the caller closes it.

    Returns:
        The descriptor; ``None`` when the file or a directory above it does not exist (yet).

    Raises:
        OutsideOutputsError: As :func:`read_output`.
    """
    parts = _parts(relative)
    descriptors = _open_dirs(outputs, parts[:-1])
    if descriptors is None:
        return None
    try:
        try:
            descriptor = os.open(parts[-1], _FILE_FLAGS, dir_fd=descriptors[-1])
        except FileNotFoundError:
            return None
        except OSError:
            raise OutsideOutputsError(_refusal(relative, "is not a regular file")) from None
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise OutsideOutputsError(_refusal(relative, "is not a regular file"))
        os.set_blocking(descriptor, True)
        return descriptor
    finally:
        _close_all(descriptors)


def _close_all(descriptors: list[int]) -> None:
    for descriptor in descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptor)
    descriptors.clear()


def _parts(relative: str) -> list[str]:
    path = PurePosixPath(relative)
    parts = [part for part in path.parts if part != "."]
    if not relative or path.is_absolute() or ".." in parts or not parts or "\0" in relative:
        raise OutsideOutputsError(
            f"{relative!r} is not a path inside the run's outputs "
            "(a relative path such as 'train/stdout.log', without '..')"
        )
    return parts


def _refusal(relative: str, why: str) -> str:
    return f"{relative!r} in the run's outputs {why}, or passes through a symbolic link"
