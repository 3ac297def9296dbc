"""The one bounded reader of JSON records on disk: run handles, sweep records, manifests,
attempts files and x-tui's own caches.

Nothing a file holds can stop a reader. Only a regular file is read (opened without following a
link and without blocking, then checked on its descriptor): a FIFO, a socket, a device, a
directory named ``*.json`` or a link is refused with what it is. A read takes at most
``max_bytes`` and :data:`READ_SECONDS`; the text must be UTF-8; and before it is parsed a linear
scan refuses JSON nested deeper than :data:`MAX_DEPTH` or holding more containers than its size
allows (and never more than :data:`MAX_CONTAINERS`), so parsing can neither exhaust the recursion
limit nor build a structure many times the file's size. Every refusal is an
:class:`UnreadableRecordError` whose message is the reason.

Reading a whole directory never fails on one bad file: each record that cannot be read is named
with the reason, beside the records that can, and a file whose record names another id is refused
("filed under another ... name"), so a record is only ever found under its own name and a copy
never hides or replaces the real one.

Standard library only: the worker ships this module (manifests are read through it).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from x_tui.compute.worker.errors import BadRecordError
from x_tui.compute.worker.records import RecordError

T = TypeVar("T")

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a record may have."""

READ_SECONDS = 2.0
"""The longest a record's file may take to read."""

HANDLE_BYTES = 1 << 20
"""The largest run handle read (handles written by x-tui and substrax are a few kB)."""

RECORD_BYTES = 8 << 20
"""The largest sweep record, attempts file, staged spec or cache read."""

MANIFEST_BYTES = 16 << 20
"""The largest manifest read (one that lists some 200,000 output files)."""

MAX_CONTAINERS = 1 << 18
"""The most arrays and objects one record may hold, whatever its size."""

MAX_REASON = 300
"""The most characters of a reason quoted from a record that cannot be read."""

_CHUNK = 1 << 20
_BYTES_PER_CONTAINER = 16
"""A record may hold one array or object per this many bytes of its text (plus a few)."""

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'"[]{}')
_AS_PARENS = bytes.maketrans(b"[{]}", b"(())")

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


class UnreadableRecordError(RecordError):
    """A record file that is refused or cannot be read; the message is the reason alone."""


def read_regular_file(path: Path, *, max_bytes: int, seconds: float = READ_SECONDS) -> bytes:
    """The bytes of a regular file, read within a size and a time bound.

    Args:
        path: The file; a link at its last component is refused, not followed.
        max_bytes: The most it may hold.
        seconds: The longest the read may take.

    Returns:
        Its content.

    Raises:
        FileNotFoundError: If there is no such file.
        UnreadableRecordError: If it is not a regular file, is larger than ``max_bytes``, takes
            longer than ``seconds`` or cannot be read; the message says which.
    """
    deadline = time.monotonic() + seconds
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise UnreadableRecordError(_open_refusal(path, error)) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableRecordError(f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > max_bytes:
            raise UnreadableRecordError(_too_large(info.st_size, max_bytes))
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(descriptor, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise UnreadableRecordError(_too_large(size, max_bytes, grew=True))
            if time.monotonic() > deadline:
                raise UnreadableRecordError(f"took longer than {seconds:g} s to read")
    except OSError as error:
        raise UnreadableRecordError(f"cannot be read: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    return b"".join(chunks)


def parse_json(data: str | bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> object:
    """Parse a record's JSON text within a size, a depth and a container-count bound.

    Args:
        data: The text, or its bytes (which must be UTF-8).
        max_bytes: The most bytes (or characters) it may hold.
        max_depth: The deepest nesting of arrays and objects accepted.

    Returns:
        The parsed value.

    Raises:
        UnreadableRecordError: If it is too large, not UTF-8, nested too deep, holds too many
            arrays and objects, or is not JSON; the message says which.
    """
    if len(data) > max_bytes:
        raise UnreadableRecordError(_too_large(len(data), max_bytes))
    if isinstance(data, bytes):
        return _loads(_checked_text(data, max_depth), max_depth)
    _check_shape(data.encode("utf-8", "surrogatepass"), max_depth)
    return _loads(data, max_depth)


def read_json_file(path: Path, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> object:
    """The JSON value a record file holds, read and parsed within every bound.

    Raises:
        FileNotFoundError: If there is no such file.
        UnreadableRecordError: If it cannot be read or parsed; the message is the reason.
    """
    data = read_regular_file(path, max_bytes=max_bytes)
    text = _checked_text(data, max_depth)
    del data  # parsed from the text alone: the bytes are not kept meanwhile
    return _loads(text, max_depth)


def read_cache_file(path: Path, *, max_bytes: int) -> object:
    """The JSON value of one of x-tui's large caches, bounded by a cheaper test than a record's.

    A cache (the store's index, the kept final states) may be tens of megabytes: rather than the
    exact scan of :func:`read_json_file`, every ``[`` and ``{`` byte is counted as a container
    (strings included, so the count is never lower than the truth) and the file is refused when
    there are more than one per :data:`_BYTES_PER_CONTAINER` bytes. Nesting too deep for the
    parser is refused by the parser itself.

    Raises:
        FileNotFoundError: If there is no such file.
        UnreadableRecordError: If it cannot be read, holds too many containers, is not UTF-8 or
            not JSON; the message is the reason.
    """
    return _loads(_cache_text(path, max_bytes), MAX_DEPTH)


def read_cache_lines(path: Path, *, max_bytes: int) -> list[object]:
    """The JSON value of each line of one of x-tui's large caches, bounded as
    :func:`read_cache_file` bounds a cache.

    One line is parsed at a time: a parse holds the interpreter from every other thread, and a
    cache of tens of megabytes in one value held it some 200 ms (the app's keys and frames
    included); a cache written in lines of some thousand values holds it a few milliseconds at a
    time.

    Raises:
        FileNotFoundError: If there is no such file.
        UnreadableRecordError: If it cannot be read, holds too many containers, is not UTF-8, or
            a line is not JSON; the message is the reason.
    """
    text = _cache_text(path, max_bytes)
    return [_loads(line, MAX_DEPTH) for line in text.split("\n") if line]


def _cache_text(path: Path, max_bytes: int) -> str:
    """A cache's text, refused as :func:`read_cache_file` says."""
    data = read_regular_file(path, max_bytes=max_bytes)
    containers = data.count(b"[") + data.count(b"{")
    if containers > len(data) // _BYTES_PER_CONTAINER + MAX_DEPTH:
        raise UnreadableRecordError(
            f"holds {containers} arrays and objects in {len(data)} bytes, more than a cache holds"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableRecordError(f"not UTF-8 text (byte at offset {error.start})") from None
    del data
    return text


def read_record_file(path: Path, read: Callable[[object], T], *, max_bytes: int) -> T:
    """Read the record a file holds.

    Args:
        path: The file.
        read: Reads the parsed JSON into the record (raises ``RecordError``).
        max_bytes: The largest file read.

    Returns:
        The record.

    Raises:
        FileNotFoundError: If there is no such file.
        BadRecordError: If it cannot be read or is not such a record; the message names the file
            and says why.
    """
    try:
        return read(read_json_file(path, max_bytes=max_bytes))
    except RecordError as error:
        # A reason may quote the record's own values: never at more than a line's length.
        raise BadRecordError(f"{path}: {_shortened(str(error), MAX_REASON)}") from None


def record_file_names(root: Path) -> list[str]:
    """The names of the ``*.json`` entries of a directory (partial writes, dot-named, left out).

    Returns:
        The names, sorted; empty when the directory is missing or cannot be listed.
    """
    try:
        with os.scandir(root) as entries:
            return sorted(
                entry.name
                for entry in entries
                if entry.name.endswith(".json") and not entry.name.startswith(".")
            )
    except OSError:
        return []


def misfiled_reason(kind: str, held: str, name: str) -> str:
    """The reason a file named ``name`` that holds ``kind`` ``held`` is not read as that record."""
    return f"filed under another {kind}'s name: it holds {kind} {held!r}, not {name!r}"


def read_record_dir(
    root: Path,
    read: Callable[[object], T],
    *,
    id_of: Callable[[T], str],
    is_id: Callable[[str], bool],
    kind: str,
    max_bytes: int,
) -> tuple[list[T], dict[Path, str]]:
    """Every ``<root>/*.json`` record, and each file that cannot be read, with the reason.

    Args:
        root: The directory (missing: nothing in it).
        read: Reads the parsed JSON into the record.
        id_of: The id a record is filed under (its file's stem).
        is_id: Whether a file's stem is of the id form (a file of another name is not read).
        kind: What a record is (``"run"``, ``"sweep"``), for the reason of a misfiled one.
        max_bytes: The largest file read.

    Returns:
        The readable records, in file-name order, and the unreadable files with their reasons.
    """
    records: list[T] = []
    unreadable: dict[Path, str] = {}
    for name in record_file_names(root):
        path = root / name
        if not is_id(path.stem):
            unreadable[path] = f"{path.stem!r} is not a {kind} id, so it holds no {kind}"
            continue
        try:
            record = read_record_file(path, read, max_bytes=max_bytes)
        except FileNotFoundError:
            continue  # removed since it was listed
        except BadRecordError as error:
            unreadable[path] = str(error).removeprefix(f"{path}: ")
            continue
        if id_of(record) != path.stem:
            unreadable[path] = misfiled_reason(kind, id_of(record), path.stem)
            continue
        records.append(record)
    return records, unreadable


def _checked_text(data: bytes, max_depth: int) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = data[error.start : error.start + 1].hex()
        raise UnreadableRecordError(
            f"not UTF-8 text (byte 0x{bad} at offset {error.start})"
        ) from None
    _check_shape(data, max_depth)
    return text


def _loads(text: str, max_depth: int) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise UnreadableRecordError(f"nested deeper than {max_depth} levels") from None
    except ValueError as error:
        raise UnreadableRecordError(f"not JSON ({_shortened(str(error))})") from None


def _check_shape(data: bytes, max_depth: int) -> None:
    openers = data.count(b"[") + data.count(b"{")
    if openers <= max_depth:
        return  # too few brackets to nest deeper, or to be too many
    # Every step is one pass in C that makes one new object (or a list of mostly empty or
    # one-byte pieces, which Python shares), never an object per token. Escaped backslashes,
    # then escaped quotes, go; then all but quotes and brackets; then what lies between paired
    # quotes (strings). Valid UTF-8 never holds these ASCII bytes inside a character.
    structure = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    brackets = b"".join(structure.split(b'"')[0::2]).translate(_AS_PARENS)
    del structure
    containers = brackets.count(b"(")
    # Each array or object is now a pair of parentheses: removing the innermost pairs once per
    # level measures the depth in at most max_depth passes.
    if b"(" * (max_depth + 1) in brackets:
        raise UnreadableRecordError(f"nested deeper than {max_depth} levels")  # at a glance
    remaining, depth = brackets, 0
    while remaining:
        if depth >= max_depth:
            raise UnreadableRecordError(f"nested deeper than {max_depth} levels")
        shorter = remaining.replace(b"()", b"")
        if len(shorter) == len(remaining):
            # Unbalanced (the parser fails on it), once it has gone as deep as the openers left.
            if depth + shorter.count(b"(") > max_depth:
                raise UnreadableRecordError(f"nested deeper than {max_depth} levels")
            break
        remaining, depth = shorter, depth + 1
    if containers > min(len(data) // _BYTES_PER_CONTAINER + max_depth, MAX_CONTAINERS):
        raise UnreadableRecordError(
            f"holds {containers} arrays and objects in {len(data)} bytes, more than a record holds"
        )


def _open_refusal(path: Path, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "is a symbolic link, not a regular file (links are not followed)"
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return f"cannot be read: {error.strerror or error}"
    if not stat.S_ISREG(mode):
        return f"is {_kind(mode)}, not a regular file"
    return f"cannot be read: {error.strerror or error}"


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _too_large(size: int, max_bytes: int, *, grew: bool = False) -> str:
    held = f"more than {max_bytes} bytes" if grew else f"{size} bytes"
    return f"is {held}, larger than the {max_bytes} a record may hold"


def _shortened(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
