"""Pure DataFrame transforms of the statistics pipeline (no I/O: DataFrame in, DataFrame out).

Shapes
------
*samples* (``SAMPLE_SCHEMA``): one row per node and second, ``ts, node, <7 indicators>``, all
integers, at most one row per ``(node, ts)``.

*scope seconds*: ``scope, ts, <7 indicators>``: one row per node second (``scope = node:<name>``)
and one per cluster second (``scope = cluster``: the sum over the nodes that have a sample at that
second; a second where no node has a sample is absent, never zero).

*buckets* (``BUCKET_SCHEMA``): ``scope, indicator, bucket_start, count, sum, sumsq, max``: the
samples of one scope and indicator with ``bucket_start <= ts < bucket_start + r``, summarised by
exact integers -- ``count`` (long), ``sum`` and ``sumsq`` (sum of squares; ``decimal(38,0)``) and
``max`` (long). Merging buckets is addition (and ``max``), so every level and every window is
exact; the float statistics are derived once, at the very end (:mod:`spark_stats.exact`):
``avg = sum / count`` and ``stddev = sqrt((count * sumsq - sum**2) / count**2)``; the ``M2`` of
Chan's merge formula is ``sumsq - sum**2 / count``, exact as a rational. Nothing here is ever a
floating-point sum of squares.

Sums of squares per minute are computed with 64-bit integers on a split of each value
``x = hi * 2**21 + lo`` (exact for ``|x| < 2**49``, about 5.6e14; larger values take a
``decimal(38,0)`` path), which is about 2.5 times faster than decimal products. With ANSI mode on
(the Spark default) an overflow anywhere raises instead of wrapping. Limits: sums of squares must
fit 38 digits, i.e. ``x**2 * samples < 1e38`` (values up to ~1e15 over 15 months of seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, LongType, StringType, StructField, StructType

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.window_spec import DAY, HOUR, LEVELS, MINUTE

from .results import CLUSTER_SCOPE, PATTERN_SEPARATOR

__all__ = [
    "BUCKET_COLUMNS",
    "BUCKET_SCHEMA",
    "CSV_SCHEMA",
    "EXACT",
    "EXACT_COLUMNS",
    "INDICATORS",
    "NODE_PREFIX",
    "SAMPLE_COLUMNS",
    "SAMPLE_SCHEMA",
    "bucket_start",
    "clean_samples",
    "coarser_buckets",
    "day_string",
    "fresh_buckets",
    "merge_samples",
    "minute_buckets",
    "month_string",
    "scope_seconds",
    "second_buckets",
    "tagged",
    "trend_minutes",
    "watched_scope_seconds",
    "window_samples",
    "with_partition",
]

INDICATORS: tuple[str, ...] = INDICATOR_NAMES
NODE_PREFIX = "node:"
EXACT = DecimalType(38, 0)

SAMPLE_COLUMNS: tuple[str, ...] = ("ts", "node", *INDICATORS)
SAMPLE_SCHEMA = StructType(
    [StructField("ts", LongType()), StructField("node", StringType())]
    + [StructField(name, LongType()) for name in INDICATORS]
)
#: The archive CSV columns (docs/archive.md), parsed as integers.
CSV_SCHEMA = SAMPLE_SCHEMA

BUCKET_COLUMNS: tuple[str, ...] = (
    "scope",
    "indicator",
    "bucket_start",
    "count",
    "sum",
    "sumsq",
    "max",
)
BUCKET_SCHEMA = StructType(
    [
        StructField("scope", StringType()),
        StructField("indicator", StringType()),
        StructField("bucket_start", LongType()),
        StructField("count", LongType()),
        StructField("sum", EXACT),
        StructField("sumsq", EXACT),
        StructField("max", LongType()),
    ]
)
#: Exact window aggregates: one row per scope, indicator, window and as-of second.
EXACT_COLUMNS: tuple[str, ...] = (
    "scope",
    "indicator",
    "window",
    "as_of",
    "count",
    "sum",
    "sumsq",
    "max",
)

_SPLIT = 21  # x = hi * 2**21 + lo, 0 <= lo < 2**21
_SMALL = 1 << 49  # |x| below this: per-minute sums of hi*hi, hi*lo, lo*lo fit 64 bits


def _dec(value: int) -> Column:
    return F.lit(Decimal(value)).cast(EXACT)


def _zero() -> Column:
    return _dec(0)


def bucket_start(column: str | Column, resolution: int) -> Column:
    """Start of the epoch-aligned bucket of ``resolution`` seconds holding ``column``."""
    col = F.col(column) if isinstance(column, str) else column
    return col - F.pmod(col, F.lit(resolution))


def day_string(ts: str | Column) -> Column:
    """``YYYY-MM-DD`` (UTC) of a Unix second, independent of the session time zone."""
    col = F.col(ts) if isinstance(ts, str) else ts
    days = ((col - F.pmod(col, F.lit(DAY))) / F.lit(DAY)).cast("int")
    return F.date_from_unix_date(days).cast("string")


def month_string(ts: str | Column) -> Column:
    """``YYYY-MM`` (UTC) of a Unix second."""
    return F.substring(day_string(ts), 1, 7)


def with_partition(df: DataFrame, key: str, ts: str) -> DataFrame:
    """Add the partition column ``key`` (``date`` or ``month``) derived from second ``ts``."""
    if key == "date":
        return df.withColumn("date", day_string(ts))
    if key == "month":
        return df.withColumn("month", month_string(ts))
    raise ValueError(f"unknown partition key {key!r}")


# -- samples -----------------------------------------------------------------------------------


def clean_samples(raw: DataFrame, columns: Sequence[str] = SAMPLE_COLUMNS) -> DataFrame:
    """Archive rows as samples: drop rows with a missing or non-integer field.

    ``raw`` is the CSV read with ``CSV_SCHEMA`` and ``mode=DROPMALFORMED`` (which already drops
    lines with the wrong number of columns or an unparsable value); an empty field parses as
    null and is dropped here. Filtering on every column also keeps Spark from pruning columns
    out of the CSV scan, which would skip the malformed-line check for them.
    """
    complete = reduce(lambda a, b: a & b, [F.col(c).isNotNull() for c in columns])
    return raw.select(*columns).where(complete)


def merge_samples(
    existing: DataFrame,
    new: DataFrame,
    columns: Sequence[str] = SAMPLE_COLUMNS,
    keys: Sequence[str] = ("node",),
) -> DataFrame:
    """Union of compacted and new samples, one row per ``(*keys, ts)``, with a ``date`` column.

    Existing rows win over new ones (compaction is idempotent: re-reading a file changes
    nothing); among new rows the first line read wins. The result is hash-partitioned by date
    (one output file per date) and sorted by ``date, node, ts`` within partitions.
    """
    old = existing.select(*columns, F.lit(0).alias("_src"), F.lit(0).cast("long").alias("_seq"))
    fresh = new.select(
        *columns, F.lit(1).alias("_src"), F.monotonically_increasing_id().alias("_seq")
    )
    union = old.unionByName(fresh).withColumn("date", day_string("ts"))
    first = Window.partitionBy("date", *keys, "ts").orderBy("_src", "_seq")
    return (
        union.repartition("date")
        .withColumn("_rank", F.row_number().over(first))
        .where(F.col("_rank") == 1)
        .select(*columns, "date")
    )


def scope_seconds(samples: DataFrame) -> DataFrame:
    """Per-second values of every node scope and of the cluster scope (see module docstring)."""
    nodes = samples.select(
        F.concat(F.lit(NODE_PREFIX), F.col("node")).alias("scope"), "ts", *INDICATORS
    )
    cluster = samples.groupBy("ts").agg(*[F.sum(c).alias(c) for c in INDICATORS])
    cluster = cluster.select(F.lit(CLUSTER_SCOPE).alias("scope"), "ts", *INDICATORS)
    return nodes.unionByName(cluster)


#: pattern gauges whose cluster value is the largest member's, not the sum
SHARED_GAUGES = frozenset({"subjects"})


def watched_scope_seconds(samples: DataFrame) -> DataFrame:
    """Per-second values of every watched pattern (ADR 030), as scope seconds whose scope is
    ``<scope>\t<pattern>`` (a tab is never in a pattern): the node scopes, and the cluster
    scope per pattern and second -- the sum over the nodes with a line for the pattern at that
    second (incoming messages are counted by the member that accepted them, so the sum counts
    each once; outgoing and subscribers are per member and summed), except ``subjects``, the
    largest member's count (members share subjects: a sum would count one per member), as in
    the live cluster view (admin_api/services/watched.py)."""
    names = [c for c in samples.columns if c not in ("ts", "node", "pattern", "date")]
    nodes = samples.select(
        F.concat(
            F.lit(NODE_PREFIX), F.col("node"), F.lit(PATTERN_SEPARATOR), F.col("pattern")
        ).alias("scope"),
        "ts",
        *names,
    )
    cluster = samples.groupBy("pattern", "ts").agg(
        *[(F.max(c) if c in SHARED_GAUGES else F.sum(c)).alias(c) for c in names]
    )
    cluster = cluster.select(
        F.concat(F.lit(CLUSTER_SCOPE + PATTERN_SEPARATOR), F.col("pattern")).alias("scope"),
        "ts",
        *names,
    )
    return nodes.unionByName(cluster)


# -- buckets -----------------------------------------------------------------------------------


def _to_long(wide: DataFrame, prefix_cols: Sequence[str], indicators: Sequence[str]) -> DataFrame:
    """Wide ``<indicator>__<stat>`` columns to one bucket row per indicator."""
    structs = [
        F.struct(
            F.lit(name).alias("indicator"),
            F.col(f"{name}__count").alias("count"),
            F.col(f"{name}__sum").alias("sum"),
            F.col(f"{name}__sumsq").alias("sumsq"),
            F.col(f"{name}__max").alias("max"),
        )
        for name in indicators
    ]
    return wide.select(*prefix_cols, F.inline(F.array(*structs))).select(*BUCKET_COLUMNS)


def second_buckets(seconds: DataFrame, indicators: Sequence[str] = INDICATORS) -> DataFrame:
    """Scope seconds as one-second buckets (``count = 1``); used for partial current buckets."""
    wide = seconds.select(
        "scope",
        F.col("ts").alias("bucket_start"),
        *[
            col
            for name in indicators
            for col in (
                F.lit(1).cast("long").alias(f"{name}__count"),
                F.col(name).cast(EXACT).alias(f"{name}__sum"),
                (F.col(name).cast(EXACT) * F.col(name).cast(EXACT))
                .cast(EXACT)
                .alias(f"{name}__sumsq"),
                F.col(name).alias(f"{name}__max"),
            )
        ],
    )
    return _to_long(wide, ["scope", "bucket_start"], indicators)


def _minute_aggs(name: str) -> list[Column]:
    x = F.col(name)
    small = F.abs(x) < F.lit(_SMALL)
    hi = F.shiftright(x, _SPLIT)
    lo = x.bitwiseAND(F.lit((1 << _SPLIT) - 1))
    big = x.cast(EXACT)
    return [
        F.count(x).alias(f"{name}__count"),
        F.max(x).alias(f"{name}__max"),
        F.sum(F.when(small, x)).alias(f"{name}__s"),
        F.sum(F.when(small, hi * hi)).alias(f"{name}__hh"),
        F.sum(F.when(small, hi * lo)).alias(f"{name}__hl"),
        F.sum(F.when(small, lo * lo)).alias(f"{name}__ll"),
        F.sum(F.when(~small, big)).alias(f"{name}__bs"),
        F.sum(F.when(~small, (big * big).cast(EXACT))).alias(f"{name}__bq"),
    ]


def _minute_finish(name: str) -> list[Column]:
    def part(suffix: str) -> Column:
        return F.coalesce(F.col(f"{name}__{suffix}").cast(EXACT), _zero())

    total = (part("s") + part("bs")).cast(EXACT)
    squares = (
        part("hh") * _dec(1 << (2 * _SPLIT))
        + part("hl") * _dec(1 << (_SPLIT + 1))
        + part("ll")
        + part("bq")
    ).cast(EXACT)
    return [
        F.col(f"{name}__count"),
        total.alias(f"{name}__sum"),
        squares.alias(f"{name}__sumsq"),
        F.col(f"{name}__max"),
    ]


def minute_buckets(seconds: DataFrame, indicators: Sequence[str] = INDICATORS) -> DataFrame:
    """Minute buckets (long shape, ``BUCKET_SCHEMA``) of scope seconds.

    Aggregates the wide rows first (one row per scope and minute) and only then unpivots the
    seven indicators, so the per-second data is scanned once.
    """
    wide = seconds.groupBy("scope", bucket_start("ts", MINUTE).alias("bucket_start")).agg(
        *[agg for name in indicators for agg in _minute_aggs(name)]
    )
    wide = wide.select(
        "scope", "bucket_start", *[c for name in indicators for c in _minute_finish(name)]
    )
    return _to_long(wide, ["scope", "bucket_start"], indicators)


def coarser_buckets(buckets: DataFrame, resolution: int) -> DataFrame:
    """Merge buckets into coarser ones of ``resolution`` s (hours from minutes, days from hours)."""
    return buckets.groupBy(
        "scope", "indicator", bucket_start("bucket_start", resolution).alias("bucket_start")
    ).agg(
        F.sum("count").cast("long").alias("count"),
        F.sum("sum").cast(EXACT).alias("sum"),
        F.sum("sumsq").cast(EXACT).alias("sumsq"),
        F.max("max").alias("max"),
    )


# -- window stage inputs -------------------------------------------------------------------------


def window_samples(
    samples: DataFrame, first: int, as_of: int, overlay_hours: Sequence[int]
) -> DataFrame:
    """The samples the window stage reads: ``first <= ts <= as_of`` (the seconds of the as-of
    windows) and every sample of the ``overlay_hours`` (hours whose buckets are recomputed)."""
    wanted = F.col("ts").between(first, as_of)
    if overlay_hours:
        wanted = wanted | bucket_start("ts", HOUR).isin(list(overlay_hours))
    return samples.where(wanted)


def tagged(buckets: DataFrame, level: str) -> DataFrame:
    """``BUCKET_COLUMNS`` plus a ``level`` column naming where the rows go after the collect."""
    return buckets.select(*BUCKET_COLUMNS, F.lit(level).alias("level"))


def fresh_buckets(
    seconds: DataFrame,
    first: int,
    as_of: int,
    overlay_hours: Sequence[int],
    indicators: Sequence[str] = INDICATORS,
) -> DataFrame:
    """Buckets computed from scope seconds rather than read from the rollups: one-second
    buckets of ``[first, as_of]`` (level ``s``) and minute buckets of the overlay hours (``o``)."""
    recent = seconds.where(F.col("ts").between(first, as_of))
    fresh = tagged(second_buckets(recent, indicators), "s")
    if not overlay_hours:
        return fresh
    in_overlay = bucket_start("ts", HOUR).isin(list(overlay_hours))
    return fresh.unionByName(tagged(minute_buckets(seconds.where(in_overlay), indicators), "o"))


def trend_minutes(minutes: DataFrame, now_start: int) -> DataFrame:
    """The stored minute buckets the windows read: those from ``now_start`` on (the as-of
    windows) and the last 15 of every hour (the second-resolution windows at hour ends)."""
    start = F.col("bucket_start")
    last_of_hour = F.pmod(start, F.lit(HOUR)) >= HOUR - LEVELS[0].size
    return minutes.where((start >= now_start) | last_of_hour)
