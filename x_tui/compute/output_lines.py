"""Reading a growing file of a run's outputs by the lines appended since the last read.

The worker appends to its side files (``telemetry.jsonl``, ``metrics.jsonl``) every few seconds
while a run runs. A reader that follows one (the runs table's progress and GPU columns) reads it
whole once, then only the bytes added since: a file that did not change (same identity, size
and modification time, one ``lstat``) is not opened at all. The file is opened as
:func:`~x_tui.compute.outputs.read_output` opens it (no link followed, regular files only).

The reading starts over from the first byte when the path names another file (the worker
renames a thinned copy over it), when the file shrank, or when the last bytes read are no longer
there (a file rewritten in place). Reads are bounded: bytes past ``limit`` are never read, and a
file larger than ``too_large`` is refused as ``read_output`` refuses it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from x_tui.compute.outputs import (
    READ_LIMIT,
    OutputTooLargeError,
    OutsideOutputsError,
    open_output,
)

SIGNATURE_BYTES = 64
"""How many of the last bytes read are compared to tell a rewritten file from a grown one."""

_Stamp = tuple[int, int, int, int]
"""A file's device, inode, size and modification time (ns)."""

_UNREAD: _Stamp = (-1, -1, -1, -1)


@dataclass(frozen=True, slots=True)
class Appended:
    """What a file holds beyond what was read before.

    Attributes:
        restart: The lines start at the file's first byte (the first read, or the file was
            replaced, shrank, was rewritten or is gone): what was read before no longer counts.
        lines: The complete lines added, without their newlines.
        rest: The unterminated last line (read again once it is complete), or ``b""``.
    """

    restart: bool
    lines: list[bytes]
    rest: bytes = b""


class OutputLines:
    """One file of a run's outputs, read by the lines appended since the last read."""

    def __init__(
        self,
        outputs: Path,
        relative: str,
        *,
        limit: int = READ_LIMIT,
        too_large: int = READ_LIMIT,
    ) -> None:
        """Follow ``relative`` under ``outputs`` (nothing is read before :meth:`read`).

        Args:
            outputs: The run's outputs directory.
            relative: The file's path relative to it (``"telemetry.jsonl"``).
            limit: Bytes of the file read at most (the rest is never read).
            too_large: A file larger than this is refused (:class:`OutputTooLargeError`).
        """
        self._outputs = outputs
        self._relative = relative
        self._path = outputs / relative
        self._limit = limit
        self._too_large = too_large
        self._stamp: _Stamp | None = _UNREAD
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self._signature = b""

    def read(self) -> Appended | None:
        """The lines appended since the last read; ``None`` when the file did not change.

        A file that does not exist (yet), is a link or is under one reads as empty.

        Raises:
            OutputTooLargeError: If the file holds more than ``too_large`` bytes.
        """
        stamp = _stamp_of(self._path)
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            descriptor = open_output(self._outputs, self._relative) if stamp is not None else None
        except (OSError, OutsideOutputsError):
            descriptor = None
        if descriptor is None:
            self._forget()
            return Appended(restart=True, lines=[])
        try:
            return self._read_from(descriptor)
        except OSError:
            self._forget()
            return Appended(restart=True, lines=[])
        except OutputTooLargeError:
            self._forget()
            self._stamp = _UNREAD  # refused again at the next read, as read_output would
            raise
        finally:
            os.close(descriptor)

    def _read_from(self, descriptor: int) -> Appended:
        info = os.fstat(descriptor)
        if info.st_size > self._too_large:
            raise OutputTooLargeError(
                f"{self._relative!r} in the run's outputs is larger than the {self._too_large}"
                " bytes read of it; fetch the run to read it whole"
            )
        identity = (info.st_dev, info.st_ino)
        restart = (
            identity != self._identity
            or info.st_size < self._offset
            or not self._signature_holds(descriptor)
        )
        if restart:
            self._forget()
            self._identity = identity
        end = min(info.st_size, self._limit)
        data = os.pread(descriptor, end - self._offset, self._offset) if end > self._offset else b""
        cut = data.rfind(b"\n") + 1
        complete, rest = data[:cut], data[cut:]
        self._offset += len(complete)
        self._signature = (self._signature + complete)[-SIGNATURE_BYTES:]
        return Appended(restart=restart, lines=complete.split(b"\n")[:-1], rest=rest)

    def _signature_holds(self, descriptor: int) -> bool:
        """Whether the last bytes read are still where they were."""
        if not self._signature:
            return True
        at = self._offset - len(self._signature)
        return os.pread(descriptor, len(self._signature), at) == self._signature

    def _forget(self) -> None:
        self._identity = None
        self._offset = 0
        self._signature = b""


def _stamp_of(path: Path) -> _Stamp | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns
