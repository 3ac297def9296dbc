"""Turning SkyPilot's log stream into the worker's lines, and rebuilding them from the outputs.

SkyPilot runs the job under Ray, which prefixes each line of a task with the process that wrote
it: ``(sx-<run>, pid=4242) [train] step 1`` on one node, ``(head, rank=0, pid=4242) ...`` or
``(worker1, rank=1, pid=77, ip=10.0.0.2) ...`` on several, ``(setup pid=4242) ...`` for the
setup. That prefix is removed, so the worker's own ``[<task>] `` lines read exactly as on every
other backend; SkyPilot's own lines ("Job started. Streaming logs...") are kept as they are.

Once a cluster is gone its log went with it; the lines are then rebuilt from each task's
``stdout.log`` and ``stderr.log`` in the outputs (each task's standard output, then its standard
error, in manifest order), which is what the worker echoed, but not interleaved as it ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from x_tui.compute.worker.errors import BadRecordError
from x_tui.compute.worker.manifest import MANIFEST_NAME, parse_manifest
from x_tui.compute.worker.records import RecordError

RAY_PREFIX: Final = re.compile(r"\((?:[^()\s]+,? )?(?:rank=\d+, )?pid=\d+(?:, ip=[^()\s]+)?\) ")
"""What Ray puts before each line a task writes."""


def strip_prefix(line: str) -> str:
    """``line`` without Ray's ``(<name>, pid=<n>) `` prefix, when it has one."""
    match = RAY_PREFIX.match(line)
    return line[match.end() :] if match else line


def lines_of(chunks: Iterable[str]) -> Iterator[str]:
    """Split a stream of text chunks into lines without their endings, Ray's prefix removed."""
    pending = ""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split("\n")
        for line in complete:
            yield strip_prefix(line.removesuffix("\r"))
    if pending:
        yield strip_prefix(pending.removesuffix("\r"))


def lines_from_outputs(read: Callable[[str], bytes | None], *, source: str) -> Iterator[str]:
    """The worker's lines rebuilt from a run's outputs, each prefixed with its task's name.

    Args:
        read: Reads one file of the outputs by relative path (``None`` when it is not there).
        source: Where the outputs are, for messages.

    Yields:
        ``[<task>] <line>`` for each line of each task's ``stdout.log`` then ``stderr.log``.

    Raises:
        BadRecordError: If the manifest cannot be read.
    """
    data = read(MANIFEST_NAME)
    if data is None:
        return
    try:
        manifest = parse_manifest(data, source=f"{source}/{MANIFEST_NAME}")
    except RecordError as error:
        raise BadRecordError(str(error)) from None
    for task in manifest.tasks:
        for stream in ("stdout.log", "stderr.log"):
            text = read(f"{task.name}/{stream}")
            if text:
                for line in text.decode("utf-8", "replace").splitlines():
                    yield f"[{task.name}] {line}"
