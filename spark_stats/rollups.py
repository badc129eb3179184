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

from pushgrid.metrics.window_spec import DAY, HOUR

from . import transforms as T
from .compaction import SAMPLES_TABLE, samples_store
from .families import INDICATOR_FAMILY, Family
from .manifest_store import Manifest, ManifestStore, TableSpec
from .results import StageResult

log = logging.getLogger(__name__)

__all__ = [
    "LEVEL_TABLES",
    "RollupResult",
    "chunks",
    "consumed_version",
    "read_buckets",
    "rollup_store",
    "update_rollups",
]

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


#: Changed hours are rolled up in chunks of at least this many hours, cut where the samples
#: version changes, each committed on its own (bounded memory; an interrupted first run over a
#: year resumes after the last chunk). Three weeks of hours.
CHUNK_HOURS = 21 * 24


def consumed_version(warehouse_dir: Path) -> int:
    """The samples manifest version the rollups have consumed (0: none, or another samples id)."""
    samples_id = samples_store(warehouse_dir).load().meta.get("id")
    meta = rollup_store(warehouse_dir).load().meta
    if samples_id is None or meta.get("samples_id") != samples_id:
        return 0
    return int(meta.get("samples_version", 0))


def chunks(changed: dict[int, int], min_hours: int = CHUNK_HOURS) -> list[tuple[list[int], int]]:
    """``changed`` (hour start -> samples version) as ``(hours, version)`` chunks, oldest first.

    Every hour of a chunk changed at or before its version, and every hour changed at or before
    it is in this chunk or an earlier one, so committing ``samples_version = version`` after a
    chunk is exact. A chunk closes once it has ``min_hours`` hours, at a version boundary.
    """
    out: list[tuple[list[int], int]] = []
    current: list[int] = []
    for version in sorted(set(changed.values())):
        current.extend(sorted(h for h, v in changed.items() if v == version))
        if len(current) >= min_hours:
            out.append((current, version))
            current = []
    if current:
        out.append((current, max(changed.values())))
    return out


def _all_hours(dates: Iterable[str]) -> list[int]:
    hours: list[int] = []
    for value in dates:
        start = int(datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())
        hours.extend(range(start, start + DAY, HOUR))
    return hours


def update_rollups(
    spark: SparkSession,
    warehouse_dir: Path,
    *,
    chunk_hours: int = CHUNK_HOURS,
    family: Family = INDICATOR_FAMILY,
) -> RollupResult:
    """Recompute the buckets of the hours whose samples changed since the last run.

    ``StageResult``: ``input_rows`` = sample rows read, ``output_rows`` = buckets recomputed
    (minute + hour + day). A first run (or one over a new samples table) rebuilds everything:
    every hour of every sample date, since the change map only keeps what is not yet consumed.
    The caller holds the warehouse lock.
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
    changed = {
        int(h): int(v) for h, v in s_manifest.meta.get("hours", {}).items() if int(v) > consumed
    }
    if full:  # hours the change map no longer lists were consumed by a rollup now gone
        oldest = min(changed.values(), default=0)
        for h in _all_hours(s_manifest.partitions(SAMPLES_TABLE)):
            changed.setdefault(h, oldest)
    stale_full = full and any(manifest.partitions(t) for t in LEVEL_TABLES)
    if not changed and not stale_full:
        result.stage.seconds = time.monotonic() - started
        return result

    result.full = full
    result.hours = sorted(changed)
    for n, (pending, version) in enumerate(chunks(changed, chunk_hours) or [([], 0)]):
        if n > 0:
            manifest = store.load()
        last = version >= max(changed.values(), default=0)
        _rollup_chunk(
            spark,
            store,
            manifest,
            samples,
            s_manifest,
            pending,
            full=full and n == 0,
            samples_version=s_manifest.version if last else version,
            stage=result.stage,
            family=family,
        )
    result.stage.seconds = time.monotonic() - started
    log.info(
        "rollups: %d hours recomputed (%s), %d samples read, %d buckets written",
        len(result.hours),
        "full" if full else "incremental",
        result.stage.input_rows,
        result.stage.output_rows,
    )
    return result


def _rollup_chunk(
    spark: SparkSession,
    store: ManifestStore,
    manifest: Manifest,
    samples: ManifestStore,
    s_manifest: Manifest,
    pending: list[int],
    *,
    full: bool,
    samples_version: int,
    stage: StageResult,
    family: Family,
) -> None:
    """Recompute the buckets of the ``pending`` hours (all, if ``full``) and commit them."""
    samples_id = s_manifest.meta.get("id")
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
    # observation names are unique per session: one set per chunk
    obs_m, obs_h, obs_d = (Observation(f"rollup_{n}_{txn.version}") for n in ("m", "h", "d"))

    # minutes: from the samples of the pending hours (every node, for the cluster sums)
    rows = samples.read(spark, SAMPLES_TABLE, family.schema, sample_dates, s_manifest)
    rows = rows.where(T.bucket_start("ts", HOUR).isin(pending))  # a date may span two chunks
    # samples read = the counts of one indicator over the node scopes
    one_node_indicator = F.col("scope").startswith(T.NODE_PREFIX) & (
        F.col("indicator") == family.window_indicators[0]
    )
    new_minutes = T.minute_buckets(family.seconds(rows), family.window_indicators).observe(
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

    txn.commit({"samples_version": samples_version, "samples_id": samples_id})
    stage.input_rows += int(obs_m.get.get("samples") or 0)
    stage.output_rows += sum(int(o.get.get("n") or 0) for o in (obs_m, obs_h, obs_d))


def _sorted(df: DataFrame, key: str) -> DataFrame:
    """One file per partition value, rows ordered for compact, prunable Parquet."""
    return df.repartition(key).sortWithinPartitions(key, "scope", "indicator", "bucket_start")
