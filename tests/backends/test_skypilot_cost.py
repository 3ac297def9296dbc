"""Cost so far for a SkyPilot run: the hourly price its plan quoted from SkyPilot's catalog is kept
at submit (``<state>/x-tui/prices/<run_id>.json``, never in the handle), and the runs table,
the run header and ``status --json`` price the elapsed time with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.backends.fake_sky.catalogs import seed
from x_tui.app.run_watch import WatchPoller
from x_tui.app.service import Service
from x_tui.cli.metrics_verb import watch_json
from x_tui.compute.backend import RunState
from x_tui.compute.operations import backend_for, open_project, plan_run, submit_run
from x_tui.compute.price_quotes import plan_quote, quote_path, quoted_hourly_price, save_quote
from x_tui.compute.run_removal import plan_removal
from x_tui.compute.store import RunStore

from .fake_sky.harness import FakeSky, S3Server, make_locked_project, sky_pyproject

JOB = """
[tool.substrax.compute.jobs.priced]
timeout_seconds = 300
resources = { accelerator = "L4" }
commands = { wait = ["python", "-c", "import time; print('up', flush=True); time.sleep(120)"] }
"""


@pytest.mark.slow  # a fake SkyPilot cluster: real processes and a local S3 server
def test_a_skypilot_runs_cost_so_far_is_elapsed_time_at_the_catalog_price(
    fake_sky: FakeSky, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(fake_sky)  # gcp's g2-standard-8 has one L4 at $0.85 an hour
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SUBSTRAX_STATE_DIR", str(tmp_path / "state"))
    bucket = s3.make_bucket(f"cost-{tmp_path.name.lower().replace('_', '-')[-40:]}")
    root = make_locked_project(tmp_path / "project", {})
    (root / "pyproject.toml").write_text(
        sky_pyproject(fake_sky.tool.link, "bucket", {"outputs_bucket": bucket}, JOB)
    )
    store = RunStore()
    handle = submit_run(plan_run(open_project(root), "priced"), store=store)
    backend = backend_for(handle)
    try:
        quote = json.loads(quote_path(store, handle.run_id).read_text())
        assert quote["hourly_usd"] == 0.85
        assert "g2-standard-8" in quote["source"]
        assert "0.85" not in json.dumps(json.loads(store.path_of(handle.run_id).read_text()))
        an_hour_on = handle.submitted_at.timestamp() + 3600
        # The runs table's Cost column.
        watched = WatchPoller(Service(store=store)).poll([handle], now=an_hour_on)
        assert watched[handle.run_id].cost_usd == 0.85
        # status --json, while the run runs.
        shown = watch_json(handle, backend, RunState.RUNNING, now=an_hour_on + 1800)
        assert shown["cost_so_far"] == pytest.approx(1.275)
    finally:
        backend.cancel(handle)
    # Deleting the run removes its quote with it.
    assert quote_path(store, handle.run_id) in plan_removal(handle, backend, store).side_files


def test_only_a_plan_with_a_price_is_quoted_and_a_damaged_quote_reads_as_none(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "state" / "compute" / "runs")
    run_id = "job-20261202T010203Z-abc123"
    assert plan_quote(None) is None
    assert plan_quote({"cost": "no estimate: the catalog has no price for H100:8"}) is None
    assert plan_quote({"cost": {"hourly_cost_usd": float("nan")}}) is None
    assert plan_quote({"cost": {"hourly_cost_usd": True}}) is None
    quote = plan_quote({"cost": {"hourly_cost_usd": 2.5, "spot": True, "cloud": "aws"}})
    assert quote == {"hourly_usd": 2.5, "source": "the plan's catalog spot price (aws)"}
    assert quoted_hourly_price(store, run_id) is None
    save_quote(store, run_id, quote)
    assert quote_path(store, run_id) == tmp_path / "state" / "x-tui" / "prices" / f"{run_id}.json"
    assert quoted_hourly_price(store, run_id) == 2.5
    for damaged in (b"", b"{", b'{"hourly_usd": "2.5"}', b'{"hourly_usd": -1}', b"[1]" * 5000):
        quote_path(store, run_id).write_bytes(damaged)
        assert quoted_hourly_price(store, run_id) is None
    quote_path(store, run_id).unlink()
    quote_path(store, run_id).mkdir()  # not a regular file
    assert quoted_hourly_price(store, run_id) is None
    assert quoted_hourly_price(store, "../../etc/passwd") is None
