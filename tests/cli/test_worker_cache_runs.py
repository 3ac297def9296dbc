"""``x-tui run`` keeps the compiled worker in x-tui's state, and a damaged kept file never stops
a run (``x_tui.compute.worker_bundle.cached_worker_zipapp``; the cache itself in
``tests/compute/test_worker_cache.py``)."""

from __future__ import annotations

import os

from tests.cli.cli_support import Cli
from x_tui.compute.worker_bundle import worker_zipapp_bytes


def test_runs_share_the_kept_worker_and_a_damaged_one_is_built_again(cli: Cli) -> None:
    compiled = worker_zipapp_bytes(compiled=True)
    first = cli.submitted_id(cli("run", "hello").stdout)
    (kept,) = (cli.state / "x-tui" / "worker").glob("worker-*.pyz")
    assert kept.read_bytes()[32:] == compiled
    kept.write_bytes(os.urandom(256))  # damaged: its digest no longer matches

    result = cli("run", "hello")
    assert result.returncode == 0, result.stderr
    assert "hello from the first example" in result.stdout
    second = cli.submitted_id(result.stdout)
    assert kept.read_bytes()[32:] == compiled
    for run_id in (first, second):
        assert (cli.state / "compute" / "local" / run_id / "worker.pyz").read_bytes() == compiled
