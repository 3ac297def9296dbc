"""Linux's inotify, through the C library: a descriptor that becomes readable when a watched
directory's entries change, so a watcher can sleep until something happens.

Only what :mod:`x_tui.app.file_watch` needs: watch a few directories (not recursively) and read
which of their entries changed. :func:`open_inotify` says ``None`` where there is no inotify
(another system, or a C library without it).
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000

ENTRY_CHANGES = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
"""What is watched of a directory: any change to an entry, and the directory going away."""

_EVENT = struct.Struct("iIII")
_READ_BYTES = 64 * 1024
MAX_READS = 64
"""Reads of the descriptor at most per :meth:`Inotify.read`: a directory that changes without
pause (a task writing files in a loop) cannot keep one read going; the rest waits, queued."""
MAX_PATHS = 10_000
"""Changed entries named at most per read; more are told as lost (read everything again)."""


@dataclass(frozen=True, slots=True)
class Changes:
    """What a read of the descriptor found.

    Attributes:
        paths: The entries that changed (the watched directory's path joined with the name).
        lost: Whether some changes were lost (the kernel's queue overflowed): the caller must
            read everything again.
        gone: Whether a watched directory was removed or moved: it is watched no more.
    """

    paths: frozenset[Path]
    lost: bool = False
    gone: bool = False


class Interrupt:
    """Ends an :meth:`Inotify.wait` from another thread (so a watching thread can sleep until
    something changes, and still stop at once): a pipe, written once set."""

    def __init__(self) -> None:
        """A new pipe, not set."""
        self._read, self._write = os.pipe()
        self._lock = threading.Lock()
        self._closed = False

    def fileno(self) -> int:
        """The descriptor that becomes readable once set."""
        return self._read

    def set(self) -> None:
        """End every wait on it, now and from now on (nothing once closed)."""
        with self._lock:
            if not self._closed:
                os.write(self._write, b"\0")

    def close(self) -> None:
        """Close the pipe (by the thread that waits on it, once it no longer does)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._read)
                os.close(self._write)


class Inotify:
    """An inotify descriptor watching some directories."""

    def __init__(self, library: ctypes.CDLL, descriptor: int) -> None:
        """Use ``descriptor`` (from ``inotify_init1``) of ``library``; see :func:`open_inotify`."""
        self._library = library
        self._descriptor = descriptor
        self._directories: dict[int, Path] = {}

    def watch(self, directory: Path) -> None:
        """Watch ``directory``'s entries.

        Raises:
            OSError: If it cannot be watched (missing, not a directory, the watch limit).
        """
        number = self._library.inotify_add_watch(
            self._descriptor, os.fsencode(directory), ENTRY_CHANGES | IN_ONLYDIR
        )
        if number < 0:
            error = ctypes.get_errno()
            raise OSError(error, f"cannot watch {directory}: {os.strerror(error)}")
        self._directories[number] = directory

    def wait(self, seconds: float | None, *, interrupt: Interrupt | None = None) -> bool:
        """Whether something changed within ``seconds`` (without reading it).

        Args:
            seconds: How long to wait at most; ``None`` waits until something changes.
            interrupt: Ends the wait once it is set.
        """
        watched = [self._descriptor]
        if interrupt is not None:
            watched.append(interrupt.fileno())
        timeout = None if seconds is None else max(0.0, seconds)
        ready, _, _ = select.select(watched, [], [], timeout)
        return self._descriptor in ready

    def read(self) -> Changes:
        """What changed since the last read (nothing, if nothing did)."""
        paths: set[Path] = set()
        lost = gone = False
        for _ in range(MAX_READS):
            try:
                data = os.read(self._descriptor, _READ_BYTES)
            except BlockingIOError:
                break
            if not data:
                break
            at = 0
            while at + _EVENT.size <= len(data):
                number, mask, _cookie, length = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
                at += _EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    lost = True
                    continue
                if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                    gone = True
                    continue
                directory = self._directories.get(number)
                if directory is not None and name and not lost:
                    paths.add(directory / os.fsdecode(name))
                    if len(paths) > MAX_PATHS:
                        lost = True
        if lost:
            paths.clear()
        return Changes(frozenset(paths), lost=lost, gone=gone)

    def close(self) -> None:
        """Stop watching."""
        os.close(self._descriptor)


def open_inotify() -> Inotify | None:
    """A new inotify descriptor, or ``None`` where the system has no inotify.

    Raises:
        OSError: If the system has inotify but it cannot give another descriptor (its limit).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        library = ctypes.CDLL(None, use_errno=True)
        init = library.inotify_init1
        library.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    descriptor = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if descriptor < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"no inotify descriptor: {os.strerror(error)}")
    return Inotify(library, descriptor)
