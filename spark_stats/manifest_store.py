"""Parquet tables whose content is defined by a manifest: atomic, idempotent, crash-safe.

A *store* is a directory holding one or more partitioned Parquet tables and one manifest,
``_manifest.json``, that lists, for every table and partition value, the Parquet files that make
up the partition. Readers take the file list from the manifest, never from a directory listing.

Writing is copy-on-write at partition granularity:

1. Spark writes the new content of the replaced partitions under ``_staging/<token>/``
   (partial output of a crashed job stays there);
2. the driver moves the staged files next to the live ones under fresh names
   (``<table>/<key>=<value>/part-<version>-<n>.parquet``) and fsyncs them;
3. the new manifest is written to a temporary file, fsynced and renamed over ``_manifest.json``
   -- this rename is the commit;
4. files no longer listed (the replaced versions) and the staging directory are deleted.

A crash before step 3 leaves the previous manifest, which lists only files that still exist;
the next :meth:`ManifestStore.recover` deletes every unlisted file and the staging area. A crash
after step 3 leaves garbage that the same recovery deletes. So a store always reads as either
the state before or the state after a transaction, and nothing listed is ever deleted.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from .locking import StoreBusyError, warehouse_busy, warehouse_lock

log = logging.getLogger(__name__)

__all__ = [
    "MANIFEST_NAME",
    "STAGING_DIR",
    "ManifestStore",
    "StoreBusyError",
    "TableSpec",
    "Transaction",
    "atomic_write_json",
    "warehouse_busy",
    "warehouse_lock",
]

MANIFEST_NAME = "_manifest.json"
STAGING_DIR = "_staging"
FORMAT = 1


@dataclass(frozen=True)
class TableSpec:
    """One partitioned table of a store: files under ``<root>/<subdir>/<key>=<value>/``."""

    name: str
    subdir: str  # "" = the store root itself
    key: str  # partition column (a string column written as the directory name)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` to ``path`` atomically and durably (temp file, fsync, rename)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(payload, handle, sort_keys=True, separators=(",", ":"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class Manifest:
    """The parsed manifest of a store (mutable copy; committed by :class:`Transaction`)."""

    def __init__(self, payload: Mapping[str, Any], tables: Sequence[TableSpec]) -> None:
        self.version: int = int(payload.get("version", 0))
        self.meta: dict[str, Any] = dict(payload.get("meta", {}))
        raw_tables = payload.get("tables", {})
        self.tables: dict[str, dict[str, dict[str, Any]]] = {
            spec.name: {k: dict(v) for k, v in raw_tables.get(spec.name, {}).items()}
            for spec in tables
        }

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": self.version, "meta": self.meta, "tables": self.tables}

    def partitions(self, table: str) -> dict[str, dict[str, Any]]:
        return self.tables[table]

    def rows(self, table: str, values: Iterable[str] | None = None) -> int:
        parts = self.tables[table]
        keys = parts.keys() if values is None else [v for v in values if v in parts]
        return sum(int(parts[k].get("rows", 0)) for k in keys)


class ManifestStore:
    """A directory of manifest-listed, partitioned Parquet tables (see the module docstring)."""

    def __init__(self, root: Path, tables: Sequence[TableSpec]) -> None:
        self.root = root
        self.specs = {spec.name: spec for spec in tables}

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_NAME

    def table_dir(self, table: str) -> Path:
        spec = self.specs[table]
        return self.root / spec.subdir if spec.subdir else self.root

    def load(self) -> Manifest:
        try:
            payload = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            payload = {}
        if payload and payload.get("format") != FORMAT:
            raise RuntimeError(f"{self.manifest_path}: unsupported manifest format")
        return Manifest(payload, list(self.specs.values()))

    # -- recovery ------------------------------------------------------------------------------

    def recover(self) -> list[Path]:
        """Delete the staging area and every Parquet file the manifest does not list.

        Run before each transaction (under the warehouse lock): it removes what a crashed run
        left behind. Returns the deleted paths.
        """
        removed: list[Path] = []
        staging = self.root / STAGING_DIR
        if staging.exists():
            shutil.rmtree(staging)
            removed.append(staging)
        for tmp in self.root.glob(f".{MANIFEST_NAME}.*.tmp"):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
        manifest = self.load()
        for name, spec in self.specs.items():
            listed = {
                self.root / f
                for part in manifest.partitions(name).values()
                for f in part.get("files", [])
            }
            removed += self._remove_unlisted(self.table_dir(name).glob(f"{spec.key}=*"), listed)
        if removed:
            log.info("%s: removed %d leftover paths", self.root, len(removed))
        return removed

    @staticmethod
    def _remove_unlisted(part_dirs: Iterable[Path], listed: set[Path]) -> list[Path]:
        """Delete what the partition folders hold beyond ``listed``; drop folders left empty."""
        removed: list[Path] = []
        for part_dir in part_dirs:
            if not part_dir.is_dir():
                continue
            for path in part_dir.iterdir():
                if path not in listed:
                    if path.is_dir():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
                    removed.append(path)
            if not any(part_dir.iterdir()):
                part_dir.rmdir()
        return removed

    # -- reading -------------------------------------------------------------------------------

    def paths(
        self, table: str, values: Iterable[str] | None = None, manifest: Manifest | None = None
    ) -> list[str]:
        manifest = manifest or self.load()
        parts = manifest.partitions(table)
        keys = sorted(parts) if values is None else sorted(set(values) & parts.keys())
        return [str(self.root / f) for k in keys for f in parts[k].get("files", [])]

    def read(
        self,
        spark: SparkSession,
        table: str,
        schema: StructType,
        values: Iterable[str] | None = None,
        manifest: Manifest | None = None,
    ) -> DataFrame:
        """The table (or the given partitions) as a DataFrame with exactly ``schema``."""
        files = self.paths(table, values, manifest)
        if not files:
            return spark.createDataFrame([], schema)
        return spark.read.schema(schema).parquet(*files).select(*schema.fieldNames())

    def transaction(self, manifest: Manifest | None = None) -> Transaction:
        return Transaction(self, manifest or self.load())


class Transaction:
    """Replace whole partitions of one or more tables of a store, then commit atomically."""

    def __init__(self, store: ManifestStore, manifest: Manifest) -> None:
        self.store = store
        self.manifest = manifest
        self.version = manifest.version + 1
        self.token = f"{self.version:08d}-{uuid.uuid4().hex[:12]}"
        self.staging = store.root / STAGING_DIR / self.token
        self._replace: dict[str, set[str]] = {}
        self._written: dict[str, Path] = {}

    def staged_dir(self, table: str) -> Path:
        return self.staging / table

    def write(self, table: str, df: DataFrame, replace: Iterable[str]) -> None:
        """Stage ``df`` (which holds the partition column) as the new content of ``replace``.

        Every partition value in ``replace`` is replaced by the rows of ``df`` with that value
        (or dropped when there are none); values of ``df`` outside ``replace`` are an error.
        """
        spec = self.store.specs[table]
        if table in self._written:
            raise RuntimeError(f"table {table} already written in this transaction")
        target = self.staged_dir(table)
        target.parent.mkdir(parents=True, exist_ok=True)
        df.write.mode("errorifexists").partitionBy(spec.key).parquet(str(target))
        self._written[table] = target
        self._replace[table] = set(replace)
        unexpected = set(self._staged_files(table)) - self._replace[table]
        if unexpected:
            raise RuntimeError(f"{table}: rows outside the replaced partitions: {unexpected}")

    def read_staged(self, spark: SparkSession, table: str, schema: StructType) -> DataFrame:
        files = [str(p) for paths in self._staged_files(table).values() for p in paths]
        if not files:
            return spark.createDataFrame([], schema)
        return spark.read.schema(schema).parquet(*files).select(*schema.fieldNames())

    def _staged_files(self, table: str) -> dict[str, list[Path]]:
        spec = self.store.specs[table]
        target = self._written.get(table)
        found: dict[str, list[Path]] = {}
        if target is None or not target.exists():
            return found
        for part_dir in target.glob(f"{spec.key}=*"):
            value = unquote(part_dir.name.split("=", 1)[1])
            files = sorted(p for p in part_dir.iterdir() if p.name.endswith(".parquet"))
            if files:
                found[value] = files
        return found

    def commit(self, meta: Mapping[str, Any] | None = None) -> Manifest:
        """Publish the staged partitions and ``meta`` (merged into the manifest's meta)."""
        store, manifest = self.store, self.manifest
        for table in self._written:
            spec = store.specs[table]
            staged = self._staged_files(table)
            parts = manifest.partitions(table)
            for value in sorted(self._replace[table]):
                files = staged.get(value, [])
                if not files:
                    parts.pop(value, None)
                    continue
                dest_dir = store.table_dir(table) / f"{spec.key}={value}"
                dest_dir.mkdir(parents=True, exist_ok=True)
                names: list[str] = []
                rows = 0
                for n, src in enumerate(files):
                    dest = dest_dir / f"part-{self.version:08d}-{n:05d}.parquet"
                    rows += pq.read_metadata(src).num_rows
                    _fsync_file(src)
                    os.replace(src, dest)
                    names.append(str(dest.relative_to(store.root)))
                _fsync_dir(dest_dir)
                parts[value] = {"files": names, "rows": rows, "version": self.version}
        manifest.version = self.version
        if meta:
            manifest.meta.update(meta)
        store.root.mkdir(parents=True, exist_ok=True)
        atomic_write_json(store.manifest_path, manifest.to_json())
        store.recover()
        return manifest

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
