"""The statistics pipeline: compaction -> rollups -> window statistics (the CLI's entry point).

::

    from pushgrid.spark_stats.spark_session import build_spark_session
    from pushgrid.spark_stats.pipeline import run_pipeline

    spark = build_spark_session()
    result = run_pipeline(spark, Path("data/archive"), Path("data/warehouse"), as_of=None)
    result.window_stats   # pandas, results.STAT_COLUMNS
    result.trend_points   # pandas, results.STAT_COLUMNS
    result.delivery_stats # pandas, delivery.DELIVERY_COLUMNS (None: no delivery archive)
    result.stages         # [compaction, rollups, windows] StageResults

Warehouse layout (``warehouse_dir``)::

    .lock                              one run at a time (StoreBusyError otherwise)
    samples/_manifest.json             compacted inputs, per-hour change versions, file lists
    samples/date=YYYY-MM-DD/*.parquet  one row per node and second
    rollups/_manifest.json             file lists of the three levels + samples version consumed
    rollups/minute/date=YYYY-MM-DD/    buckets of 60 s     (scope, indicator, bucket_start,
    rollups/hour/month=YYYY-MM/        buckets of 3600 s    count, sum, sumsq, max)
    rollups/day/month=YYYY-MM/         buckets of 86400 s

Every stage is idempotent and resumable; a run with no new closed archive file only reads the
manifests before computing the windows.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

from .compaction import BATCH_BYTES, compact, scan_archive
from .delivery import delivery_windows
from .families import DELIVERY_FAMILY, INDICATOR_FAMILY, WATCHED_FAMILY, Family
from .locking import StoreBusyError, warehouse_lock
from .results import PipelineResult, StageResult, split_pattern_scope
from .rollups import consumed_version, update_rollups
from .window_assembly import TREND_HOURS
from .window_stage import WindowsResult, compute_windows

log = logging.getLogger(__name__)

__all__ = ["Progress", "StoreBusyError", "run_pipeline"]

Progress = Callable[[str, float], None]


def run_pipeline(
    spark: SparkSession,
    archive_dir: Path,
    warehouse_dir: Path,
    as_of: int | None,
    progress: Progress | None = None,
    *,
    include_open: bool = True,
    lock: bool = True,
    on_stage: Callable[[StageResult], None] | None = None,
    batch_bytes: int = BATCH_BYTES,
) -> PipelineResult:
    """Compact new closed archive files, update the rollups, compute windows as of ``as_of``.

    ``as_of`` is a UTC Unix second (``None``: now). ``progress(message, fraction)`` is called
    before each stage and at the end (fraction 0.0 -> 1.0). ``include_open=False`` ignores the
    ``.open`` archive files (the hour being written) in the window statistics; they are never
    compacted either way. Raises :class:`StoreBusyError` if another run holds the warehouse.
    """
    moment = int(time.time()) if as_of is None else int(as_of)
    archive_dir, warehouse_dir = Path(archive_dir), Path(warehouse_dir)

    def report(message: str, fraction: float) -> None:
        log.info("stats pipeline: %s (%.0f%%)", message, fraction * 100)
        if progress is not None:
            progress(message, fraction)

    def done(stage: StageResult) -> None:
        if on_stage is not None:
            on_stage(stage)

    with warehouse_lock(warehouse_dir) if lock else contextlib.nullcontext():
        dirs = (archive_dir, warehouse_dir)
        watching = _has_family(WATCHED_FAMILY, archive_dir, warehouse_dir)
        delivering = _has_family(DELIVERY_FAMILY, archive_dir, warehouse_dir)
        share = 1.0 - 0.1 * (watching + delivering)
        run = Run(spark, moment, report, done, include_open, batch_bytes)
        windows, stages = _run_family(run, INDICATOR_FAMILY, dirs, (0.0, share))
        watched = delivery = None
        if watching:
            watched, more = _run_family(run, WATCHED_FAMILY, dirs, (share, 0.1))
            stages += more
        if delivering:  # the windows as of T only: no hourly trend of percentiles
            delivery, more = _run_family(run, DELIVERY_FAMILY, dirs, (1.0 - 0.1, 0.1), 0)
            stages += more
    return PipelineResult(
        as_of=moment,
        window_stats=windows.window_stats,
        trend_points=windows.trend_points,
        stages=stages,
        watched_stats=None if watched is None else split_pattern_scope(watched.window_stats),
        watched_trend=None if watched is None else split_pattern_scope(watched.trend_points),
        delivery_stats=None if delivery is None else _delivery_stats(delivery, moment),
    )


def _has_family(family: Family, archive_dir: Path, warehouse_dir: Path) -> bool:
    """Whether a family has anything to do: its archive files or its tables (a cluster that
    never watched a pattern, or whose clients never reported, starts no Spark job for it)."""
    return bool(scan_archive(archive_dir, family)) or family.warehouse(warehouse_dir).exists()


def _delivery_stats(windows: WindowsResult, moment: int) -> pd.DataFrame:
    exact = windows.exact if windows.exact is not None else pd.DataFrame(columns=["scope"])
    return delivery_windows(exact, moment)


@dataclass(frozen=True)
class Run:
    """What every family's stages share in one pipeline run."""

    spark: SparkSession
    moment: int
    report: Progress
    done: Callable[[StageResult], None]
    include_open: bool
    batch_bytes: int


def _run_family(
    run: Run,
    family: Family,
    dirs: tuple[Path, Path],
    fractions: tuple[float, float],
    trend_hours: int = TREND_HOURS,
) -> tuple[WindowsResult, list[StageResult]]:
    """Compaction, rollups and windows of one archive family (spark_stats/families.py);
    progress from ``fractions[0]`` over ``fractions[1]``."""
    archive_dir, warehouse = dirs[0], family.warehouse(dirs[1])
    label = "" if family is INDICATOR_FAMILY else f"{family.prefix} "
    base, scale = fractions

    def finished(stage: StageResult) -> StageResult:
        stage.name = label.replace(" ", "_") + stage.name
        run.done(stage)
        return stage

    run.report(f"{label}compacting closed archive files", base)
    # hours the rollups already consumed leave the samples' change map when it commits
    compaction = compact(
        run.spark,
        archive_dir,
        warehouse,
        prune_through=consumed_version(warehouse),
        batch_bytes=run.batch_bytes,
        family=family,
    )
    finished(compaction.stage)
    run.report(
        f"{label}compaction: {compaction.files} files, {compaction.stage.output_rows} rows added;"
        " updating rollups",
        base + 0.35 * scale,
    )
    rollups = update_rollups(run.spark, warehouse, family=family)
    finished(rollups.stage)
    run.report(
        f"{label}rollups: {len(rollups.hours)} hours recomputed; computing window statistics",
        base + 0.65 * scale,
    )
    windows = compute_windows(
        run.spark,
        archive_dir,
        warehouse,
        run.moment,
        include_open=run.include_open,
        trend_hours=trend_hours,
        family=family,
    )
    finished(windows.stage)
    run.report(
        f"{label}windows: {len(windows.window_stats)} statistics, "
        f"{len(windows.trend_points)} trend points",
        base + scale,
    )
    return windows, [compaction.stage, rollups.stage, windows.stage]
