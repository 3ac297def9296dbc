"""Directories of JSON records, one file per record: the run store's and the sweep store's.

Reading a whole directory never fails on one bad file: each record that cannot be read is named
with the reason, beside the records that can, and a file whose record names another id is
refused, so a record is only ever found under its own name.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from x_tui.compute.errors import BadRecordError
from x_tui.compute.records import RecordError

T = TypeVar("T")


def parse_record_file(path: Path, text: str, read: Callable[[object], T]) -> T:
    """Read the record a file holds.

    Args:
        path: The file, for messages.
        text: Its text.
        read: Reads the parsed JSON into the record (raises ``RecordError``).

    Returns:
        The record.

    Raises:
        BadRecordError: If the text is not JSON or not such a record; the message names the file.
    """
    try:
        data = json.loads(text)
    except ValueError as error:
        raise BadRecordError(f"{path}: not JSON ({error})") from None
    try:
        return read(data)
    except RecordError as error:
        raise BadRecordError(f"{path}: {error}") from None


def read_record_dir(
    root: Path,
    read: Callable[[object], T],
    *,
    id_of: Callable[[T], str],
    kind: str,
) -> tuple[list[T], dict[Path, str]]:
    """Every ``<root>/*.json`` record, and each file that cannot be read, with the reason.

    Args:
        root: The directory (missing: nothing in it).
        read: Reads the parsed JSON into the record.
        id_of: The id a record is filed under (its file's stem).
        kind: What a record is (``"run"``, ``"sweep"``), for the reason of a misfiled one.

    Returns:
        The readable records, in file-name order, and the unreadable files with their reasons.
    """
    records: list[T] = []
    unreadable: dict[Path, str] = {}
    try:
        entries = sorted(root.glob("*.json"))
    except OSError:
        entries = []
    for path in entries:
        try:
            record = parse_record_file(path, path.read_text(encoding="utf-8"), read)
        except FileNotFoundError:
            continue  # removed since it was listed
        except (OSError, UnicodeDecodeError) as error:
            unreadable[path] = f"cannot be read: {error}"
            continue
        except BadRecordError as error:
            unreadable[path] = str(error).removeprefix(f"{path}: ")
            continue
        if id_of(record) != path.stem:
            unreadable[path] = f"holds {kind} {id_of(record)!r}, not {path.stem!r}"
            continue
        records.append(record)
    return records, unreadable
