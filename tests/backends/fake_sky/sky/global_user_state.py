"""The fake ``sky.global_user_state``: SkyPilot's cluster table, read without its API server.

Each read is counted in ``cluster-table-reads`` under ``$FAKE_SKY_ROOT``, so a test can tell a
read of the table from a ``status`` request.
"""

from __future__ import annotations

from typing import Any

from sky._fake import state
from sky.jobs_status import ClusterStatus


def get_clusters(
    *,
    exclude_managed_clusters: bool = False,
    workspaces_filter: Any = None,
    user_hashes_filter: Any = None,
    cluster_names: list[str] | None = None,
    summary_response: bool = False,
) -> list[dict[str, Any]]:
    """The clusters' records (those named, or all), as SkyPilot 0.14.1 keeps them."""
    with (state.root() / "cluster-table-reads").open("a", encoding="utf-8") as reads:
        reads.write("read\n")
    found = []
    for path in sorted((state.root() / "clusters").glob("*/cluster.json")):
        cluster = state.read_json(path) or {}
        if cluster_names is not None and cluster.get("name") not in cluster_names:
            continue
        found.append(
            {"name": cluster.get("name"), "status": ClusterStatus(cluster.get("status", "INIT"))}
        )
    return found
