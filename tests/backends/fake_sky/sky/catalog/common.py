"""``get_catalog_path``: the catalogs are under ``$FAKE_SKY_ROOT/catalogs/v8``."""

from __future__ import annotations

import os


def get_catalog_path(filename: str) -> str:
    return os.path.join(os.environ.get("FAKE_SKY_ROOT", "~/.sky"), "catalogs", "v8", filename)
