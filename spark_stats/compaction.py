"""Compaction: closed hourly archive CSV files -> Parquet partitioned by date (thin I/O).

``<warehouse>/samples/date=YYYY-MM-DD/part-*.parquet`` holds one row per node and second
(``transforms.SAMPLE_SCHEMA``), sorted by node and time, one file per date. Its manifest
(:mod:`spark_stats.manifest_store`) records:

* ``meta.inputs``: every compacted archive file (``<date>/<node>/samples-HH.csv``) with its size
  and modification time. A run compacts only closed files that are new or changed since; files
  ending in ``.open`` (the hour being written) are never compacted.
* ``meta.hours``: for every hour of data, the manifest version that last changed it -- the
  rollups recompute exactly the hours changed since the version they last consumed.
* ``meta.min_ts``: the first sample.

A date touched by new files is rewritten as ``existing rows + new rows``, one row per
``(node, ts)`` (existing rows win, so re-reading a file changes nothing), and swapped in by the
manifest commit. Raw archive files are never deleted or modified. Idempotent (a second run finds
nothing new and starts no Spark job) and resumable (a crash leaves the previous manifest in force;
the next run deletes the leftovers and redoes the batch).
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pushgrid.metrics.window_spec import HOUR

from . import transforms as T
from .families import INDICATOR_FAMILY, Family
from .manifest_store import Manifest, ManifestStore, TableSpec
from .results import StageResult

log = logging.getLogger(__name__)

__all__ = [
    "ArchiveFile",
    "CompactionResult",
    "batches",
    "compact",
    "header_ok",
    "read_archive",
    "samples_store",
    "scan_archive",
]

SAMPLES_TABLE = "samples"
EXPECTED_HEADER = INDICATOR_FAMILY.header
_DAY_DIR = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def samples_store(warehouse_dir: Path) -> ManifestStore:
    return ManifestStore(warehouse_dir / "samples", [TableSpec(SAMPLES_TABLE, "", "date")])


@dataclass(frozen=True)
class ArchiveFile:
    """One hourly archive file (docs/archive.md)."""

    path: Path
    rel: str  # "<date>/<node dir>/samples-HH.csv[.open]"
    day: str
    hour: int  # hour of the day, 0-23
    size: int
    mtime_ns: int
    closed: bool

    @property
    def day_start(self) -> int:
        return int(
            datetime.combine(date.fromisoformat(self.day), datetime.min.time(), UTC).timestamp()
        )

    @property
    def hour_start(self) -> int:
        return self.day_start + self.hour * HOUR

    @property
    def signature(self) -> list[int]:
        return [self.size, self.mtime_ns]


def scan_archive(archive_dir: Path, family: Family = INDICATOR_FAMILY) -> list[ArchiveFile]:
    """Every ``samples-HH.csv`` and ``samples-HH.csv.open`` file of the archive (or the
    ``family``'s prefix instead of ``samples``), sorted."""
    found: list[ArchiveFile] = []
    file_re = family.file_re
    if not archive_dir.is_dir():
        return found
    for day_entry in os.scandir(archive_dir):
        if not (day_entry.is_dir() and _DAY_DIR.match(day_entry.name)):
            continue
        try:
            date.fromisoformat(day_entry.name)
        except ValueError:
            continue
        for node_entry in os.scandir(day_entry.path):
            if not node_entry.is_dir():
                continue
            for entry in os.scandir(node_entry.path):
                match = file_re.match(entry.name)
                if match is None or not entry.is_file():
                    continue
                hour = int(match.group(1))
                if hour > 23:
                    continue
                st = entry.stat()
                found.append(
                    ArchiveFile(
                        path=Path(entry.path),
                        rel=f"{day_entry.name}/{node_entry.name}/{entry.name}",
                        day=day_entry.name,
                        hour=hour,
                        size=st.st_size,
                        mtime_ns=st.st_mtime_ns,
                        closed=match.group(2) is None,
                    )
                )
    found.sort(key=lambda f: f.rel)
    return found


def header_ok(file: ArchiveFile, family: Family = INDICATOR_FAMILY) -> bool:
    """Whether the file starts with the expected header (the CSV is then read by position)."""
    try:
        with file.path.open("rb") as handle:
            first = handle.readline(4096)
    except OSError as exc:
        log.warning("archive file %s unreadable: %s", file.path, exc)
        return False
    return first.rstrip(b"\r\n").decode("utf-8", "replace").strip() == family.header


def read_archive(
    spark: SparkSession, files: Iterable[ArchiveFile], family: Family = INDICATOR_FAMILY
) -> DataFrame:
    """Samples of archive files (``SAMPLE_SCHEMA``): malformed lines and foreign dates dropped.

    One CSV scan for all files. A row whose ``ts`` is not in the date of its directory is
    dropped (the writer never produces one; it would land in a partition not being rewritten).
    """
    paths = sorted(str(f.path) for f in files)
    if not paths:
        return spark.createDataFrame([], family.schema)
    raw = (
        spark.read.schema(family.schema)
        .option("header", True)
        .option("escape", '"')  # Python's csv doubles a quote inside a quoted pattern
        .option("mode", "DROPMALFORMED")
        .option("enforceSchema", True)
        .csv(paths)
        .select("*", F.col("_metadata.file_path").alias("_path"))
    )
    # ".../<YYYY-MM-DD>/<node>/samples-HH.csv[.open]": the third segment from the end
    dir_day = F.substring_index(F.substring_index(F.col("_path"), "/", -3), "/", 1)
    if family.may_be_empty:  # the CSV reader reads an empty field as null
        raw = raw.fillna("", subset=list(family.may_be_empty))
    return T.clean_samples(raw.where(dir_day == T.day_string("ts")), family.columns)


@dataclass
class CompactionResult:
    stage: StageResult
    files: int = 0  # archive files compacted by this run
    skipped: list[str] = field(default_factory=list)  # closed files with an unexpected header
    touched_hours: list[int] = field(default_factory=list)
    version: int = 0  # samples manifest version after the run


#: A first run over a large archive is compacted in batches of whole dates of about this many
#: bytes of CSV, each committed on its own: memory stays bounded and an interrupted run resumes
#: after the last committed batch (a year x 10 nodes is ~18 GiB of CSV: ~18 batches).
BATCH_BYTES = 1 << 30


def batches(files: list[ArchiveFile], budget: int = BATCH_BYTES) -> list[list[ArchiveFile]]:
    """``files`` grouped by date, dates packed in order into batches of about ``budget`` bytes."""
    by_day: dict[str, list[ArchiveFile]] = {}
    for f in files:
        by_day.setdefault(f.day, []).append(f)
    out: list[list[ArchiveFile]] = []
    size = 0
    for day in sorted(by_day):
        day_files = by_day[day]
        day_size = sum(f.size for f in day_files)
        if not out or size + day_size > budget:
            out.append([])
            size = 0
        out[-1].extend(day_files)
        size += day_size
    return out


def compact(
    spark: SparkSession,
    archive_dir: Path,
    warehouse_dir: Path,
    *,
    prune_through: int = 0,
    batch_bytes: int = BATCH_BYTES,
    family: Family = INDICATOR_FAMILY,
) -> CompactionResult:
    """Compact the closed archive files that are new or changed since the last run.

    ``StageResult``: ``input_rows`` = well-formed rows read from the new files, ``output_rows``
    = rows added to the samples table (duplicates of compacted rows are not counted).
    ``prune_through``: the samples version the rollups have consumed; hours changed at or before
    it are dropped from ``meta.hours`` when this run commits (the map stays as small as the
    changes not yet rolled up). The caller holds the warehouse lock
    (:func:`spark_stats.locking.warehouse_lock`).
    """
    started = time.monotonic()
    store = samples_store(warehouse_dir)
    store.recover()
    manifest = store.load()
    inputs: dict[str, list[int]] = manifest.meta.get("inputs", {})
    closed = [f for f in scan_archive(archive_dir, family) if f.closed]
    changed = [f for f in closed if inputs.get(f.rel) != f.signature]
    skipped = [f.rel for f in changed if f.size > 0 and not header_ok(f, family)]
    if skipped:
        log.warning(
            "skipping %d archive files with an unexpected header: %s", len(skipped), skipped[:5]
        )
    skipped_set = set(skipped)
    new = [f for f in changed if f.size > 0 and f.rel not in skipped_set]
    empty = [f for f in changed if f.size == 0]
    result = CompactionResult(StageResult("compaction"), skipped=skipped, version=manifest.version)
    if not new and not empty:
        result.stage.seconds = time.monotonic() - started
        return result

    present = {f.rel for f in closed}
    groups = batches(new, batch_bytes) or [[]]
    touched: set[int] = set()
    for n, group in enumerate(groups):
        manifest, hours = _compact_batch(
            spark,
            store,
            manifest,
            present,
            (group, empty if n == 0 else []),
            prune_through,
            result,
            family,
        )
        touched |= hours
        if len(groups) > 1:
            log.info(
                "compaction: batch %d of %d committed (%d files)", n + 1, len(groups), len(group)
            )
    result.files = len(new)
    result.touched_hours = sorted(touched)
    result.version = manifest.version
    result.stage.seconds = time.monotonic() - started
    log.info(
        "compaction: %d files in %d batches, %d rows read, %d rows added",
        len(new),
        len(groups),
        result.stage.input_rows,
        result.stage.output_rows,
    )
    return result


def _compact_batch(
    spark: SparkSession,
    store: ManifestStore,
    manifest: Manifest,
    present: set[str],
    files: tuple[list[ArchiveFile], list[ArchiveFile]],
    prune_through: int,
    result: CompactionResult,
    family: Family,
) -> tuple[Manifest, set[int]]:
    """Merge the new files (``files``: new, empty) into their dates and commit; adds the counts
    to ``result.stage``."""
    new, empty = files
    txn = store.transaction(manifest)
    touched_hours: set[int] = set()
    rows_before = 0
    dates: list[str] = []
    min_ts = None
    if new:
        observed = Observation(f"compaction_input_{txn.version}")
        fresh = read_archive(spark, new, family).observe(
            observed,
            F.count(F.lit(1)).alias("rows"),
            F.min("ts").alias("min_ts"),
            F.collect_set(T.bucket_start("ts", HOUR)).alias("hours"),
        )
        dates = sorted({f.day for f in new})
        existing = store.read(spark, SAMPLES_TABLE, family.schema, dates, manifest)
        rows_before = manifest.rows(SAMPLES_TABLE, dates)
        merged = T.merge_samples(existing, fresh, family.columns, ("node", *family.keys))
        txn.write(SAMPLES_TABLE, merged, replace=dates)
        stats = observed.get
        result.stage.input_rows += int(stats.get("rows") or 0)
        touched_hours = {int(h) for h in stats.get("hours") or []}
        min_ts = stats.get("min_ts")

    inputs: dict[str, list[int]] = manifest.meta.get("inputs", {})
    new_inputs = {rel: sig for rel, sig in inputs.items() if rel in present}
    new_inputs.update({f.rel: f.signature for f in new + empty})
    hours: dict[str, int] = {
        h: v for h, v in manifest.meta.get("hours", {}).items() if int(v) > prune_through
    }
    for h in touched_hours:
        hours[str(h)] = txn.version
    meta: dict[str, object] = {"inputs": new_inputs, "hours": hours}
    if "id" not in manifest.meta:
        meta["id"] = uuid.uuid4().hex
    old_min = manifest.meta.get("min_ts")
    if min_ts is not None:
        meta["min_ts"] = int(min_ts) if old_min is None else min(int(old_min), int(min_ts))
    committed = txn.commit(meta)
    result.stage.output_rows += committed.rows(SAMPLES_TABLE, dates) - rows_before
    return committed, touched_hours
