"""The window definition (``metrics.window_spec``) and RollingWindows / IndicatorSet against a
brute-force numpy computation on the raw samples.

The reference applies the window definition of ``metrics.window_spec`` literally: at ``now``, the
window of length W and resolution r covers the samples with
``(now // r - (W // r - 1)) * r <= ts <= now``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.metrics.rolling_windows import IndicatorSet, RollingWindows
from pushgrid.metrics.stats import Moments
from pushgrid.metrics.window_spec import (
    LEVELS,
    MAX_BUCKETS,
    WINDOW_NAMES,
    WINDOWS,
    level_of,
    pieces,
    whole_pieces,
    window_start,
    windows_of,
)

MIN, HOUR, DAY = 60, 3600, 86400
MONTH = 30 * DAY
# Written out again (not imported) so that the test pins the documented definition.
SPEC: dict[str, tuple[int, int]] = {  # name -> (length W, resolution r), seconds
    "1m": (MIN, 1),
    "5m": (5 * MIN, 1),
    "15m": (15 * MIN, 1),
    "1h": (HOUR, MIN),
    "5h": (5 * HOUR, MIN),
    "15h": (15 * HOUR, MIN),
    "1d": (DAY, HOUR),
    "5d": (5 * DAY, HOUR),
    "15d": (15 * DAY, HOUR),
    "1mo": (MONTH, DAY),
    "5mo": (5 * MONTH, DAY),
    "15mo": (15 * MONTH, DAY),
}
T0 = 1_700_000_000 + 12_345  # not aligned to any bucket
MEAN_REL = 1e-12
STD_REL = 1e-9


def ref_slice(ts: np.ndarray, vals: np.ndarray, now: int, name: str) -> np.ndarray:
    length, res = SPEC[name]
    lo = (now // res - (length // res - 1)) * res
    i = int(np.searchsorted(ts, lo, side="left"))
    j = int(np.searchsorted(ts, now, side="right"))
    return vals[i:j]


def assert_window(m: Moments, xs: np.ndarray, where: str) -> None:
    assert m.count == len(xs), where
    if len(xs) == 0:
        assert m == Moments.empty(), where
        return
    assert m.max == float(np.max(xs)), where
    ref_mean = float(np.mean(xs))  # pairwise summation; fsum-exact checks are in test_stats
    assert abs(m.mean - ref_mean) <= MEAN_REL * abs(ref_mean), (where, m.mean, ref_mean)
    ref_std = float(np.std(xs))  # population (ddof=0)
    assert abs(m.stddev - ref_std) <= STD_REL * ref_std, (where, m.stddev, ref_std)


def edge_queries(sample_ts: np.ndarray, rng: np.random.Generator, picks: int) -> set[int]:
    """``now`` values that put a sample exactly in the oldest bucket of a window, or just out."""
    out: set[int] = set()
    for s in rng.choice(sample_ts, size=picks, replace=False).tolist():
        for length, res in SPEC.values():
            k = length // res
            oldest = (s // res + k - 1) * res  # s is in the oldest bucket for now in [.., +res)
            out.update({oldest, oldest + res - 1, oldest + res})  # first, last in; first out
    return out


def boundary_queries(start: int, end: int, rng: np.random.Generator, n: int) -> set[int]:
    out: set[int] = set()
    for res in (MIN, HOUR, DAY):
        for b in rng.integers(start // res + 1, end // res, size=n).tolist():
            out.update({b * res - 1, b * res, b * res + 1})
    return out


def run_and_compare(ts: np.ndarray, vals: np.ndarray, queries: set[int]) -> int:
    """Feed the samples in order, evaluating every query as soon as its time is reached."""
    rw = RollingWindows()
    checked = 0
    i = 0
    for now in sorted(queries):
        while i < len(ts) and ts[i] <= now:
            rw.add(int(ts[i]), float(vals[i]))
            i += 1
        if i == 0:
            continue
        got = rw.stats(now)
        assert list(got) == list(WINDOW_NAMES)
        for name in WINDOW_NAMES:
            assert_window(got[name], ref_slice(ts, vals, now, name), f"{name} at now={now}")
        checked += 1
    return checked


def sparse_series(rng: np.random.Generator, days: int) -> np.ndarray:
    """Sample times over ``days`` days: sparse background, dense bursts, minute/hour stretches."""
    parts: list[np.ndarray] = []
    span = days * DAY
    # background: about every 3 h with jitter, with a 6-day outage
    bg = np.arange(T0, T0 + span, 3 * HOUR)
    bg = bg + rng.integers(0, HOUR, size=len(bg))
    parts.append(bg[(bg < T0 + 100 * DAY) | (bg > T0 + 106 * DAY)])
    # dense bursts of consecutive seconds, ~10 % of seconds missing
    for start in rng.integers(T0, T0 + span - 2 * HOUR, size=25).tolist():
        burst = np.arange(start, start + int(rng.integers(100, 1500)))
        parts.append(burst[rng.random(len(burst)) > 0.1])
    # one sample per minute for 16 hours, and one per hour for 16 days, each twice
    for _ in range(2):
        s = int(rng.integers(T0, T0 + span - 17 * HOUR))
        parts.append(s + np.arange(0, 16 * HOUR, MIN) + rng.integers(0, MIN, size=16 * MIN))
        s = int(rng.integers(T0, T0 + span - 17 * DAY))
        parts.append(s + np.arange(0, 16 * DAY, HOUR) + rng.integers(0, HOUR, size=16 * 24))
    # the very end is dense so that late queries see full second/minute levels
    end = T0 + span
    parts.append(np.arange(end - 20 * MIN, end))
    parts.append(np.arange(end - 16 * HOUR, end - 20 * MIN, MIN))
    return np.unique(np.concatenate(parts)).astype(np.int64)


def test_window_table_and_start() -> None:
    assert tuple(SPEC) == WINDOW_NAMES
    assert {w.name: (w.length, w.resolution) for w in WINDOWS} == SPEC
    now = 1_000_000_000  # 2001-09-09T01:46:40Z
    assert window_start("1m", now) == now - 59
    assert window_start("15m", now) == now - 899
    assert window_start("1h", now) == (now // 60 - 59) * 60 == 999_996_420
    assert window_start("1d", now) == (now // 3600 - 23) * 3600
    assert window_start("1mo", now) == (now // 86400 - 29) * 86400
    for w in WINDOWS:
        length, res = SPEC[w.name]
        for t in (now, now - 1, (now // res) * res, 0, 59, 86_399):
            assert window_start(w, t) == (t // res - (length // res - 1)) * res
            assert window_start(w.name, t) == window_start(w, t)


def test_levels_are_derived_from_the_windows() -> None:
    assert [(lv.name, lv.resolution, lv.size) for lv in LEVELS] == [
        ("s", 1, 900),
        ("m", MIN, 900),
        ("h", HOUR, 360),
        ("d", DAY, 450),
    ]
    assert MAX_BUCKETS == 2610
    assert [w.name for lv in LEVELS for w in windows_of(lv)] == list(WINDOW_NAMES)
    for w in WINDOWS:
        assert level_of(w.name).resolution == SPEC[w.name][1]


@settings(max_examples=300, deadline=None)
@given(now=st.integers(min_value=40 * 30 * DAY, max_value=2**33), name=st.sampled_from(list(SPEC)))
def test_pieces_tile_the_window_exactly(now: int, name: str) -> None:
    """Pieces are contiguous, cover [window_start, now], and use only whole buckets."""
    length, res = SPEC[name]
    parts = pieces(name, now)
    assert parts[0].level.resolution == res  # own level first, then finer ones
    assert parts[0].start == (now // res - (length // res - 1)) * res
    assert parts[-1].end == now + 1
    for before, after in itertools.pairwise(parts):
        assert before.end == after.start
        assert after.level.resolution < before.level.resolution
    for part in parts:
        r = part.level.resolution
        assert part.start % r == 0
        assert part.end % r == 0 or r == 1
        assert part.start <= part.end <= now + 1  # no bucket extending past now is used whole


@settings(max_examples=300, deadline=None)
@given(
    hour=st.integers(min_value=40 * 30 * 24, max_value=2**33 // HOUR),
    name=st.sampled_from(list(SPEC)),
)
def test_whole_pieces_at_hour_ends_use_whole_buckets(hour: int, name: str) -> None:
    """At an hour end the window is read from whole minute / hour buckets (days: its own)."""
    end = hour * HOUR
    length, res = SPEC[name]
    parts = whole_pieces(name, end)
    assert parts[0].start == (end - 1) // res * res - (length // res - 1) * res
    assert parts[-1].end == end
    for before, after in itertools.pairwise(parts):
        assert before.end == after.start
        assert before.level != after.level
    for part in parts:
        r = part.level.resolution
        assert r > 1  # no seconds: the hour is complete
        assert part.start % r == 0
        assert part.end % r == 0
        assert r <= HOUR or r == res  # day buckets only for the month windows' own


def test_sparse_series_over_16_months_matches_numpy() -> None:
    rng = np.random.default_rng(2024)
    ts = sparse_series(rng, days=490)
    assert ts[-1] - ts[0] > 15 * MONTH + 10 * DAY
    vals = rng.poisson(40, size=len(ts)).astype(float) * rng.choice([0.5, 1.0, 3.0], size=len(ts))
    vals[rng.random(len(ts)) < 0.05] = 0.0
    queries = set(rng.choice(ts, size=250, replace=False).tolist())  # at a sample
    queries |= set((ts[rng.integers(0, len(ts) - 1, size=120)] + 1).tolist())  # just after one
    queries |= set(rng.integers(int(ts[0]), int(ts[-1]) + 40 * DAY, size=120).tolist())  # anywhere
    queries |= boundary_queries(int(ts[0]), int(ts[-1]), rng, 30)
    queries |= edge_queries(ts, rng, 12)
    queries |= {int(ts[-1]) + d for d in (0, 1, 59, 60, 899, 900, HOUR, 15 * HOUR, 16 * MONTH)}
    assert run_and_compare(ts, vals, queries) > 1000


def test_values_near_1e10_with_small_spread() -> None:
    rng = np.random.default_rng(10)
    base = T0 - T0 % DAY + 5 * HOUR + 17  # dense 5 h, then sparse days, then dense 2 h
    dense1 = base + np.arange(0, 5 * HOUR)
    sparse = base + 5 * HOUR + np.cumsum(rng.integers(HOUR, 2 * DAY, size=300))
    dense2 = sparse[-1] + 1 + np.arange(0, 2 * HOUR)
    ts = np.concatenate([dense1, sparse, dense2]).astype(np.int64)
    vals = 1e10 + rng.integers(0, 11, size=len(ts)).astype(float)
    queries = set(rng.choice(ts, size=150, replace=False).tolist())
    queries |= boundary_queries(int(ts[0]), int(ts[-1]), rng, 15)
    queries |= {int(dense1[-1]), int(dense2[-1]), int(ts[-1]) + HOUR}
    assert run_and_compare(ts, vals, queries) > 200


def test_gaps_are_absent_not_zero() -> None:
    rw = RollingWindows()
    now = T0
    samples = [now - 800, now - 700, now - 30, now - 5, now]  # 5 samples in 15 minutes
    for t in samples:
        rw.add(t, 10.0)
    got = rw.stats(now)
    for name in ("15m", "1h", "1d", "15mo"):
        assert (got[name].count, got[name].mean, got[name].max, got[name].stddev) == (
            5,
            10.0,
            10.0,
            0.0,
        )
    assert got["1m"].count == 3
    assert got["5m"].count == 3
    # long after: the minute windows are empty, the month windows still see the 5 samples
    later = rw.stats(now + 20 * DAY)
    assert later["1m"] == later["15h"] == later["15d"] == Moments.empty()
    assert later["1mo"].count == 5
    assert later["1mo"].mean == 10.0


def test_late_sample_before_an_earlier_query_time() -> None:
    """stats(now) with now past the last sample, then add(ts < now): the caches follow."""
    rng = np.random.default_rng(3)
    ts = np.array([T0, T0 + 50, T0 + 4000, T0 + 4001, T0 + 90_000, T0 + 90_061], dtype=np.int64)
    vals = rng.uniform(0, 100, size=len(ts))
    rw = RollingWindows()
    now = T0 + 100_000
    for k in range(len(ts)):
        rw.add(int(ts[k]), float(vals[k]))
        for q in (now, int(ts[k]), now):
            got = rw.stats(q)
            for name in WINDOW_NAMES:
                assert_window(got[name], ref_slice(ts[: k + 1], vals[: k + 1], q, name), name)


def test_stats_result_is_a_fresh_dict() -> None:
    rw = RollingWindows()
    rw.add(T0, 1.0)
    a = rw.stats(T0)
    a["1m"] = Moments.of(99.0)
    assert rw.stats(T0)["1m"] == Moments.of(1.0)


def test_rejections_leave_state_unchanged() -> None:
    rw = RollingWindows()
    assert rw.stats(T0) == dict.fromkeys(WINDOW_NAMES, Moments.empty())
    rw.add(T0, 1.0)
    rw.add(T0 + 1, 3.0)
    before = rw.stats(T0 + 1)
    with pytest.raises(ValueError, match="not after"):
        rw.add(T0 + 1, 5.0)  # duplicate second
    with pytest.raises(ValueError, match="not after"):
        rw.add(T0 - 100, 5.0)  # going back
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="finite"):
            rw.add(T0 + 2, bad)
    with pytest.raises(ValueError, match="earlier than the last sample"):
        rw.stats(T0)
    assert rw.stats(T0 + 1) == before
    assert rw.last_ts == T0 + 1
    assert before["1m"].count == 2
    assert before["1m"].mean == 2.0


def test_memory_is_bounded() -> None:
    """Fill every level completely, keep going for 16 months: never more than MAX_BUCKETS."""
    assert MAX_BUCKETS == 900 + 900 + 360 + 450
    rng = np.random.default_rng(7)
    rw = RollingWindows()
    end = T0 - T0 % DAY + 460 * DAY
    times = np.concatenate(
        [
            np.arange(end - 460 * DAY, end - 16 * DAY, DAY) + rng.integers(0, DAY, size=444),
            np.arange(end - 16 * DAY, end - 16 * HOUR, HOUR),
            np.arange(end - 16 * HOUR, end - 16 * MIN, MIN),
            np.arange(end - 16 * MIN, end),
        ]
    )
    times = np.unique(times)
    peak = 0
    for t in times.tolist():
        rw.add(t, float(t % 97))
        peak = max(peak, rw.stored_buckets())
        assert rw.open_entries() <= 60 + 60 + 24
    assert peak <= MAX_BUCKETS
    assert rw.stored_buckets() == MAX_BUCKETS  # the bound is reached: every ring is full
    # keep feeding a long, mixed series: the bound holds at every step
    t = int(times[-1])
    for step in rng.integers(1, 3 * HOUR, size=4000).tolist():
        t += step if step > HOUR else 1
        rw.add(t, 1.0)
        assert rw.stored_buckets() <= MAX_BUCKETS
        assert rw.open_entries() <= 60 + 60 + 24
    assert sum(m.count for m in rw.stats(t).values()) > 0


def test_indicator_set() -> None:
    names = ("connected_users", "incoming_bytes_per_second")
    s = IndicatorSet(names)
    assert s.names == names
    assert "connected_users" in s
    s.add_sample(T0, {"connected_users": 5.0, "incoming_bytes_per_second": 1e9})
    s.add_sample(T0 + 1, {"connected_users": 7.0})  # bytes: no sample at T0 + 1 (gap)
    snap = s.snapshot(T0 + 1)
    assert set(snap) == set(names)
    assert all(list(per) == list(WINDOW_NAMES) for per in snap.values())
    assert snap["connected_users"]["1m"].count == 2
    assert snap["connected_users"]["1m"].mean == 6.0
    assert snap["connected_users"]["1m"].stddev == 1.0
    assert snap["incoming_bytes_per_second"]["15mo"].count == 1
    with pytest.raises(KeyError):
        s.add_sample(T0 + 2, {"connected_users": 1.0, "nope": 1.0})
    with pytest.raises(ValueError, match="not after"):  # bytes would be fine, users is not
        s.add_sample(T0 + 1, {"incoming_bytes_per_second": 1.0, "connected_users": 1.0})
    assert s["connected_users"].last_ts == T0 + 1
    assert s["incoming_bytes_per_second"].last_ts == T0  # nothing was added by failed calls
    assert s.snapshot(T0 + 1) == snap
