"""Coverage of a window: the share of its seconds that hold a sample (issue 21 item 7)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pushgrid.metrics.window_spec import DAY, HOUR, MINUTE, WINDOWS, Window, coverage, span

NOW = 1_700_000_000  # 22:13:20 UTC


def test_a_second_window_spans_its_length() -> None:
    assert span("1m", NOW) == MINUTE
    assert span("15m", NOW) == 15 * MINUTE


def test_a_coarse_window_spans_its_whole_buckets_and_the_partial_current_one() -> None:
    # 1h at 22:13:20: 59 whole minutes plus the 21 seconds 22:13:00..22:13:20
    assert span("1h", NOW) == 59 * MINUTE + 21
    # 1d: 23 whole hours plus 13 min 21 s of the current hour
    assert span("1d", NOW) == 23 * HOUR + 13 * MINUTE + 21


def test_four_minutes_of_data_cover_little_of_a_day() -> None:
    """The issue's finding: every window from 5m to 15mo showed 4 minutes as if whole."""
    assert coverage("5m", 240, NOW) == 0.8
    assert coverage("1d", 240, NOW) == 240 / span("1d", NOW)
    assert coverage("1d", 240, NOW) < 0.003
    assert coverage("1m", 60, NOW) == 1.0
    assert coverage("1m", 0, NOW) == 0.0


@given(
    st.sampled_from(WINDOWS),
    st.integers(min_value=0, max_value=50 * DAY * 30),
    st.integers(min_value=DAY * 365, max_value=DAY * 365 * 80),
)
def test_coverage_is_a_share(window: Window, count: int, now: int) -> None:
    assert 0.0 <= coverage(window.name, count, now) <= 1.0
    assert window.length - window.resolution + 1 <= span(window.name, now) <= window.length
