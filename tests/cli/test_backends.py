"""``x-tui backends``, and what ``plan`` says before submitting: offers, refusals, cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from x_tui.backends.local.machine import offers as local_offers
from x_tui.compute.prices import MODAL, MODAL_DATE

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.cli_support import Cli

MODAL_TABLE = """
[tool.substrax.compute.backends.modal]
outputs_volume = "x-tui-test-runs"

[tool.substrax.compute.jobs.train]
timeout_seconds = "30m"
resources = { accelerator = ["H100!:8", "A100-80GB:8"], cpu = 8, memory = "32Gi" }
commands = { train = ["python", "-c", "pass"] }
"""

H100_HOUR = 0.001097 * 3600


def test_backends_lists_every_registered_backend_with_what_it_declares(cli: Cli) -> None:
    result = cli("backends")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    local = (
        "local  accelerators, extensions, launch, local-files, log-pieces, peek, plan, request,"
        " statuses"
    )
    assert local in lines
    assert any(line.startswith("modal  ") for line in lines)


def test_modal_s_accelerators_come_from_the_dated_table_with_prices(cli: Cli) -> None:
    result = cli("backends", "--accelerators", "--backend", "modal", "--json")

    assert result.returncode == 0, result.stderr
    (modal,) = json.loads(result.stdout)["backends"]
    offers = modal["offers"]
    assert offers["price_date"] == MODAL_DATE
    assert offers["source"] == f"https://modal.com/pricing, as of {MODAL_DATE}"
    by_kind = {offer["kind"]: offer for offer in offers["accelerators"]}
    assert by_kind["H100"]["hourly_usd"] == pytest.approx(H100_HOUR)
    assert by_kind["H100"]["counts_per_node"] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert set(by_kind) == {offer.kind for offer in MODAL.accelerators}

    text = cli("backends", "--accelerators", "--backend", "modal").stdout.splitlines()
    assert f"  offers from https://modal.com/pricing, as of {MODAL_DATE}" in text
    assert any(line.split()[:3] == ["H100", "1-8", "$3.9492"] for line in text)


def test_local_accelerators_are_this_machine_s_gpus(cli: Cli) -> None:
    result = cli("backends", "--accelerators", "--backend", "local", "--json")

    (local,) = json.loads(result.stdout)["backends"]
    assert local["offers"]["accelerators"] == [offer.describe() for offer in local_offers()]
    assert local["offers"]["problem"] is None


def test_an_unknown_backend_is_refused_naming_the_registered_ones(cli: Cli) -> None:
    result = cli("backends", "--backend", "nosuch")
    assert result.returncode == 2
    assert result.stderr.startswith("x-tui: no compute backend named 'nosuch'; registered: ")
    assert "local" in result.stderr


def test_plan_on_modal_shows_the_provider_request_and_the_most_the_run_can_cost(
    cli: Cli,
) -> None:
    cli.write_pyproject(jobs=MODAL_TABLE, top='backend = "local"')

    result = cli("plan", "train", "--backend", "modal", "--json")

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["request"]["accelerator_text"] == "H100!:8,A100-80GB:8"
    assert document["provider_request"]["function"]["gpu"] is not None
    estimate = document["estimate"]
    cpu = 8 * MODAL.cpu_core_hour_usd  # type: ignore[operator]
    memory = 32 * MODAL.memory_gib_hour_usd  # type: ignore[operator]
    assert estimate["max_usd"] == pytest.approx((H100_HOUR * 8 + cpu + memory) * 0.5, abs=1e-3)
    assert estimate["timeout_hours"] == 0.5
    assert estimate["breakdown"][0].startswith("H100 x 8 at $3.9492/h for 0.5 h")
    assert estimate["source"] == f"https://modal.com/pricing, as of {MODAL_DATE}"

    text = cli("plan", "train", "--backend", "modal").stdout.splitlines()
    assert any(line.startswith("cost         at most $") for line in text)
    assert "accelerator  H100!:8,A100-80GB:8" in text


@pytest.mark.parametrize(
    ("accelerator", "expected"),
    [
        ("TPU-v4", "accelerator 'TPU-v4': modal does not offer TPU-v4"),
        ("H20", "did you mean 'H200'?"),
        ("A10G:8", "modal offers A10G in counts of 1-4 per node, not 8"),
    ],
)
def test_an_accelerator_modal_does_not_offer_is_refused_before_anything_is_submitted(
    cli: Cli, accelerator: str, expected: str
) -> None:
    cli.write_pyproject(jobs=MODAL_TABLE, top='backend = "local"')

    planned = cli("plan", "train", "--backend", "modal", "--accelerator", accelerator)
    submitted = cli("run", "train", "--backend", "modal", "--accelerator", accelerator)

    for result in (planned, submitted):
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert expected in line
    assert not cli.state.exists()


def test_the_local_plan_says_what_the_run_gets_here_and_that_no_one_bills_it(cli: Cli) -> None:
    result = cli("plan", "failing", "--backend", "local", "--accelerator", "H100:8", "--json")

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    request = document["provider_request"]
    assert request["requested"] == "H100:8"
    assert request["runs_on"].startswith("this machine")
    assert document["estimate"]["max_usd"] is None
    assert "no provider bills" in document["estimate"]["unknown"]


def test_the_backends_verb_imports_neither_textual_nor_rich(cli: Cli) -> None:
    probe = (
        "import sys, json\n"
        "from x_tui.cli import main\n"
        "code = main(['backends', '--accelerators'])\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]\n"
        "print(json.dumps(loaded))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=cli.project,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_the_local_backend_never_refuses_an_accelerator_it_does_not_have(cli: Cli) -> None:
    result = cli("plan", "failing", "--backend", "local", "--accelerator", "TPU-v4", "--json")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["provider_request"]["requested"] == "TPU-v4"


_PLAIN_BACKEND = """
from x_tui.backends.local.backend import LocalBackend


class PlainBackend(LocalBackend):
    \"\"\"A third-party backend that declares no optional ability.\"\"\"

    name = "plain"
    capabilities = frozenset()
"""


def _register_plain_backend(cli: Cli, tmp_path: Path) -> None:
    """Install a third-party backend the way a distribution does: an entry point."""
    site = tmp_path / "site"
    dist = site / "plain_backend-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plain-backend\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[x_tui.backends]\nplain = plain_backend:PlainBackend\n")
    (site / "plain_backend.py").write_text(_PLAIN_BACKEND)
    cli.env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(site), cli.env.get("PYTHONPATH", "")])
    )


def test_a_backend_without_the_extensions_capability_is_never_given_a_job_that_uses_them(
    cli: Cli, tmp_path: Path
) -> None:
    _register_plain_backend(cli, tmp_path)
    jobs = (
        "[tool.substrax.compute.jobs.train]\ntimeout_seconds = 60\n"
        'commands = { train = ["python", "-c", "pass"] }\n'
        'retries = 1\ndependencies = { apt = ["ffmpeg"] }\n'
    )
    cli.write_pyproject(jobs=jobs, top='backend = "local"')

    # The entry point is on PYTHONPATH, which only a new interpreter reads.
    result = cli.process("plan", "train", "--backend", "plain")

    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"x-tui: {cli.project / 'pyproject.toml'}: [tool.substrax.compute.jobs")
    assert "train] dependencies, retries: the plain backend cannot give x-tui's job extensions" in (
        line
    )
    # The local backend declares it: the same job plans there.
    assert cli("plan", "train", "--backend", "local").returncode == 0
