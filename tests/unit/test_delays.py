"""metrics/delays.py: bucket counting and the quantile estimate, against values computed here."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.metrics.delays import DELAY_BUCKETS, DelayHistogram


def test_a_value_on_a_bound_counts_in_that_bucket() -> None:
    histogram = DelayHistogram((0.001, 0.01))
    for seconds in (0.001, 0.0011, 0.01, 0.5):
        histogram.observe(seconds)
    reading = histogram.snapshot()
    assert reading.cumulative == (1, 3, 4)
    assert reading.count == 4
    assert reading.sum == pytest.approx(0.5121)


def test_since_counts_only_what_came_after() -> None:
    histogram = DelayHistogram()
    histogram.observe(0.004)
    before = histogram.snapshot()
    histogram.observe(0.02)
    histogram.observe(0.02)
    window = histogram.snapshot().since(before)
    assert window.count == 2
    assert window.quantile(0.5) == 0.02
    assert window.sum == pytest.approx(0.04)


def test_quantile_of_nothing_is_none_and_past_the_last_bound_is_inf() -> None:
    histogram = DelayHistogram((0.001,))
    assert histogram.snapshot().quantile(0.99) is None
    histogram.observe(3.0)
    assert histogram.snapshot().quantile(0.99) == float("inf")
    with pytest.raises(ValueError, match="quantile must be within"):
        histogram.snapshot().quantile(1.5)


@pytest.mark.parametrize("bounds", [(), (0.0, 1.0), (0.2, 0.1), (0.1, 0.1)])
def test_bad_bounds_are_refused(bounds: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="bucket bounds"):
        DelayHistogram(bounds)


@settings(deadline=None)  # a pure check: a loaded CI machine must not fail it on time
@given(st.lists(st.floats(min_value=0.0, max_value=2.0), min_size=1, max_size=300))
def test_quantile_is_the_bound_of_the_bucket_holding_it(values: list[float]) -> None:
    histogram = DelayHistogram()
    for seconds in values:
        histogram.observe(seconds)
    reading = histogram.snapshot()
    ordered = sorted(values)
    for q in (0.5, 0.9, 0.99, 1.0):
        # the true quantile (nearest rank), then the first bound at or above it
        true_value = ordered[max(1, math.ceil(q * len(ordered))) - 1]
        expected = next((b for b in DELAY_BUCKETS if true_value <= b), float("inf"))
        assert reading.quantile(q) == expected


def test_observe_matches_a_plain_count() -> None:
    rng = random.Random(7)
    values = [rng.expovariate(200.0) for _ in range(5000)]
    histogram = DelayHistogram()
    for seconds in values:
        histogram.observe(seconds)
    reading = histogram.snapshot()
    for bound, seen in zip(DELAY_BUCKETS, reading.cumulative, strict=False):
        assert seen == sum(1 for v in values if v <= bound)
    assert reading.cumulative[-1] == len(values)
