"""The README shows every screenshot in ``screenshots/``, and the Devices and Metrics ones are of a
live run: GPU rows with their figures, the processes' line, a metric plotted against its steps.

(``scripts/screenshots.py`` makes them from the real app; this checks what it left.)
"""

from __future__ import annotations

import html
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _svg_text(name: str) -> str:
    """The text an SVG screenshot shows, its non-breaking spaces as spaces."""
    raw = (ROOT / "screenshots" / name).read_text(encoding="utf-8")
    return html.unescape(raw).replace("\xa0", " ")


def test_the_readme_shows_every_screenshot_and_each_exists() -> None:
    shown = re.findall(r"!\[[^\]]*\]\((screenshots/[^)]+\.svg)\)", (ROOT / "README.md").read_text())
    assert "screenshots/run-devices.svg" in shown
    assert "screenshots/run-metrics.svg" in shown
    assert sorted(shown) == sorted(
        f"screenshots/{path.name}" for path in (ROOT / "screenshots").glob("*.svg")
    )


def test_the_devices_and_metrics_screenshots_are_of_a_live_run() -> None:
    devices = _svg_text("run-devices.svg")
    assert "running" in devices
    assert "8x NVIDIA H100 80GB HBM3" in devices
    assert "sparklines: util" in devices
    assert re.search(r" 7 +\d+% +\d+\.\d/80G +\d+W +47C", devices)  # the last GPU's row
    assert re.search(r"processes: 1 · CPU", devices)
    metrics = _svg_text("run-metrics.svg")
    assert "running" in metrics
    assert re.search(r"loss · steps 1 to \d+", metrics)
    assert "ETA" in metrics


def test_the_main_screenshot_shows_a_running_runs_progress() -> None:
    main = _svg_text("main.svg")
    assert "Progress" in main
    assert "▶ running" in main
    assert re.search(r">\d+% ETA \d+s<", main)  # a cell of its own
