"""Window statistics and trend series as of a second T (thin I/O around the transforms).

Inputs: the rollups (minute / hour / day buckets of closed hours), the compacted samples of the
last 15 minutes before T, and -- unless ``include_open=False`` -- the live tail: samples of the
``.open`` archive files (the hour being written, never compacted) with ``ts <= T``.

The live tail touches a few *overlay* hours (those of the open files) whose stored buckets are
incomplete: some nodes' files may still be open, and the cluster sums need every node. Their
minute buckets are recomputed by Spark from compacted samples + tail, their hour buckets and the
day buckets of their days re-merged in memory -- exactly what the rollup job will store once
the files close; nothing is written.

One Spark job collects every bucket involved (a bounded amount: see
:mod:`spark_stats.windowing`), and the windows are assembled exactly in Python:

* ``window_stats``: one row per scope x indicator x window as of T, count-0 rows (null
  statistics) included for every scope with a sample in the last 15 months, and always for the
  cluster;
* ``trend_points``: as of every hour end of the last 168 hours up to T (points before the first
  sample skipped; rows with ``count > 0`` only).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from metrics.windows import DAY, HOUR

from . import transforms as T
from .compaction import SAMPLES_TABLE, header_ok, read_archive, samples_store, scan_archive
from .exact import complete, empty_stats, finalize
from .results import StageResult
from .rollups import day_of, read_buckets, rollup_store
from .transforms import longest_buckets
from .windowing import TREND_HOURS, needed_ranges, overlay, trend_points, window_series

log = logging.getLogger(__name__)

__all__ = ["WindowsResult", "compute_windows"]


@dataclass
class WindowsResult:
    stage: StageResult
    window_stats: pd.DataFrame
    trend_points: pd.DataFrame
    points: list[int]
    overlay_hours: list[int]


def _days(lo: int, hi: int) -> set[str]:
    """``YYYY-MM-DD`` of every day overlapping ``[lo, hi]``."""
    return {day_of(d) for d in range(lo - lo % DAY, hi + 1, DAY)}


def compute_windows(
    spark: SparkSession,
    archive_dir: Path,
    warehouse_dir: Path,
    as_of: int,
    *,
    include_open: bool = True,
    trend_hours: int = TREND_HOURS,
) -> WindowsResult:
    """Window statistics and trend points as of ``as_of`` (see the module docstring).

    ``StageResult``: ``input_rows`` = buckets collected, ``output_rows`` = rows of both frames.
    """
    started = time.monotonic()
    t = int(as_of)
    samples = samples_store(warehouse_dir)
    s_manifest = samples.load()
    store = rollup_store(warehouse_dir)
    r_manifest = store.load()

    # the live tail: .open files of hours that started by T (their rows after T are dropped)
    open_files = (
        [
            f
            for f in scan_archive(archive_dir)
            if not f.closed and f.size > 0 and f.hour_start <= t and header_ok(f)
        ]
        if include_open
        else []
    )
    overlay_hours = sorted({f.hour_start for f in open_files})
    firsts = [int(v) for v in (s_manifest.meta.get("min_ts"), *overlay_hours[:1]) if v is not None]
    points = trend_points(t, min(firsts) if firsts else None, trend_hours)
    ranges = needed_ranges(t, points)
    now_minutes = needed_ranges(t)["m"]

    # samples of the last seconds and of the overlay hours (compacted + tail, one per second)
    sec_lo = ranges["s"][0]
    recent = F.col("ts").between(sec_lo, t)
    in_overlay = T.bucket_start("ts", HOUR).isin(overlay_hours)
    dates = _days(sec_lo, t) | {day_of(h) for h in overlay_hours}
    live = samples.read(spark, SAMPLES_TABLE, T.SAMPLE_SCHEMA, dates, s_manifest)
    live = live.where(recent | in_overlay) if overlay_hours else live.where(recent)
    if open_files:
        tail = read_archive(spark, open_files).where(F.col("ts") <= t)
        live = T.merge_samples(live, tail).drop("date")
    seconds = T.scope_seconds(live)

    def tagged(df: DataFrame, level: str) -> DataFrame:
        return df.select(*T.BUCKET_COLUMNS, F.lit(level).alias("level"))

    parts = [tagged(T.second_buckets(seconds.where(recent)), "s")]
    if overlay_hours:
        parts.append(tagged(T.minute_buckets(seconds.where(in_overlay)), "o"))
    for level, table in (("m", "minute"), ("h", "hour"), ("d", "day")):
        lo, end = ranges[level]
        buckets = read_buckets(spark, store, table, lo, end - 1, r_manifest)
        if level == "m":  # the as-of windows' minutes, and the last 15 of each trend hour
            buckets = buckets.where(
                (F.col("bucket_start") >= now_minutes[0])
                | (F.pmod("bucket_start", F.lit(HOUR)) >= HOUR - longest_buckets()[1])
            )
        parts.append(tagged(buckets, level))
    for day in sorted({h - h % DAY for h in overlay_hours}):  # whole overlay days: re-merged
        parts.append(
            tagged(read_buckets(spark, store, "hour", day, day + DAY - 1, r_manifest), "h")
        )
    collected: pd.DataFrame = reduce(DataFrame.unionByName, parts).toPandas()

    levels = {
        level: rows.drop(columns="level").drop_duplicates(["scope", "indicator", "bucket_start"])
        for level, rows in collected.groupby("level")
    }
    empty = pd.DataFrame(columns=list(T.BUCKET_COLUMNS))
    levels = overlay(levels, levels.get("o", empty), overlay_hours)
    exact_now, exact_trend = window_series(levels, t, points)

    stats = finalize(exact_now) if len(exact_now) else empty_stats()
    scopes = set(stats.loc[stats["count"] > 0, "scope"])
    window_stats = complete(stats, scopes, t)
    trend = finalize(exact_trend) if len(exact_trend) else empty_stats()
    stage = StageResult(
        "windows",
        input_rows=len(collected),
        output_rows=len(window_stats) + len(trend),
        seconds=time.monotonic() - started,
    )
    log.info(
        "windows as of %d: %d window rows, %d trend rows (%d points), overlay hours %s",
        t,
        len(window_stats),
        len(trend),
        len(points),
        overlay_hours,
    )
    return WindowsResult(stage, window_stats, trend, points, overlay_hours)
