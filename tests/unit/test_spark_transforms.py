"""Pure transforms of spark_stats on tiny inputs (chispa-style DataFrame equality)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, SparkSession

from pushgrid.metrics.window_spec import DAY, HOUR, MINUTE, WINDOWS, window_start
from pushgrid.spark_stats import exact
from pushgrid.spark_stats import transforms as T
from pushgrid.spark_stats.results import STAT_COLUMNS
from pushgrid.spark_stats.window_assembly import (
    coarsen,
    needed_ranges,
    overlay,
    split_levels,
    trend_points,
    window_series,
)

pytestmark = pytest.mark.spark

IND = T.INDICATORS
BASE = 1_795_348_800  # 2026-11-22 12:00:00 UTC, an hour start


def assert_df_equality(
    actual: DataFrame, expected: DataFrame, *, ignore_row_order: bool = True
) -> None:
    """Same column names and types, same rows (chispa's ``assert_df_equality``; nullability
    is ignored)."""
    a_schema = [(f.name, f.dataType) for f in actual.schema.fields]
    e_schema = [(f.name, f.dataType) for f in expected.schema.fields]
    assert a_schema == e_schema, f"schemas differ:\n{a_schema}\n{e_schema}"
    a_rows = [tuple(r) for r in actual.collect()]
    e_rows = [tuple(r) for r in expected.collect()]
    if ignore_row_order:
        a_rows.sort(key=repr)
        e_rows.sort(key=repr)
    assert a_rows == e_rows


def samples_df(spark: SparkSession, rows: Sequence[tuple[int, str, Sequence[int]]]) -> DataFrame:
    return spark.createDataFrame([(ts, node, *vals) for ts, node, vals in rows], T.SAMPLE_SCHEMA)


def buckets_df(spark: SparkSession, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(
        [(s, i, b, c, Decimal(su), Decimal(q), m) for s, i, b, c, su, q, m in rows],
        T.BUCKET_SCHEMA,
    )


def vals(x: int) -> list[int]:
    return [x + k for k in range(len(IND))]


def test_clean_samples_drops_incomplete_rows(spark: SparkSession) -> None:
    raw = spark.createDataFrame(
        [
            (1, "a", *vals(1)),
            (2, None, *vals(2)),
            (3, "a", None, *vals(3)[1:]),
            (4, "a", *vals(4)[:-1], None),
        ],
        T.SAMPLE_SCHEMA,
    )
    assert_df_equality(T.clean_samples(raw), samples_df(spark, [(1, "a", vals(1))]))


def test_merge_samples_keeps_existing_then_first_new_row(spark: SparkSession) -> None:
    day = BASE
    existing = samples_df(spark, [(day + 1, "a", vals(10)), (day + 2, "a", vals(20))])
    new = samples_df(
        spark,
        [
            (day + 2, "a", vals(99)),  # duplicate of a compacted row: ignored
            (day + 3, "a", vals(30)),
            (day + 3, "a", vals(98)),  # same second twice in a file: first line wins
            (day + 3, "b", vals(31)),
            (day + DAY, "a", vals(40)),  # next date
        ],
    )
    merged = T.merge_samples(existing, new.coalesce(1))
    expected = samples_df(
        spark,
        [
            (day + 1, "a", vals(10)),
            (day + 2, "a", vals(20)),
            (day + 3, "a", vals(30)),
            (day + 3, "b", vals(31)),
            (day + DAY, "a", vals(40)),
        ],
    ).withColumn("date", T.day_string("ts"))
    assert_df_equality(merged, expected)
    assert sorted(r["date"] for r in merged.select("date").distinct().collect()) == [
        "2026-11-22",
        "2026-11-23",
    ]


def test_scope_seconds_cluster_sums_only_present_nodes(spark: SparkSession) -> None:
    rows = [(BASE, "a", vals(1)), (BASE, "b", vals(100)), (BASE + 1, "b", vals(5))]
    got = T.scope_seconds(samples_df(spark, rows))
    expected = spark.createDataFrame(
        [
            ("node:a", BASE, *vals(1)),
            ("node:b", BASE, *vals(100)),
            ("node:b", BASE + 1, *vals(5)),
            ("cluster", BASE, *[a + b for a, b in zip(vals(1), vals(100), strict=True)]),
            ("cluster", BASE + 1, *vals(5)),  # second BASE + 2: no sample anywhere -> absent
        ],
        "scope string, ts long, " + ", ".join(f"{c} long" for c in IND),
    )
    assert_df_equality(got, expected)


def _bucket_rows(scope: str, start: int, xs_by_ind: dict[str, list[int]]) -> list[tuple[Any, ...]]:
    return [
        (scope, ind, start, len(xs), sum(xs), sum(x * x for x in xs), max(xs))
        for ind, xs in xs_by_ind.items()
    ]


def test_minute_buckets_exact_near_1e10_negative_and_huge(spark: SparkSession) -> None:
    # values near 1e10, a negative one, and values past 2**49 (the decimal path)
    series = {
        BASE + 0: 10_000_000_007,
        BASE + 1: 10_000_000_003,
        BASE + 59: -5,
        BASE + 60: 2**62,  # next minute, huge
        BASE + 61: -(2**60),
        BASE + 62: 2**49,
    }
    rows = [(ts, "a", [x] * len(IND)) for ts, x in series.items()]
    seconds = T.scope_seconds(samples_df(spark, rows)).where("scope = 'node:a'")
    got = T.minute_buckets(seconds)
    expected_rows: list[tuple[Any, ...]] = []
    for start in (BASE, BASE + 60):
        xs = [x for ts, x in series.items() if start <= ts < start + 60]
        expected_rows += _bucket_rows("node:a", start, {ind: xs for ind in IND})
    assert_df_equality(got, buckets_df(spark, expected_rows))


def test_coarser_and_second_buckets(spark: SparkSession) -> None:
    rows = [(BASE + 30, "a", vals(7)), (BASE + 90, "a", vals(9)), (BASE + HOUR + 5, "a", vals(1))]
    seconds = T.scope_seconds(samples_df(spark, rows)).where("scope = 'node:a'")
    hours = T.coarser_buckets(T.minute_buckets(seconds), HOUR)
    expected = []
    for start, xs in ((BASE, [vals(7), vals(9)]), (BASE + HOUR, [vals(1)])):
        expected += _bucket_rows(
            "node:a", start, {ind: [v[k] for v in xs] for k, ind in enumerate(IND)}
        )
    assert_df_equality(hours, buckets_df(spark, expected))
    per_second = T.second_buckets(seconds)
    expected_s = []
    for ts, _, v in rows:
        expected_s += _bucket_rows("node:a", ts, {ind: [v[k]] for k, ind in enumerate(IND)})
    assert_df_equality(per_second, buckets_df(spark, expected_s))


def test_day_and_month_strings_are_utc(spark: SparkSession) -> None:
    df = spark.createDataFrame([(BASE - 12 * HOUR - 1,), (BASE + 12 * HOUR - 1,)], "ts long")
    got = df.select(T.day_string("ts").alias("d"), T.month_string("ts").alias("m")).collect()
    assert [(r["d"], r["m"]) for r in got] == [("2026-11-21", "2026-11"), ("2026-11-22", "2026-11")]


# -- window aggregates -------------------------------------------------------------------------


def _brute(samples: dict[int, int], lo: int, hi: int) -> tuple[int, int, int, int] | None:
    xs = [x for ts, x in samples.items() if lo <= ts <= hi]
    if not xs:
        return None
    return len(xs), sum(xs), sum(x * x for x in xs), max(xs)


def test_spark_buckets_assembled_into_windows_match_brute_force(spark: SparkSession) -> None:
    """The real path: Spark bucket transforms, collected, assembled by ``window_series``."""
    rng = random.Random(7)
    as_of = BASE + 5 * HOUR + 17 * MINUTE + 23  # inside a minute, an hour and a day
    # sparse samples over 16 months, dense ones around as_of and some after it (ignored)
    stamps = {as_of - rng.randrange(0, 480 * DAY) for _ in range(300)}
    stamps |= {as_of - rng.randrange(-600, 3 * HOUR) for _ in range(2000)}
    for w in WINDOWS:  # window boundaries: just outside and just inside
        lo = window_start(w, as_of)
        stamps |= {lo - 1, lo}
    stamps |= {as_of, as_of + 1}
    samples = {ts: 10_000_000_000 + rng.randrange(0, 1000) for ts in sorted(stamps)}
    df = samples_df(spark, [(ts, "a", [x] * len(IND)) for ts, x in samples.items()])
    seconds = T.scope_seconds(df)
    minutes = T.minute_buckets(seconds)
    hours = T.coarser_buckets(minutes, HOUR)
    days = T.coarser_buckets(hours, DAY)
    only = f"indicator = '{IND[-1]}'"
    levels = {
        name: frame.where(only).toPandas()
        for name, frame in (
            ("s", T.second_buckets(seconds)),
            ("m", minutes),
            ("h", hours),
            ("d", days),
        )
    }
    now, _ = window_series(levels, as_of)
    rows = {(r.scope, r.window): r for r in now.itertuples(index=False)}
    for scope in ("node:a", "cluster"):
        for w in WINDOWS:
            expected = _brute(samples, window_start(w, as_of), as_of)
            row = rows.get((scope, w.name))
            if expected is None:
                assert row is None
                continue
            assert row is not None, (scope, w.name)
            assert (row.count, int(row.sum), int(row.sumsq), row.max) == expected
            assert row.as_of == as_of


# -- window stage inputs (each transform against rows written out by hand) --------------------


def test_window_samples_keep_recent_seconds_and_overlay_hours(spark: SparkSession) -> None:
    stamps = [BASE - 1, BASE, BASE + 5, BASE + 3 * HOUR - 1, BASE + 3 * HOUR + 7, BASE + 4 * HOUR]
    df = samples_df(spark, [(ts, "a", vals(1)) for ts in stamps])
    first, as_of = BASE + 3 * HOUR - 10, BASE + 3 * HOUR + 20
    got = sorted(r["ts"] for r in T.window_samples(df, first, as_of, [BASE]).collect())
    # [first, as_of] holds 3h-1 and 3h+7; the overlay hour BASE holds BASE and BASE+5
    assert got == [BASE, BASE + 5, BASE + 3 * HOUR - 1, BASE + 3 * HOUR + 7]
    plain = sorted(r["ts"] for r in T.window_samples(df, first, as_of, []).collect())
    assert plain == [BASE + 3 * HOUR - 1, BASE + 3 * HOUR + 7]


def test_fresh_buckets_tag_recent_seconds_and_overlay_minutes(spark: SparkSession) -> None:
    rows = [(BASE + 1, "a", vals(3)), (BASE + 2, "a", vals(4)), (BASE + HOUR + 9, "a", vals(5))]
    seconds = T.scope_seconds(samples_df(spark, rows)).where("scope = 'node:a'")
    got = T.fresh_buckets(seconds, BASE + HOUR, BASE + HOUR + 9, [BASE])
    expected = [
        (*row, "s")
        for row in _bucket_rows(
            "node:a", BASE + HOUR + 9, {i: [v] for i, v in zip(IND, vals(5), strict=True)}
        )
    ]
    expected += [
        (*row, "o")
        for row in _bucket_rows(
            "node:a", BASE, {i: [a, b] for i, a, b in zip(IND, vals(3), vals(4), strict=True)}
        )
    ]
    got_rows = sorted((*r[:4], int(r[4]), int(r[5]), r[6], r[7]) for r in got.collect())
    assert got_rows == sorted(expected)


def test_trend_minutes_keep_now_and_the_last_15_of_each_hour(spark: SparkSession) -> None:
    starts = [BASE + m * MINUTE for m in (0, 44, 45, 59, 60, 61, 70)]
    minutes = buckets_df(spark, [("cluster", IND[0], b, 1, 1, 1, 1) for b in starts])
    got = sorted(r["bucket_start"] for r in T.trend_minutes(minutes, BASE + 70 * MINUTE).collect())
    assert got == [BASE + m * MINUTE for m in (45, 59, 70)]


def test_split_levels_drops_buckets_read_twice() -> None:
    row = ("cluster", IND[0], BASE, 1, 2, 4, 2)
    collected = pd.DataFrame(
        [(*row, "h"), (*row, "h"), (*row, "d"), ("node:a", *row[1:], "h")],
        columns=[*T.BUCKET_COLUMNS, "level"],
    )
    levels = split_levels(collected)
    assert sorted(levels) == ["d", "h"]
    assert list(levels["h"]["scope"]) == ["cluster", "node:a"]
    assert list(levels["d"].columns) == list(T.BUCKET_COLUMNS)


# -- exact statistics and trends (pure Python) ---------------------------------------------------


def test_moments_exact_near_1e10() -> None:
    xs = [10_000_000_000 + d for d in (4, 7, 13, 16)]
    avg, std = exact.moments(len(xs), sum(xs), sum(x * x for x in xs))
    assert avg == 10_000_000_010.0
    assert std == pytest.approx(math.sqrt(22.5), rel=1e-15)
    rng = np.random.default_rng(3)
    big = (10**10 + rng.integers(0, 10, 5000)).tolist()
    avg, std = exact.moments(len(big), sum(big), sum(x * x for x in big))
    assert avg == sum(big) / len(big)
    assert std == pytest.approx(float(np.std(np.array(big, dtype=np.float64))), rel=1e-12)


def test_finalize_nulls_for_empty_windows_and_dtypes() -> None:
    frame = pd.DataFrame(
        [
            ("cluster", IND[0], "1m", 100, 2, Decimal(3), Decimal(5), 2),
            ("cluster", IND[0], "5m", 100, 0, None, None, None),
        ],
        columns=list(T.EXACT_COLUMNS),
    )
    stats = exact.finalize(frame)
    assert tuple(stats.columns) == STAT_COLUMNS
    assert stats.loc[0, "avg"] == 1.5
    assert stats.loc[0, "stddev"] == 0.5
    assert stats.loc[0, "max"] == 2.0
    assert stats.loc[1, "count"] == 0
    assert stats.loc[1, ["max", "avg", "stddev"]].isna().all()
    full = exact.complete(stats, ["node:x"], 100)
    assert len(full) == 2 * len(IND) * len(WINDOWS)
    assert (full.loc[full["scope"] == "node:x", "count"] == 0).all()


def test_trend_points_are_hour_ends_from_first_sample() -> None:
    as_of = BASE + 3 * HOUR + 10
    points = trend_points(as_of, BASE + 30 * MINUTE)
    assert points == [BASE + k * HOUR - 1 for k in (1, 2, 3)]
    assert trend_points(BASE + HOUR - 1, None) == []
    assert len(trend_points(as_of, 0)) == 168
    assert trend_points(BASE + HOUR - 1, 0)[-1] == BASE + HOUR - 1


def _py_buckets(samples: dict[int, int], r: int, lo: int, hi: int) -> pd.DataFrame:
    acc: dict[int, list[int]] = {}
    for ts, x in samples.items():
        if lo <= ts - ts % r < hi:
            acc.setdefault(ts - ts % r, []).append(x)
    return pd.DataFrame(
        [
            ("node:a", IND[0], b, len(xs), sum(xs), sum(x * x for x in xs), max(xs))
            for b, xs in sorted(acc.items())
        ],
        columns=list(T.BUCKET_COLUMNS),
    )


def test_window_series_matches_brute_force_as_of_t_and_hour_ends() -> None:
    rng = random.Random(11)
    as_of = BASE + 40 * DAY + 7 * HOUR + 17 * MINUTE + 41
    stamps = {as_of - rng.randrange(0, 470 * DAY) for _ in range(3000)}
    stamps |= {as_of - rng.randrange(-100, 8 * DAY) for _ in range(3000)}
    stamps |= {as_of - rng.randrange(-100, 2 * HOUR) for _ in range(2000)}
    for w in WINDOWS:
        stamps |= {window_start(w, as_of) - 1, window_start(w, as_of)}
    samples = {ts: 10_000_000_000 + rng.randrange(0, 500) for ts in sorted(stamps)}
    points = trend_points(as_of, min(samples))
    ranges = needed_ranges(as_of, points)
    levels = {
        level: _py_buckets(samples, r, *ranges[level])
        for level, r in (("s", 1), ("m", MINUTE), ("h", HOUR), ("d", DAY))
    }
    now, trend = window_series(levels, as_of, points)
    checked = 0
    for frame, stamps_ in ((now, [as_of]), (trend, points)):
        rows = {(r.window, r.as_of): r for r in frame.itertuples(index=False)}
        for p in stamps_:
            for w in WINDOWS:
                expected = _brute(samples, window_start(w, p), p)
                row = rows.get((w.name, p))
                if expected is None:
                    assert row is None
                    continue
                assert row is not None
                assert (row.count, row.sum, row.sumsq, row.max) == expected
                checked += 1
    assert checked > 1000


def test_overlay_replaces_hours_and_re_merges_their_days() -> None:
    rng = random.Random(5)
    stored_samples = {BASE + rng.randrange(0, 2 * DAY): rng.randrange(100) for _ in range(3000)}
    hour = BASE + 30 * HOUR  # the live hour: new samples arrived
    live = dict(stored_samples)
    live.update({hour + rng.randrange(0, HOUR): 1000 + rng.randrange(100) for _ in range(500)})
    lo, hi = BASE - DAY, BASE + 3 * DAY
    stored = {
        "m": _py_buckets(stored_samples, MINUTE, lo, hi),
        "h": _py_buckets(stored_samples, HOUR, lo, hi),
        "d": _py_buckets(stored_samples, DAY, lo, hi),
    }
    got = overlay(stored, _py_buckets(live, MINUTE, hour, hour + HOUR), [hour])
    for level, r in (("m", MINUTE), ("h", HOUR), ("d", DAY)):
        frame = got[level].sort_values("bucket_start").reset_index(drop=True)
        expected = _py_buckets(live, r, lo, hi)
        assert frame.astype(str).to_dict("records") == expected.astype(str).to_dict("records")
    assert coarsen(stored["m"], DAY).astype(str).equals(stored["d"].astype(str))
