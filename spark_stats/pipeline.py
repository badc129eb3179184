"""The statistics pipeline: compaction -> rollups -> window statistics (the CLI's entry point).

::

    from pushgrid.spark_stats.spark_session import build_spark_session
    from pushgrid.spark_stats.pipeline import run_pipeline

    spark = build_spark_session()
    result = run_pipeline(spark, Path("data/archive"), Path("data/warehouse"), as_of=None)
    result.window_stats   # pandas, results.STAT_COLUMNS
    result.trend_points   # pandas, results.STAT_COLUMNS
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
from pathlib import Path

from pyspark.sql import SparkSession

from .compaction import BATCH_BYTES, compact
from .locking import StoreBusyError, warehouse_lock
from .results import PipelineResult, StageResult
from .rollups import consumed_version, update_rollups
from .window_stage import compute_windows

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
        report("compacting closed archive files", 0.0)
        # hours the rollups already consumed leave the samples' change map when it commits
        compaction = compact(
            spark,
            archive_dir,
            warehouse_dir,
            prune_through=consumed_version(warehouse_dir),
            batch_bytes=batch_bytes,
        )
        done(compaction.stage)
        report(
            f"compaction: {compaction.files} files, {compaction.stage.output_rows} rows added; "
            "updating rollups",
            0.35,
        )
        rollups = update_rollups(spark, warehouse_dir)
        done(rollups.stage)
        report(
            f"rollups: {len(rollups.hours)} hours recomputed; computing window statistics",
            0.65,
        )
        windows = compute_windows(
            spark, archive_dir, warehouse_dir, moment, include_open=include_open
        )
        done(windows.stage)
        report(
            f"windows: {len(windows.window_stats)} statistics, {len(windows.trend_points)} "
            "trend points",
            1.0,
        )
    return PipelineResult(
        as_of=moment,
        window_stats=windows.window_stats,
        trend_points=windows.trend_points,
        stages=[compaction.stage, rollups.stage, windows.stage],
    )
