"""Which clusters exist, read from SkyPilot's own cluster table where its API server is local.

A ``status`` request costs SkyPilot's API server a fifth of a second of CPU (its executor's
process, log file and request records) for what its cluster table says; where that table is this
machine's (the API server ``sky`` starts by itself), the bridge reads it in its own interpreter.
A deployed API server's table is not here: then the bridge still asks with ``status``.
"""

from __future__ import annotations

import json

from x_tui.backends.skypilot.bridge import Bridge, close_bridges

from .fake_sky.harness import FakeSky


def make_cluster(fake: FakeSky, name: str, status: str) -> None:
    directory = fake.root / "clusters" / name
    directory.mkdir(parents=True)
    (directory / "cluster.json").write_text(json.dumps({"name": name, "status": status}))


def table_reads(fake: FakeSky) -> int:
    path = fake.root / "cluster-table-reads"
    return len(path.read_text().splitlines()) if path.exists() else 0


RUNS = {
    "runs": [
        {"cluster": "sx-up", "request_id": None, "launched": False},
        {"cluster": "sx-init", "request_id": None, "launched": False},
        {"cluster": "sx-gone", "request_id": None, "launched": False},
    ]
}


def poll_three_times(fake: FakeSky) -> list[object]:
    make_cluster(fake, "sx-up", "UP")
    make_cluster(fake, "sx-init", "INIT")
    bridge = Bridge(sky=str(fake.tool.link), sky_python=None)
    try:
        return [bridge.call("poll", RUNS, what="polling") for _ in range(3)]
    finally:
        close_bridges()


def exists_of(answer: object) -> dict[str, bool]:
    assert isinstance(answer, dict)
    return {cluster: entry["launch"]["cluster_exists"] for cluster, entry in answer.items()}


def test_a_local_api_servers_cluster_table_answers_without_a_status_request(
    fake_sky: FakeSky,
) -> None:
    answers = poll_three_times(fake_sky)

    assert [exists_of(answer) for answer in answers] == [
        {"sx-up": True, "sx-init": True, "sx-gone": False}
    ] * 3
    assert fake_sky.requests("status") == []
    assert table_reads(fake_sky) == 3


def test_a_remote_api_server_is_asked_with_one_status_request_per_poll(
    fake_sky: FakeSky,
) -> None:
    (fake_sky.root / "remote-api-server").touch()

    answers = poll_three_times(fake_sky)

    assert [exists_of(answer) for answer in answers] == [
        {"sx-up": True, "sx-init": True, "sx-gone": False}
    ] * 3
    assert len(fake_sky.requests("status")) == 3
    assert table_reads(fake_sky) == 0
