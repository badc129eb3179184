"""Rollups: samples -> minute -> hour -> day buckets per scope and indicator (thin I/O).

``<warehouse>/rollups/{minute,hour,day}/`` hold buckets (``transforms.BUCKET_SCHEMA``: scope,
indicator, bucket_start, count, exact sum, exact sum of squares, max) for every node scope and
the cluster scope. Minute buckets are partitioned by ``date``, hour and day buckets by ``month``
of ``bucket_start``. One manifest covers the three tables, so they always commit together.

Incremental: the rollups manifest records the samples manifest version it has consumed. The
hours whose samples changed since then (``meta.hours`` of the samples manifest) are recomputed:
their minute and hour buckets from the samples (all nodes, so the cluster sums are right even when
one node's file arrives late), their days from the hour buckets; every other bucket is kept as
is. A run with nothing new only reads the two manifests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from metrics.windows import DAY, HOUR

from . import transforms as T
from .compaction import SAMPLES_TABLE, samples_store
from .results import StageResult
from .storage import Manifest, ManifestStore, TableSpec

log = logging.getLogger(__name__)

__all__ = ["LEVEL_TABLES", "RollupResult", "read_buckets", "rollup_store", "update_rollups"]

#: table name -> (resolution, partition key)
LEVEL_TABLES: dict[str, tuple[int, str]] = {
    "minute": (60, "date"),
    "hour": (HOUR, "month"),
    "day": (DAY, "month"),
}


def rollup_store(warehouse_dir: Path) -> ManifestStore:
    return ManifestStore(
        warehouse_dir / "rollups",
        [TableSpec(name, name, key) for name, (_, key) in LEVEL_TABLES.items()],
    )


def day_of(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def month_of(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")


def partition_values(table: str, lo: int, hi: int) -> list[str]:
    """Partition values of ``table`` holding bucket starts in ``[lo, hi]``."""
    if hi < lo:
        return []
    step = DAY
    values: list[str] = []
    fmt = day_of if LEVEL_TABLES[table][1] == "date" else month_of
    t = lo - lo % DAY
    while t <= hi:
        value = fmt(t)
        if not values or values[-1] != value:
            values.append(value)
        t += step
    return values


def read_buckets(
    spark: SparkSession,
    store: ManifestStore,
    table: str,
    lo: int,
    hi: int,
    manifest: Manifest | None = None,
) -> DataFrame:
    """Buckets of ``table`` with ``lo <= bucket_start <= hi`` (reads only those partitions)."""
    values = partition_values(table, lo, hi)
    df = store.read(spark, table, T.BUCKET_SCHEMA, values, manifest)
    return df.where((F.col("bucket_start") >= lo) & (F.col("bucket_start") <= hi))


@dataclass
class RollupResult:
    stage: StageResult
    hours: list[int] = field(default_factory=list)  # hour starts recomputed
    full: bool = False


def _not_in(column: str, resolution: int, values: Iterable[int]) -> Column:
    return ~T.bucket_start(column, resolution).isin([int(v) for v in values])


def update_rollups(spark: SparkSession, warehouse_dir: Path) -> RollupResult:
    """Recompute the buckets of the hours whose samples changed since the last run.

    ``StageResult``: ``input_rows`` = sample rows read, ``output_rows`` = buckets recomputed
    (minute + hour + day). The caller holds the warehouse lock.
    """
    started = time.monotonic()
    samples = samples_store(warehouse_dir)
    s_manifest = samples.load()
    store = rollup_store(warehouse_dir)
    store.recover()
    manifest = store.load()
    result = RollupResult(StageResult("rollups"))

    samples_id = s_manifest.meta.get("id")
    full = samples_id is None or manifest.meta.get("samples_id") != samples_id
    consumed = 0 if full else int(manifest.meta.get("samples_version", 0))
    hours_map: dict[str, int] = s_manifest.meta.get("hours", {})
    pending = sorted(int(h) for h, v in hours_map.items() if int(v) > consumed)
    stale_full = full and any(manifest.partitions(t) for t in LEVEL_TABLES)
    if not pending and not stale_full:
        result.stage.seconds = time.monotonic() - started
        return result

    result.full = full
    result.hours = pending
    pending_days = sorted({h - h % DAY for h in pending})
    dates = sorted({day_of(h) for h in pending})
    months = sorted({month_of(h) for h in pending})
    sample_dates = sorted(set(dates) & s_manifest.partitions(SAMPLES_TABLE).keys())

    def replaced(table: str, values: list[str]) -> list[str]:
        # a full rebuild also drops partitions that no longer have samples
        return sorted(set(values) | (set(manifest.partitions(table)) if full else set()))

    def kept(table: str, values: list[str], column_filter: Column) -> DataFrame:
        if full:
            return spark.createDataFrame([], T.BUCKET_SCHEMA)
        return store.read(spark, table, T.BUCKET_SCHEMA, values, manifest).where(column_filter)

    txn = store.transaction(manifest)
    obs_m, obs_h, obs_d = (Observation(f"rollup_{n}") for n in ("m", "h", "d"))

    # minutes: from the samples of the pending hours (every node, for the cluster sums)
    rows = samples.read(spark, SAMPLES_TABLE, T.SAMPLE_SCHEMA, sample_dates, s_manifest)
    if not full:
        rows = rows.where(T.bucket_start("ts", HOUR).isin(pending))
    # samples read = the counts of one indicator over the node scopes
    one_node_indicator = F.col("scope").startswith(T.NODE_PREFIX) & (
        F.col("indicator") == T.INDICATORS[0]
    )
    new_minutes = T.minute_buckets(T.scope_seconds(rows)).observe(
        obs_m,
        F.count(F.lit(1)).alias("n"),
        F.sum(F.when(one_node_indicator, F.col("count"))).alias("samples"),
    )
    minutes = kept("minute", dates, _not_in("bucket_start", HOUR, pending)).unionByName(new_minutes)
    txn.write(
        "minute",
        _sorted(T.with_partition(minutes, "date", "bucket_start"), "date"),
        replace=replaced("minute", dates),
    )

    def roll_up(finer: str, coarser: str, width: int, due: list[int], obs: Observation) -> None:
        """``coarser`` buckets of the ``due`` starts, merged from the staged ``finer`` ones."""
        staged = txn.read_staged(spark, finer, T.BUCKET_SCHEMA)
        if not full:
            staged = staged.where(T.bucket_start("bucket_start", width).isin(due))
        new = T.coarser_buckets(staged, width).observe(obs, F.count(F.lit(1)).alias("n"))
        merged = kept(coarser, months, ~F.col("bucket_start").isin(due)).unionByName(new)
        txn.write(
            coarser,
            _sorted(T.with_partition(merged, "month", "bucket_start"), "month"),
            replace=replaced(coarser, months),
        )

    roll_up("minute", "hour", HOUR, pending, obs_h)  # hours from the pending hours' minutes
    roll_up("hour", "day", DAY, pending_days, obs_d)  # days from the pending days' hours

    txn.commit({"samples_version": s_manifest.version, "samples_id": samples_id})
    result.stage.input_rows = int(obs_m.get.get("samples") or 0)
    result.stage.output_rows = sum(int(o.get.get("n") or 0) for o in (obs_m, obs_h, obs_d))
    result.stage.seconds = time.monotonic() - started
    log.info(
        "rollups: %d hours recomputed (%s), %d samples read, %d buckets written",
        len(pending),
        "full" if full else "incremental",
        result.stage.input_rows,
        result.stage.output_rows,
    )
    return result


def _sorted(df: DataFrame, key: str) -> DataFrame:
    """One file per partition value, rows ordered for compact, prunable Parquet."""
    return df.repartition(key).sortWithinPartitions(key, "scope", "indicator", "bucket_start")
