"""Moments: exact merging (Chan et al.) against numpy on the raw samples, even near 1e10."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from pushgrid.metrics.stats import Moments

MEAN_REL = 1e-12
STD_REL = 1e-9


def assert_matches(m: Moments, xs: np.ndarray) -> None:
    """count and max exact, mean vs fsum within 1e-12 relative, population stddev within 1e-9."""
    assert m.count == len(xs)
    assert m.max == float(np.max(xs))
    exact_mean = math.fsum(xs.tolist()) / len(xs)
    assert abs(m.mean - exact_mean) <= MEAN_REL * abs(exact_mean)
    assert abs(m.mean - float(np.mean(xs))) <= MEAN_REL * abs(exact_mean)
    ref_std = float(np.std(xs))  # ddof=0
    assert abs(m.stddev - ref_std) <= STD_REL * ref_std
    assert abs(m.variance - float(np.var(xs))) <= 2 * STD_REL * float(np.var(xs))


def random_splits(xs: np.ndarray, rng: random.Random, parts: int) -> list[np.ndarray]:
    cuts = sorted(rng.sample(range(1, len(xs)), parts - 1))
    return [xs[a:b] for a, b in zip([0, *cuts], [*cuts, len(xs)], strict=True)]


def fold_random_tree(ms: list[Moments], rng: random.Random) -> Moments:
    """Merge in a random pairwise order (any order must give the same result)."""
    ms = list(ms)
    while len(ms) > 1:
        i = rng.randrange(len(ms) - 1)
        ms[i : i + 2] = [Moments.merge(ms[i], ms[i + 1])]
    return ms[0]


def naive_variance(xs: list[float]) -> float:
    n = len(xs)
    return (sum(x * x for x in xs) - sum(xs) ** 2 / n) / n


def datasets() -> list[tuple[str, np.ndarray]]:
    gen = np.random.default_rng(42)
    return [
        ("uniform", gen.uniform(0, 1000, 2000)),
        ("rates", gen.poisson(300, 2000).astype(float)),
        ("1e10+small-ints", 1e10 + gen.integers(0, 11, 2000).astype(float)),
        ("1e10+tiny-normal", 1e10 + gen.normal(0, 0.5, 2000)),
        ("mixed-scale", np.concatenate([gen.uniform(0, 1, 1000), 1e9 + gen.uniform(0, 1, 1000)])),
        ("bytes", gen.lognormal(15, 2, 2000)),
    ]


def test_empty_and_single() -> None:
    e = Moments.empty()
    assert (e.count, e.mean, e.m2, e.max) == (0, 0.0, 0.0, -math.inf)
    assert e.variance == 0.0
    assert e.stddev == 0.0
    one = Moments.of(7.5)
    assert (one.count, one.mean, one.m2, one.max, one.stddev) == (1, 7.5, 0.0, 7.5, 0.0)
    assert Moments.merge(e, one) is one
    assert Moments.merge(one, e) is one
    assert Moments.merge_all([]) == e
    assert Moments.merge_all([e, one, e]) is one
    assert Moments.of_values([]) == e
    assert Moments.of_values([3.0]) == Moments.of(3.0)
    assert isinstance(Moments.merge(one, one).count, int)


def test_immutable() -> None:
    m = Moments.of(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.count = 2  # type: ignore[misc]


def test_population_stddev() -> None:
    xs = np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    m = Moments.of_values(xs.tolist())
    assert m.mean == 5.0
    assert m.variance == 4.0  # ddof=0; the sample variance would be 32 / 7
    assert m.stddev == 2.0 == float(np.std(xs))
    assert m.average == m.mean


def test_naive_sum_of_squares_fails_where_chan_does_not() -> None:
    xs = [1e10 + d for d in (4.0, 7.0, 13.0, 16.0)]
    naive = naive_variance(xs)
    assert abs(naive - 22.5) > 1.0  # the naive formula is useless here...
    m = fold_random_tree([Moments.of(x) for x in xs], random.Random(0))
    assert m.variance == 22.5  # ...the Chan merge is exact
    assert m.mean == 1e10 + 10.0
    big = 1e10 + np.random.default_rng(3).integers(0, 11, 5000).astype(float)
    ref = float(np.var(big))
    assert abs(naive_variance(big.tolist()) - ref) > 1e-3 * ref
    assert abs(Moments.of_values(big.tolist()).variance - ref) <= 1e-12 * ref


@pytest.mark.parametrize(("name", "xs"), datasets(), ids=[n for n, _ in datasets()])
def test_merge_random_splits_matches_numpy(name: str, xs: np.ndarray) -> None:
    rng = random.Random(name)
    assert_matches(Moments.of_values(xs.tolist()), xs)
    for parts in (2, 3, 10, 57, 400, len(xs)):
        chunks = random_splits(xs, rng, parts)
        ms = [Moments.of_values(c.tolist()) for c in chunks]
        assert_matches(fold_random_tree(ms, rng), xs)
        assert_matches(Moments.merge_all(ms), xs)
        # left fold = Welford-style streaming update, one chunk at a time
        acc = Moments.empty()
        for m in ms:
            acc = Moments.merge(acc, m)
        assert_matches(acc, xs)
        # two-level roll-up, as the rolling windows do
        groups = [Moments.merge_all(ms[i : i + 7]) for i in range(0, len(ms), 7)]
        assert_matches(Moments.merge_all(groups), xs)


def test_streaming_one_sample_at_a_time_near_1e10() -> None:
    xs = 1e10 + np.random.default_rng(5).integers(0, 11, 20000).astype(float)
    acc = Moments.empty()
    for x in xs.tolist():
        acc = Moments.merge(acc, Moments.of(x))
    assert_matches(acc, xs)


def test_hierarchical_rollup_near_1e10_dense_hours() -> None:
    """Seconds -> minutes -> hours -> window, the case a plain float mean gets wrong (~5e-9)."""
    xs = 1e10 + np.random.default_rng(6).integers(0, 11, 5 * 3600).astype(float)
    minutes = [Moments.of_values(xs[i : i + 60].tolist()) for i in range(0, len(xs), 60)]
    hours = [Moments.merge_all(minutes[i : i + 60]) for i in range(0, len(minutes), 60)]
    assert_matches(Moments.merge_all(hours), xs)
    assert_matches(Moments.merge_all(minutes), xs)
    assert_matches(Moments.merge(Moments.merge_all(hours[:4]), hours[4]), xs)


def test_merge_is_order_independent() -> None:
    xs = np.random.default_rng(8).uniform(-50, 50, 300)
    ms = [Moments.of_values(c.tolist()) for c in np.array_split(xs, 9)]
    a = Moments.merge_all(ms)
    b = Moments.merge_all(reversed(ms))
    assert a.count == b.count
    assert a.max == b.max
    assert a.mean == pytest.approx(b.mean, rel=1e-14, abs=1e-14)
    assert a.m2 == pytest.approx(b.m2, rel=1e-13)


def test_constant_values_have_zero_spread() -> None:
    for v in (0.0, 3.0, 1e10, 123456.789):
        ms = [Moments.of_values([v] * k) for k in (1, 5, 60)]
        m = Moments.merge_all(ms)
        assert (m.count, m.mean, m.max, m.m2, m.stddev) == (66, v, v, 0.0, 0.0)
