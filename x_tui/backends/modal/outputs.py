"""A run's files on the outputs Volume: read one (peek, the manifest), or copy them all (fetch).

A run's files are ``<run_id>/...`` on the outputs Volume. Entry paths come from the provider and
are checked before anything is written: an entry that leads outside ``<run_id>/`` refuses the
whole fetch, and only regular files are copied (a symbolic link is never followed or recreated).
A fetch is written to a partial directory beside its destination and renamed into place, so
``DEST/<run_id>`` is either the previous copy or the whole new one.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from x_tui.backends.modal.sdk import unanswered
from x_tui.compute.deadline import iterate_with_deadline
from x_tui.compute.outputs import READ_LIMIT, OutputTooLargeError
from x_tui.compute.worker.errors import ProviderError


def relative_path(path: str) -> PurePosixPath:
    """A file's path relative to a run's directory, refusing one that could lead outside it.

    Raises:
        ValueError: If ``path`` is empty, absolute, or has a ``.``, ``..`` or empty component.
    """
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{path!r} is not a path inside a run's outputs")
    return PurePosixPath(path)


def inside_run(entry_path: str, run_id: str, volume: str) -> PurePosixPath:
    """An entry's path relative to ``<run_id>/``.

    Raises:
        ProviderError: If the entry does not lie inside ``<run_id>/``, naming it.
    """
    trimmed = entry_path.lstrip("/")
    head, _, rest = trimmed.partition("/")
    try:
        if head != run_id:
            raise ValueError(trimmed)
        return relative_path(rest)
    except ValueError:
        raise ProviderError(
            f"the Modal Volume {volume!r} lists {entry_path!r} for run {run_id}, a path outside"
            f" {run_id}/; nothing was fetched"
        ) from None


def _missing(error: BaseException) -> bool:
    exception = importlib.import_module("modal.exception")
    return isinstance(error, (FileNotFoundError, exception.NotFoundError))


def _chunks(handle: Any, path: str, *, seconds: float) -> Iterator[bytes]:
    what = f"reading {path}"
    return iterate_with_deadline(
        lambda: handle.read_file(path),
        seconds=seconds,
        late=lambda: unanswered(seconds, what),
        name=f"x-tui modal: {what}",
    )


def read_file(handle: Any, path: str, *, seconds: float, limit: int = READ_LIMIT) -> bytes | None:
    """One file of a Volume, or ``None`` when it does not exist.

    Args:
        handle: The ``modal.Volume``.
        path: The file's path on the Volume.
        seconds: Each chunk's deadline.
        limit: The most bytes kept, as every reader of outputs keeps at most
            (:data:`~x_tui.compute.outputs.READ_LIMIT`).

    Raises:
        ProviderError: If a chunk did not come in time.
        OutputTooLargeError: If the file holds more than ``limit`` bytes.
    """
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in _chunks(handle, path, seconds=seconds):
            size += len(chunk)
            if size > limit:
                raise OutputTooLargeError(
                    f"{path!r} on the Volume is larger than the {limit} bytes read of it;"
                    " fetch the run to read it whole"
                )
            chunks.append(bytes(chunk))
    except OutputTooLargeError:
        raise
    except Exception as error:
        if _missing(error):
            return None
        raise
    return b"".join(chunks)


def download_run(
    handle: Any, *, volume: str, run_id: str, destination: Path, seconds: float
) -> Path:
    """Copy ``<run_id>/`` of a Volume to ``destination / run_id``.

    Args:
        handle: The ``modal.Volume``.
        volume: Its name, for messages.
        run_id: The run.
        destination: The directory to copy into (created if missing).
        seconds: Each listed entry's and each chunk's deadline.

    Returns:
        ``destination / run_id``.

    Raises:
        ProviderError: If the Volume has no files of the run, an entry leads outside it, or a
            reply did not come in time.
    """
    types = importlib.import_module("modal.types")
    try:
        entries = list(
            iterate_with_deadline(
                lambda: handle.iterdir(run_id, recursive=True),
                seconds=seconds,
                late=lambda: unanswered(seconds, f"listing {run_id} on the Volume {volume}"),
                name="x-tui modal: listing a run on the outputs Volume",
            )
        )
    except Exception as error:
        if _missing(error):
            raise ProviderError(
                f"the Modal Volume {volume!r} holds no files of run {run_id} (yet)"
            ) from None
        raise
    files = [
        (entry.path, inside_run(entry.path, run_id, volume))
        for entry in entries
        if entry.type == types.FileEntryType.FILE
    ]
    destination.mkdir(parents=True, exist_ok=True)
    partial = destination / f".{run_id}.partial-{secrets.token_hex(4)}"
    partial.mkdir()
    try:
        for remote, relative in files:
            target = partial.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                for chunk in _chunks(handle, remote, seconds=seconds):
                    if bytes(chunk).count(0) == len(chunk):
                        out.seek(len(chunk), os.SEEK_CUR)  # zeros stay a hole
                    else:
                        out.write(chunk)
                out.truncate(out.tell())
        final = destination / run_id
        if final.is_symlink() or final.is_file():
            final.unlink()
        elif final.exists():
            shutil.rmtree(final)
        os.replace(partial, final)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(partial)
        raise
    return final
