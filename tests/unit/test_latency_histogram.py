"""The latency histogram's buckets and percentiles (pushgrid/protocol/latency.py, ADR 048),
checked against numpy's nearest-rank percentile of the raw samples."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.protocol.latency import (
    BUCKET_COUNT,
    PER_DECADE,
    UPPER,
    LatencyHistogram,
    bucket_lower,
    bucket_of,
    bucket_upper,
)

samples = st.lists(
    st.floats(min_value=-5e6, max_value=5e8, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=400,
)
quantiles = st.sampled_from([0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0])


def test_bounds_are_integers_ten_per_decade_and_far_from_rounding_ties() -> None:
    assert BUCKET_COUNT == 72
    assert UPPER[0] == 10
    assert UPPER[PER_DECADE] == 100
    assert UPPER[-1] == 100_000_000
    assert list(UPPER) == sorted(set(UPPER))
    for i in range(len(UPPER)):
        exact = 10 ** (1 + i / PER_DECADE)
        # the browser computes Math.round(Math.pow(10, 1 + i / 10)): an ulp of difference in
        # pow cannot change the rounding when the value is this far from .5
        assert abs(exact - math.floor(exact) - 0.5) > 0.01


@given(samples)
def test_every_sample_lies_within_its_bucket(values: list[float]) -> None:
    for value in values:
        index = bucket_of(value)
        assert bucket_lower(index) * 1e6 < value or index == 0
        assert value <= bucket_upper(index) * 1e6


@settings(max_examples=200)
@given(samples, quantiles)
def test_quantile_is_the_bucket_of_numpys_nearest_rank_percentile(
    values: list[float], q: float
) -> None:
    histogram = LatencyHistogram()
    for value in values:
        histogram.observe(value)
    exact = float(np.quantile(np.array(values), q, method="inverted_cdf"))
    assert histogram.quantile(q) == bucket_upper(bucket_of(exact))


@given(samples, samples, quantiles)
def test_merging_histograms_is_the_histogram_of_all_samples(
    a: list[float], b: list[float], q: float
) -> None:
    left, right, whole = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
    for value in a:
        left.observe(value)
        whole.observe(value)
    for value in b:
        right.observe(value)
        whole.observe(value)
    merged = LatencyHistogram()
    merged.add_pairs(left.pairs())
    merged.merge(right)
    assert merged.counts == whole.counts
    assert merged.count == len(a) + len(b)
    assert merged.quantile(q) == whole.quantile(q)


def test_an_empty_histogram_has_no_quantile_and_extremes_land_in_the_end_buckets() -> None:
    histogram = LatencyHistogram()
    assert histogram.quantile(0.5) is None
    histogram.observe(-3_000_000)  # a clock error: the first bucket
    histogram.observe(1e12)  # above 100 s: the last, unbounded bucket
    assert histogram.pairs() == [(0, 1), (BUCKET_COUNT - 1, 1)]
    assert histogram.quantile(1.0) == math.inf
