"""Window statistics and trend series as of a second T (thin I/O around the transforms).

Inputs: the rollups (minute / hour / day buckets of closed hours), the compacted samples of the
last 15 minutes before T, and the tail: samples with ``ts <= T`` of the archive files compaction
has not read -- the ``.open`` ones (the hour being written, never compacted; left out with
``include_open=False``) and closed ones whose hour ended after this run's compaction (a run
across the top of an hour: without them the last hour's seconds were in neither input and
its 1-minute to 5-hour windows said "no samples", found in a ``make cluster`` walk).

The live tail touches a few *overlay* hours (those of the open files) whose stored buckets are
incomplete: some nodes' files may still be open, and the cluster sums need every node. Their
minute buckets are recomputed by Spark from compacted samples + tail, their hour buckets and the
day buckets of their days re-merged in memory -- exactly what the rollup job will store once
the files close; nothing is written.

One Spark job collects every bucket involved (a bounded amount: see
:mod:`spark_stats.window_assembly`), and the windows are assembled exactly in Python:

* ``window_stats``: one row per scope x indicator x window as of T, count-0 rows (null
  statistics) included for every scope with a sample in the last 15 months, and always for the
  cluster;
* ``trend_points``: as of every hour end of the last 168 hours up to T (points before the first
  sample skipped; rows with ``count > 0`` only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce, wraps
from pathlib import Path
from typing import ParamSpec, TypeVar

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pushgrid.metrics.window_spec import DAY

from . import transforms as T
from .compaction import (
    SAMPLES_TABLE,
    ArchiveFile,
    header_ok,
    read_archive,
    samples_store,
    scan_archive,
)
from .exact import complete, empty_stats, finalize
from .families import INDICATOR_FAMILY, Family
from .manifest_store import Manifest, ManifestStore
from .results import StageResult
from .rollups import day_of, read_buckets, rollup_store
from .window_assembly import (
    TREND_HOURS,
    Ranges,
    needed_ranges,
    overlay,
    split_levels,
    trend_points,
    window_series,
)

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

#: how Spark says a listed file is gone: renamed before the plan (PATH_NOT_FOUND) or during
#: the read (FILE_NOT_EXIST)
_FILE_GONE = ("FILE_NOT_EXIST", "PATH_NOT_FOUND", "FileNotFoundException")

__all__ = ["WindowsResult", "compute_windows"]

_NO_BUCKETS = pd.DataFrame(columns=list(T.BUCKET_COLUMNS))


@dataclass
class WindowsResult:
    stage: StageResult
    window_stats: pd.DataFrame
    trend_points: pd.DataFrame
    points: list[int]
    overlay_hours: list[int]
    #: the exact aggregates as of T (``transforms.EXACT_COLUMNS``, ``count > 0`` rows): the
    #: delivery family reads its merged bucket counts (``sum``) from them
    exact: pd.DataFrame | None = None


def _days(lo: int, hi: int) -> set[str]:
    """``YYYY-MM-DD`` of every day overlapping ``[lo, hi]``."""
    return {day_of(d) for d in range(lo - lo % DAY, hi + 1, DAY)}


def _again_if_a_file_closed(stage: Callable[P, R]) -> Callable[P, R]:
    """Run ``stage`` once more when Spark found an archive file gone.

    An ``.open`` file can be closed (renamed) by its writer between the scan that listed it and
    the Spark read, at the top of an hour: the read then fails with FILE_NOT_EXIST (a
    fresh-clone run met it). The stage is then computed once more from a new scan, which finds
    the file closed and not compacted, so its seconds still count.
    """

    @wraps(stage)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return stage(*args, **kwargs)
        except Exception as exc:  # a Py4J / Spark error: the message is the only handle
            if not any(sign in str(exc) for sign in _FILE_GONE):
                raise
            log.warning("an archive file was closed while the windows read it: reading again")
            return stage(*args, **kwargs)

    return run


@_again_if_a_file_closed
def compute_windows(
    spark: SparkSession,
    archive_dir: Path,
    warehouse_dir: Path,
    as_of: int,
    *,
    include_open: bool = True,
    trend_hours: int = TREND_HOURS,
    family: Family = INDICATOR_FAMILY,
) -> WindowsResult:
    """Window statistics and trend points as of ``as_of`` (see the module docstring).

    ``StageResult``: ``input_rows`` = buckets collected, ``output_rows`` = rows of both frames.
    """
    started = time.monotonic()
    t = int(as_of)
    samples, store = samples_store(warehouse_dir), rollup_store(warehouse_dir)
    s_manifest, r_manifest = samples.load(), store.load()
    tail = _uncompacted(archive_dir, t, family, s_manifest, include_open)
    overlay_hours = sorted({f.hour_start for f in tail})
    firsts = [int(v) for v in (s_manifest.meta.get("min_ts"), *overlay_hours[:1]) if v is not None]
    points = trend_points(t, min(firsts) if firsts else None, trend_hours)
    ranges = needed_ranges(t, points)
    first = ranges["s"][0]
    live = T.window_samples(
        _stored_samples(spark, samples, s_manifest, (first, t), overlay_hours, family),
        first,
        t,
        overlay_hours,
    )
    if tail:  # the live tail: rows after T are dropped
        tail_rows = read_archive(spark, tail, family).where(F.col("ts") <= t)
        keys = ("node", *family.keys)
        live = T.merge_samples(live, tail_rows, family.columns, keys).drop("date")
    fresh = T.fresh_buckets(family.seconds(live), first, t, overlay_hours, family.window_indicators)
    stored = _stored_buckets(spark, store, r_manifest, ranges, t, overlay_hours)
    collected: pd.DataFrame = reduce(DataFrame.unionByName, [fresh, *stored]).toPandas()
    result = _assemble(collected, t, points, overlay_hours, family)
    result.stage.seconds = time.monotonic() - started
    return result


def _uncompacted(
    archive_dir: Path, t: int, family: Family, manifest: Manifest, include_open: bool
) -> list[ArchiveFile]:
    """Archive files of hours that started by ``t`` that compaction has not read: ``.open``
    ones (if ``include_open``) and closed ones new or changed since the last compaction."""
    compacted: dict[str, list[int]] = manifest.meta.get("inputs", {})
    return [
        f
        for f in scan_archive(archive_dir, family)
        if f.size > 0
        and f.hour_start <= t
        and (include_open if not f.closed else compacted.get(f.rel) != f.signature)
        and header_ok(f, family)
    ]


def _stored_samples(
    spark: SparkSession,
    samples: ManifestStore,
    manifest: Manifest,
    seconds: tuple[int, int],
    overlay_hours: list[int],
    family: Family,
) -> DataFrame:
    """Compacted samples of the days holding ``seconds`` (first, t) and the overlay hours."""
    dates = _days(*seconds) | {day_of(h) for h in overlay_hours}
    return samples.read(spark, SAMPLES_TABLE, family.schema, dates, manifest)


def _stored_buckets(
    spark: SparkSession,
    store: ManifestStore,
    manifest: Manifest,
    ranges: Ranges,
    t: int,
    overlay_hours: list[int],
) -> list[DataFrame]:
    """Rollup buckets of the ranges the windows need, tagged by level; whole overlay days of
    hours too (their day buckets are re-merged)."""
    parts = []
    for level, table in (("m", "minute"), ("h", "hour"), ("d", "day")):
        lo, end = ranges[level]
        buckets = read_buckets(spark, store, table, lo, end - 1, manifest)
        if level == "m":
            buckets = T.trend_minutes(buckets, needed_ranges(t)["m"][0])
        parts.append(T.tagged(buckets, level))
    for day in sorted({h - h % DAY for h in overlay_hours}):
        hours = read_buckets(spark, store, "hour", day, day + DAY - 1, manifest)
        parts.append(T.tagged(hours, "h"))
    return parts


def _assemble(
    collected: pd.DataFrame, t: int, points: list[int], overlay_hours: list[int], family: Family
) -> WindowsResult:
    """Exact window statistics and trend rows from the collected, level-tagged buckets."""
    levels = split_levels(collected)
    levels = overlay(levels, levels.get("o", _NO_BUCKETS), overlay_hours)
    exact_now, exact_trend = window_series(levels, t, points)
    stats = finalize(exact_now) if len(exact_now) else empty_stats()
    scopes = set(stats.loc[stats["count"] > 0, "scope"])
    window_stats = complete(stats, scopes, t, family.window_indicators, family.always_scopes)
    trend = finalize(exact_trend) if len(exact_trend) else empty_stats()
    output_rows = len(window_stats) + len(trend)
    stage = StageResult("windows", input_rows=len(collected), output_rows=output_rows, seconds=0.0)
    log.info(
        "windows as of %d: %d window rows, %d trend rows (%d points), overlay hours %s",
        *(t, len(window_stats), len(trend), len(points), overlay_hours),
    )
    return WindowsResult(stage, window_stats, trend, points, overlay_hours, exact_now)
