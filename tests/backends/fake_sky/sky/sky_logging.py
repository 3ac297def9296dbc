"""``sky.sky_logging.silent``: nothing to silence in the fake."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def silent() -> Iterator[None]:
    yield
