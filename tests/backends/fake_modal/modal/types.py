"""``modal.types`` as the backend uses it: Volume entries."""

import enum
from dataclasses import dataclass


class FileEntryType(enum.IntEnum):
    """What a Volume entry is."""

    UNSPECIFIED = 0
    FILE = 1
    DIRECTORY = 2
    SYMLINK = 3
    FIFO = 4
    SOCKET = 5


@dataclass(frozen=True)
class FileEntry:
    """One entry of a Volume listing."""

    path: str
    type: FileEntryType
    mtime: int
    size: int
