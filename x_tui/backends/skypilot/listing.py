"""A complete listing of a run's outputs directory, taken the same way on the cluster and here.

The copy transport sends this file's source to the cluster's ``python3`` over SSH (``python3 -
list DIR``) and imports it here for the local copy, so both sides are listed by one function: every
entry under the directory by relative path, with its type, and each regular file's size and
SHA-256. Symbolic links are listed as links and never followed. ``python3 - read DIR PATH`` writes
one regular file's bytes to standard output, refusing any path through a link.

Standard library only, for any Python 3.7 or later: it runs on whatever image the cluster has.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from typing import Any

EXIT_MISSING = 3
"""``read`` found no such file."""
EXIT_REFUSED = 4
"""``read`` was asked for a path through a link, or for something not a regular file."""
EXIT_TOO_LARGE = 5
"""``read`` found a file larger than :data:`READ_LIMIT`; none of it was written."""
READ_LIMIT = 64 << 20
"""The most ``read`` writes of one file, as every reader of outputs keeps at most."""


def _digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def listing(root: str) -> dict[str, dict[str, Any]] | None:
    """Every entry under ``root`` by ``/``-separated relative path, or ``None`` if it is missing.

    Each entry is ``{"type": "dir"}``, ``{"type": "link"}``, ``{"type": "other"}`` or
    ``{"type": "file", "size": N, "sha256": HEX}``.
    """
    if not os.path.isdir(root) or os.path.islink(root):
        return None
    entries: dict[str, dict[str, Any]] = {}
    for directory, names, files in os.walk(root, followlinks=False):
        for name in sorted(names + files):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                entries[relative] = {"type": "link"}
            elif stat.S_ISDIR(mode):
                entries[relative] = {"type": "dir"}
            elif stat.S_ISREG(mode):
                size = os.lstat(path).st_size
                entries[relative] = {"type": "file", "size": size, "sha256": _digest(path)}
            else:
                entries[relative] = {"type": "other"}
    return entries


def read(root: str, relative: str) -> bytes | int:
    """The bytes of ``root/relative``, or an exit status saying why there are none."""
    path = root
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if ".." in parts or not parts:
        return EXIT_REFUSED
    for index, part in enumerate(parts):
        path = os.path.join(path, part)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return EXIT_MISSING
        last = index == len(parts) - 1
        if stat.S_ISLNK(mode) or (not last and not stat.S_ISDIR(mode)):
            return EXIT_REFUSED
        if last and not stat.S_ISREG(mode):
            return EXIT_REFUSED
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    # Swapped for a link or a FIFO since it was looked at: refused, never followed or waited on.
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return EXIT_MISSING
    except OSError:
        return EXIT_REFUSED
    with os.fdopen(descriptor, "rb") as stream:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return EXIT_REFUSED
        data = stream.read(READ_LIMIT + 1)
    return EXIT_TOO_LARGE if len(data) > READ_LIMIT else data


def main(argv: list[str]) -> int:
    """``list DIR`` prints the listing as JSON; ``read DIR PATH`` writes the file's bytes."""
    if len(argv) == 2 and argv[0] == "list":
        sys.stdout.write(json.dumps({"entries": listing(argv[1])}))
        return 0
    if len(argv) == 3 and argv[0] == "read":
        found = read(argv[1], argv[2])
        if isinstance(found, int):
            return found
        sys.stdout.buffer.write(found)
        return 0
    sys.stderr.write("usage: python3 - list DIR | read DIR PATH\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
