"""The runs table's spans: a run's duration to the minute (two units), its age coarse (one)."""

from __future__ import annotations

import pytest

from x_tui.widgets.run_cells import format_age, format_span

DAY = 86400


@pytest.mark.parametrize(
    ("seconds", "span", "age"),
    [
        (-5, "0s", "0s"),  # a clock skew
        (0, "0s", "0s"),
        (59.9, "59s", "59s"),
        (60, "1m", "1m"),
        (3599, "59m", "59m"),
        (3600, "1h00m", "1h"),
        (3660, "1h01m", "1h"),
        (DAY - 1, "23h59m", "23h"),
        (DAY, "1d00h", "1d"),
        (DAY + 3600, "1d01h", "1d"),
        (99 * DAY + 7200, "99d02h", "99d"),
    ],
)
def test_a_span_shows_two_units_and_an_age_one(seconds: float, span: str, age: str) -> None:
    assert format_span(seconds) == span
    assert format_age(seconds) == age
    assert len(span) <= 6
    assert len(age) <= 4
