"""Reading a run's outputs on this machine without ever leaving them.

A task writes what it likes under its outputs, symbolic links included (``outputs/x -> /etc``),
and may still be running while they are read. Every file is therefore opened relative to an
already opened directory, one component at a time, without following a symbolic link, so no
entry (and no entry swapped for a link while the copy runs) leads outside the outputs.

This module never starts or signals a process; ``local_process.py`` does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path, PurePosixPath

from x_tui.compute.errors import UserError

_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)


class OutsideOutputsError(UserError, ValueError):
    """A path that would lead outside a run's outputs, or through a symbolic link."""


class NoOutputsError(UserError, FileNotFoundError):
    """A run whose outputs directory does not exist (yet): its worker never got to start."""


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


def copy_outputs(outputs: Path, target: Path) -> tuple[str, ...]:
    """Copy the regular files and directories under ``outputs`` into ``target``, merging.

    Symbolic links, devices, pipes and sockets are not copied (a link may lead anywhere on this
    machine, and a pipe would block the copy). An existing file in ``target`` is replaced.

    Args:
        outputs: The run's outputs directory.
        target: Where to copy them (created if missing).

    Returns:
        Each entry left out, as ``<relative path> (<why>)``, in walk order.

    Raises:
        NoOutputsError: If ``outputs`` does not exist.
    """
    refused: list[str] = []
    try:
        root = os.open(outputs, _DIR_FLAGS)
    except FileNotFoundError:
        raise NoOutputsError(f"the run has no outputs yet: {outputs} does not exist") from None
    target.mkdir(parents=True, exist_ok=True)
    try:
        _copy_dir(root, target, PurePosixPath(), refused)
    finally:
        os.close(root)
    return tuple(refused)


def _copy_dir(source: int, target: Path, relative: PurePosixPath, refused: list[str]) -> None:
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
                destination = target / name
                _clear_link(destination)
                destination.mkdir(exist_ok=True)
                _copy_dir(inner, destination, path, refused)
            finally:
                os.close(inner)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(source, name, target / name, path, refused)
        else:
            refused.append(f"{path} (not a regular file)")


def _copy_file(
    source: int, name: str, destination: Path, path: PurePosixPath, refused: list[str]
) -> None:
    try:
        descriptor = os.open(name, _FILE_FLAGS, dir_fd=source)
    except FileNotFoundError:
        return
    except OSError:
        refused.append(f"{path} (replaced while it was copied)")
        return
    with os.fdopen(descriptor, "rb") as reader:
        info = os.fstat(reader.fileno())
        if not stat.S_ISREG(info.st_mode):
            refused.append(f"{path} (not a regular file)")
            return
        _clear_link(destination)
        with destination.open("wb") as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)
    os.chmod(destination, stat.S_IMODE(info.st_mode))
    os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))


def _clear_link(destination: Path) -> None:
    # A link already in the copy must not redirect what is written through it.
    if destination.is_symlink():
        destination.unlink()


def _link_target(directory: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError:
        return "an unreadable target"


def read_output(outputs: Path, relative: str) -> bytes | None:
    """The bytes of one file under ``outputs``, read without following any symbolic link.

    Args:
        outputs: The run's outputs directory.
        relative: The file's path relative to it, with ``/`` separators, such as
            ``"manifest.json"`` or ``"train/stdout.log"``.

    Returns:
        Its content; ``None`` when it does not exist (yet).

    Raises:
        OutsideOutputsError: If ``relative`` is absolute, climbs with ``..``, or passes through
            a symbolic link or something that is not a directory or regular file.
    """
    parts = _parts(relative)
    descriptors: list[int] = []
    try:
        try:
            descriptors.append(os.open(outputs, _DIR_FLAGS))
        except FileNotFoundError:
            return None
        for part in parts[:-1]:
            try:
                descriptors.append(os.open(part, _DIR_FLAGS, dir_fd=descriptors[-1]))
            except FileNotFoundError:
                return None
            except OSError:
                raise OutsideOutputsError(_refusal(relative, "is not a directory")) from None
        try:
            descriptor = os.open(parts[-1], _FILE_FLAGS, dir_fd=descriptors[-1])
        except FileNotFoundError:
            return None
        except OSError:
            raise OutsideOutputsError(_refusal(relative, "is not a regular file")) from None
        with os.fdopen(descriptor, "rb") as reader:
            if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
                raise OutsideOutputsError(_refusal(relative, "is not a regular file"))
            return reader.read()
    finally:
        for descriptor in descriptors:
            with contextlib.suppress(OSError):
                os.close(descriptor)


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
