"""End-to-end statistics pipeline on a generated archive, checked against numpy on raw samples.

The archive has three nodes (one with a space in its name), per-second data for the last hours
with gaps, a restart (a 20-minute gap after which connected_users drops), values near 1e10,
sparse samples spread over 16 months (so the 15-month windows are exercised), samples on both
sides of every window boundary, malformed / duplicate / foreign-date lines, and ``.open`` files
(the current hour) holding samples before and after the as-of second.
"""

from __future__ import annotations

import hashlib
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from pushgrid.metrics.window_spec import DAY, HOUR, MINUTE, WINDOWS, window_start
from pushgrid.spark_stats import locking, manifest_store
from pushgrid.spark_stats.compaction import batches, compact, samples_store, scan_archive
from pushgrid.spark_stats.manifest_store import ManifestStore
from pushgrid.spark_stats.pipeline import run_pipeline
from pushgrid.spark_stats.results import CLUSTER_SCOPE, STAT_COLUMNS, PipelineResult
from pushgrid.spark_stats.rollups import (
    LEVEL_TABLES,
    consumed_version,
    rollup_store,
    update_rollups,
)
from pushgrid.spark_stats.synthetic_archive import archive_path, write_node_samples
from pushgrid.spark_stats.transforms import INDICATORS
from pushgrid.spark_stats.window_assembly import trend_points
from pushgrid.spark_stats.window_stage import compute_windows

pytestmark = pytest.mark.spark

AS_OF = 1_795_348_800 + 2 * HOUR + 20 * MINUTE + 34  # 2026-11-22 14:20:34 UTC
NODES = ("push-1", "push-2", "push 3")
SPARSE_DAYS = (
    2,
    3,
    9,
    17,
    26,
    40,
    55,
    71,
    90,
    118,
    140,
    163,
    201,
    240,
    277,
    310,
    344,
    390,
    431,
    470,
)
Samples = dict[str, dict[int, tuple[int, ...]]]  # node -> ts -> values (INDICATORS order)
Stats = tuple[Any, ...]  # count, max, avg, stddev


# -- archive generation --------------------------------------------------------------------------


def _values(rng: np.random.Generator, n: int, *, users: int) -> np.ndarray:
    cols = [
        users + np.cumsum(rng.integers(-3, 4, n)),
        rng.integers(0, 20, n),
        rng.integers(0, 20, n),
        rng.integers(0, 200, n),
        1_000_000 + rng.integers(0, 5000, n),
        3_000_000_000 + rng.integers(0, 10_000, n),
        10_000_000_000 + rng.integers(0, 1000, n),  # values near 1e10
    ]
    return np.column_stack(cols).astype(np.int64)


def _node_samples(rng: np.random.Generator, node: str, end: int) -> dict[int, tuple[int, ...]]:
    dense = np.arange(AS_OF - 3 * HOUR - 1000, end + 1)
    if node == "push-1":
        dense = dense[rng.random(len(dense)) > 0.03]
    elif node == "push-2":  # a 10-minute hole inside the 15-minute window
        dense = dense[(dense < AS_OF - 12 * MINUTE) | (dense >= AS_OF - 2 * MINUTE)]
    else:  # restart: down for 20 minutes
        dense = dense[(dense < AS_OF - 2 * HOUR - 20 * MINUTE) | (dense >= AS_OF - 2 * HOUR)]
    stamps = set(dense.tolist())
    # sparse: 4 random hours on each of 20 days spread over 16 months, 1-4 samples each
    # (the same days for every node: each date is a Parquet partition, and files cost more
    # than rows here)
    for day in SPARSE_DAYS:
        for hour in rng.integers(0, 24, 4):
            base = AS_OF - int(day) * DAY - int(hour) * HOUR
            stamps |= {base - int(s) for s in rng.integers(0, HOUR, rng.integers(1, 5))}
    if node == "push-2":  # one sample every 3 hours over the last 8 days (trend points)
        stamps |= {AS_OF - 4 * HOUR - k * 3 * HOUR - int(rng.integers(0, HOUR)) for k in range(64)}
    if node == "push-1":  # both sides of every window boundary as of AS_OF
        for w in WINDOWS:
            stamps |= {window_start(w, AS_OF) - 1, window_start(w, AS_OF)}
    if node == "push 3":  # ... and as of a trend point
        for p in (AS_OF - AS_OF % HOUR - 1 - 50 * HOUR,):
            for w in WINDOWS:
                stamps |= {window_start(w, p) - 1, window_start(w, p)}
    ts = np.array(sorted(stamps), dtype=np.int64)
    vals = _values(rng, len(ts), users=4000)
    if node == "push 3":  # after the restart connected_users starts again from zero
        after = ts >= AS_OF - 2 * HOUR
        vals[after, 0] = rng.integers(0, 50, int(after.sum()))
    return {int(t): tuple(int(v) for v in row) for t, row in zip(ts, vals, strict=True)}


def write_samples(root: Path, samples: Samples, open_hours: dict[str, int]) -> None:
    for node, rows in samples.items():
        ts = np.array(sorted(rows), dtype=np.int64)
        matrix = np.array([rows[t] for t in ts.tolist()], dtype=np.int64)
        write_node_samples(
            root,
            node,
            ts,
            {name: matrix[:, k] for k, name in enumerate(INDICATORS)},
            open_hours={open_hours[node]} if node in open_hours else (),
        )


def generate_archive(root: Path) -> tuple[Samples, dict[str, int]]:
    """Write the archive; return the samples a correct reader sees and each node's open hour."""
    rng = np.random.default_rng(20261122)
    ends = {"push-1": AS_OF + 50 * MINUTE, "push-2": AS_OF + 10 * MINUTE, "push 3": AS_OF + 300}
    samples = {node: _node_samples(rng, node, ends[node]) for node in NODES}
    open_hours = {node: max(rows) - max(rows) % HOUR for node, rows in samples.items()}
    write_samples(root, samples, open_hours)
    # junk a reader must drop, appended to a closed file of push-1 (hour 13)
    closed = archive_path(root, "push-1", AS_OF - AS_OF % HOUR - HOUR)
    first_ts = min(t for t in samples["push-1"] if t >= AS_OF - AS_OF % HOUR - HOUR)
    n = len(INDICATORS)
    junk = [
        f"{first_ts},push-1," + ",".join(["7"] * n),  # duplicate second: the first line wins
        f"{first_ts + 1},push-1,12",  # torn line
        f"{first_ts + 2},push-1," + ",".join(["1.5"] * n),  # not an integer
        f"{first_ts + 3},push-1," + ",".join([""] * n),  # empty fields
        f"{AS_OF - 5 * DAY},push-1," + ",".join(["9"] * n),  # not this file's date
    ]
    with closed.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(junk) + "\n")
    return samples, open_hours


# -- the independent numpy reference -------------------------------------------------------------


@dataclass
class Scope:
    ts: np.ndarray
    values: np.ndarray  # (n, 7) int64


def reference_scopes(samples: Samples, as_of: int) -> dict[str, Scope]:
    frames = []
    scopes: dict[str, Scope] = {}
    for node, rows in samples.items():
        ts = np.array(sorted(t for t in rows if t <= as_of), dtype=np.int64)
        values = np.array([rows[t] for t in ts.tolist()], dtype=np.int64).reshape(-1, 7)
        scopes[f"node:{node}"] = Scope(ts, values)
        frames.append(pd.DataFrame(values, columns=list(INDICATORS)).assign(ts=ts))
    cluster = pd.concat(frames).groupby("ts").sum().sort_index()
    scopes[CLUSTER_SCOPE] = Scope(
        cluster.index.to_numpy(np.int64), cluster[list(INDICATORS)].to_numpy(np.int64)
    )
    return scopes


def reference_stats(scopes: dict[str, Scope], as_of: int) -> dict[tuple[str, str, str], Stats]:
    """(scope, indicator, window) -> (count, max, avg, stddev) from the raw samples."""
    out: dict[tuple[str, str, str], Stats] = {}
    for name, scope in scopes.items():
        for w in WINDOWS:
            a = np.searchsorted(scope.ts, window_start(w, as_of), "left")
            b = np.searchsorted(scope.ts, as_of, "right")
            for k, indicator in enumerate(INDICATORS):
                x = scope.values[a:b, k]
                if len(x) == 0:
                    out[(name, indicator, w.name)] = (0, None, None, None)
                    continue
                avg = int(x.sum()) / len(x)  # exact integer sum, correctly rounded mean
                std = float(np.std(x.astype(np.float64)))
                out[(name, indicator, w.name)] = (len(x), float(x.max()), avg, std)
    return out


def assert_stats_equal(row: Stats, expected: Stats, context: object) -> None:
    count, maximum, avg, std = row
    e_count, e_max, e_avg, e_std = expected
    assert count == e_count, context
    if e_count == 0:
        assert all(v is None or math.isnan(v) for v in (maximum, avg, std)), context
        return
    assert maximum == e_max, context
    assert avg == e_avg, context
    assert math.isclose(std, e_std, rel_tol=1e-9, abs_tol=1e-9), (context, std, e_std)


def parquet_rows(store: ManifestStore, table: str) -> pd.DataFrame:
    files = store.paths(table)
    if not files:
        return pd.DataFrame()
    frame = pq.ParquetDataset(files).read().to_pandas()
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


# -- fixtures ------------------------------------------------------------------------------------


@dataclass
class Run:
    archive: Path
    warehouse: Path
    samples: Samples
    open_hours: dict[str, int]
    result: PipelineResult
    progress: list[tuple[str, float]]


@pytest.fixture(scope="module")
def first_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("pipeline")
    archive, warehouse = root / "archive", root / "warehouse"
    samples, open_hours = generate_archive(archive)
    progress: list[tuple[str, float]] = []
    result = run_pipeline(spark, archive, warehouse, AS_OF, lambda m, f: progress.append((m, f)))
    return Run(archive, warehouse, samples, open_hours, result, progress)


# -- correctness ---------------------------------------------------------------------------------


def test_window_stats_match_numpy_on_raw_samples(first_run: Run) -> None:
    stats = first_run.result.window_stats
    assert tuple(stats.columns) == STAT_COLUMNS
    assert first_run.result.as_of == AS_OF
    assert (stats["as_of"] == AS_OF).all()
    expected = reference_stats(reference_scopes(first_run.samples, AS_OF), AS_OF)
    assert len(stats) == len(expected) == 4 * 7 * 12
    got = {
        (r.scope, r.indicator, r.window): (r.count, r.max, r.avg, r.stddev)
        for r in stats.itertuples(index=False)
    }
    assert got.keys() == expected.keys()
    for key, exp in expected.items():
        assert_stats_equal(got[key], exp, key)
    # the data really exercises what it should
    c15mo = {k: v[0] for k, v in expected.items() if k[2] == "15mo"}
    c5mo = {k: v[0] for k, v in expected.items() if k[2] == "5mo"}
    assert all(c15mo[k] > c5mo[(*k[:2], "5mo")] for k in c15mo)
    assert expected[("node:push-2", INDICATORS[0], "15m")][0] < 900 - 500  # the 10-minute hole
    assert got[(CLUSTER_SCOPE, INDICATORS[-1], "1m")][2] > 2.9e10


def test_trend_points_match_numpy_on_raw_samples(first_run: Run) -> None:
    trend = first_run.result.trend_points
    assert tuple(trend.columns) == STAT_COLUMNS
    scopes = reference_scopes(first_run.samples, AS_OF)
    first = min(min(rows) for rows in first_run.samples.values())
    points = trend_points(AS_OF, first)
    assert len(points) == 168
    assert points[-1] == AS_OF - AS_OF % HOUR - 1
    got = {
        (r.scope, r.indicator, r.window, r.as_of): (r.count, r.max, r.avg, r.stddev)
        for r in trend.itertuples(index=False)
    }
    expected: dict[tuple[Any, ...], Stats] = {}
    for p in points:
        for (scope, indicator, window), stats in reference_stats(scopes, p).items():
            if stats[0] > 0:
                expected[(scope, indicator, window, p)] = stats
    assert got.keys() == expected.keys()
    for key, exp in expected.items():
        assert_stats_equal(got[key], exp, key)


def test_stage_results_and_progress(first_run: Run) -> None:
    stages = {s.name: s for s in first_run.result.stages}
    assert list(stages) == ["compaction", "rollups", "windows"]
    closed_rows = sum(
        1
        for node, rows in first_run.samples.items()
        for t in rows
        if t - t % HOUR != first_run.open_hours[node]
    )
    # + the duplicated second, which parses but is dropped by the merge
    assert stages["compaction"].input_rows == closed_rows + 1
    assert stages["compaction"].output_rows == closed_rows
    assert stages["rollups"].input_rows == closed_rows
    assert stages["rollups"].output_rows > 0
    assert stages["windows"].output_rows == len(first_run.result.window_stats) + len(
        first_run.result.trend_points
    )
    assert first_run.progress[0][1] == 0.0
    assert first_run.progress[-1][1] == 1.0


def test_open_files_are_not_compacted(first_run: Run) -> None:
    store = samples_store(first_run.warehouse)
    inputs = store.load().meta["inputs"]
    assert inputs
    assert not any(rel.endswith(".open") for rel in inputs)
    rows = parquet_rows(store, "samples")
    assert not rows.duplicated(["node", "ts"]).any()
    for node, hour in first_run.open_hours.items():
        in_hour = rows[(rows["node"] == node) & (rows["ts"] // HOUR * HOUR == hour)]
        assert in_hour.empty, node
    # and what was compacted is exactly the closed hours
    expected = {
        (node, t)
        for node, rows_ in first_run.samples.items()
        for t in rows_
        if t - t % HOUR != first_run.open_hours[node]
    }
    assert set(zip(rows["node"], rows["ts"], strict=True)) == expected


def test_an_hour_that_closes_after_compaction_still_counts_in_the_windows(
    spark: SparkSession, first_run: Run, tmp_path: Path
) -> None:
    """A run across the top of an hour: compaction ran while the hour's files were ``.open``,
    the writer closed them before the window stage. Their seconds are in neither compacted
    samples nor ``.open`` files; the windows must still count them (a ``make cluster`` walk
    stored 1m-5h windows of count 0 beside the delivery windows of the same seconds)."""
    archive, warehouse = tmp_path / "archive", tmp_path / "warehouse"
    shutil.copytree(first_run.archive, archive)
    shutil.copytree(first_run.warehouse, warehouse)  # compacted and rolled up, as of AS_OF
    for node, hour in first_run.open_hours.items():  # the hour ends: the writer renames
        path = archive_path(archive, node, hour, open_=True)
        path.rename(path.with_name(path.name.removesuffix(".open")))
    windows = compute_windows(spark, archive, warehouse, AS_OF)
    expected = reference_stats(reference_scopes(first_run.samples, AS_OF), AS_OF)
    got = {
        (r.scope, r.indicator, r.window): (r.count, r.max, r.avg, r.stddev)
        for r in windows.window_stats.itertuples(index=False)
    }
    assert got.keys() == expected.keys()
    for key, exp in expected.items():
        assert_stats_equal(got[key], exp, key)


def test_a_file_closed_while_the_windows_read_it_is_read_again_closed(
    spark: SparkSession, first_run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer renames an ``.open`` file after the window stage listed it and before Spark
    read it (a fresh-clone run failed with FILE_NOT_EXIST): the stage scans again and counts
    the closed file's seconds."""
    from pushgrid.spark_stats import window_stage

    archive, warehouse = tmp_path / "archive", tmp_path / "warehouse"
    shutil.copytree(first_run.archive, archive)
    shutil.copytree(first_run.warehouse, warehouse)
    listed = window_stage._uncompacted
    scans: list[int] = []

    def listed_then_closed(*args: Any) -> list[Any]:
        files = listed(*args)
        scans.append(len(files))
        if len(scans) == 1:  # the writer closes the hour right after this scan
            for node, hour in first_run.open_hours.items():
                path = archive_path(archive, node, hour, open_=True)
                path.rename(path.with_name(path.name.removesuffix(".open")))
        return files

    monkeypatch.setattr(window_stage, "_uncompacted", listed_then_closed)
    windows = window_stage.compute_windows(spark, archive, warehouse, AS_OF)
    assert len(scans) == 2
    expected = reference_stats(reference_scopes(first_run.samples, AS_OF), AS_OF)
    got = {
        (r.scope, r.indicator, r.window): (r.count, r.max, r.avg, r.stddev)
        for r in windows.window_stats.itertuples(index=False)
    }
    assert got.keys() == expected.keys()
    for key, exp in expected.items():
        assert_stats_equal(got[key], exp, key)


# -- idempotency, incremental runs, crash recovery -------------------------------------------------


def test_second_run_changes_nothing(spark: SparkSession, first_run: Run) -> None:
    before = tree_digest(first_run.warehouse)
    again = compact(spark, first_run.archive, first_run.warehouse)
    assert again.files == 0
    assert again.stage.input_rows == again.stage.output_rows == 0
    rolled = update_rollups(spark, first_run.warehouse)
    assert rolled.hours == []
    assert rolled.stage.output_rows == 0
    assert tree_digest(first_run.warehouse) == before


def _advance_archive(
    archive: Path, samples: Samples, open_hours: dict[str, int]
) -> tuple[Samples, set[tuple[str, int]], dict[str, int]]:
    """Two hours later: open hours closed (and completed), new hours, a late file of push 3.

    Returns all samples, the (node, hour) of the closed files that are new or changed, and
    each node's open hour.
    """
    rng = np.random.default_rng(7)
    later: Samples = {node: dict(rows) for node, rows in samples.items()}
    new: Samples = {node: {} for node in NODES}
    for node in NODES:
        last = max(samples[node])
        for t in range(last + 1, AS_OF + 2 * HOUR + 100 + 1):
            new[node][t] = tuple(int(v) for v in _values(rng, 1, users=5000)[0])
    # a late file: push 3 reports an old hour where push-1 already had samples
    old_hour = max(t - t % HOUR for t in samples["push-1"] if t < AS_OF - 20 * DAY)
    for t in range(old_hour + 100, old_hour + 160):
        if t not in samples["push 3"]:
            new["push 3"][t] = tuple(int(v) for v in _values(rng, 1, users=10)[0])
    for node in NODES:
        # close the open file first (the writer renames it at its first sample of a later hour)
        path = archive_path(archive, node, open_hours[node], open_=True)
        path.rename(path.with_name(path.name.removesuffix(".open")))
        later[node].update(new[node])
    # write only the new samples: in the old open hour they are appended to the closed file
    final_open = {node: max(later[node]) - max(later[node]) % HOUR for node in NODES}
    changed = {("push 3", old_hour)} | {
        (node, h) for node in NODES for h in range(open_hours[node], final_open[node], HOUR)
    }
    for node, rows in new.items():
        ts = np.array(sorted(rows), dtype=np.int64)
        matrix = np.array([rows[t] for t in ts.tolist()], dtype=np.int64)
        write_node_samples(
            archive,
            node,
            ts,
            {name: matrix[:, k] for k, name in enumerate(INDICATORS)},
            open_hours={final_open[node]},
            append=True,
        )
    return later, changed, final_open


class Crash(RuntimeError):
    pass


def _crash_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(path: Path, payload: object) -> None:
        raise Crash(f"simulated crash before writing {path}")

    monkeypatch.setattr(manifest_store, "atomic_write_json", boom)


def _only_listed_files(store: ManifestStore) -> None:
    listed = {Path(p) for table in store.specs for p in store.paths(table)}
    assert set(store.root.rglob("*.parquet")) == listed


def test_crashes_then_incremental_run_equal_full_recomputation(
    spark: SparkSession, first_run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hours later (closed open files, new hours, a late file of an old hour), with a crash
    before each manifest commit and junk from an older crash, the incremental run equals a full
    recomputation from scratch -- and numpy."""
    archive, warehouse, fresh = tmp_path / "archive", tmp_path / "warehouse", tmp_path / "fresh"
    shutil.copytree(first_run.archive, archive)
    shutil.copytree(first_run.warehouse, warehouse)
    samples, changed, open_hours = _advance_archive(
        archive, first_run.samples, first_run.open_hours
    )
    in_changed_files = sum(
        1 for node, hour in changed for t in samples[node] if t - t % HOUR == hour
    )
    touched = {hour for _, hour in changed}
    in_touched_hours = sum(
        1
        for node, rows in samples.items()
        for t in rows
        if t - t % HOUR in touched and t - t % HOUR != open_hours[node]
    )
    as_of = AS_OF + 2 * HOUR + 5
    s_store, r_store = samples_store(warehouse), rollup_store(warehouse)
    s_version, r_version = s_store.load().version, r_store.load().version
    # junk of an older crash: a staging directory and an unlisted file in a partition
    junk = warehouse / "samples" / "_staging" / "00000009-dead" / "samples" / "date=2026-11-22"
    junk.mkdir(parents=True)
    (junk / "part-0.parquet").write_bytes(b"not parquet")
    stray = warehouse / "samples" / "date=2026-11-22" / "part-99999999-00000.parquet"
    stray.write_bytes(b"not parquet either")

    with monkeypatch.context() as patched:
        _crash_on_commit(patched)
        with pytest.raises(Crash):
            compact(spark, archive, warehouse)
    assert s_store.load().version == s_version  # the previous state is still in force
    assert not stray.exists()  # recovered before the batch

    compacted = compact(spark, archive, warehouse)  # resumes: redoes the batch
    _only_listed_files(s_store)
    assert not (warehouse / "samples" / "_staging").exists()
    # only the new and changed closed files were read
    assert compacted.files == len(changed)
    assert compacted.stage.input_rows == in_changed_files

    with monkeypatch.context() as patched:
        _crash_on_commit(patched)
        with pytest.raises(Crash):
            update_rollups(spark, warehouse)
    assert r_store.load().version == r_version

    incremental = run_pipeline(spark, archive, warehouse, as_of)
    _only_listed_files(r_store)
    stages = {s.name: s for s in incremental.stages}
    assert stages["compaction"].input_rows == 0  # nothing left to compact
    # only the samples of the touched hours (every node: the cluster sums) were rolled up
    assert stages["rollups"].input_rows == in_touched_hours
    assert in_touched_hours < first_run.result.stages[1].input_rows

    # the recomputation from scratch in small batches (whole dates, at most the largest date's
    # bytes each) and one rollup chunk per batch, each committed on its own
    closed = [f for f in scan_archive(archive) if f.closed]
    days = {f.day for f in closed}
    budget = max(sum(f.size for f in closed if f.day == day) for day in days)
    assert 1 < len(batches(closed, budget)) < len(days)
    batched = compact(spark, archive, fresh, batch_bytes=budget)
    assert batched.files == len(closed)
    assert samples_store(fresh).load().version == len(batches(closed, budget))
    update_rollups(spark, fresh, chunk_hours=1)
    assert rollup_store(fresh).load().version == len(batches(closed, budget))
    full = run_pipeline(spark, archive, fresh, as_of)
    assert [s.input_rows for s in full.stages[:2]] == [0, 0]  # everything was done already
    for table in LEVEL_TABLES:
        pd.testing.assert_frame_equal(
            parquet_rows(r_store, table), parquet_rows(rollup_store(fresh), table)
        )
    pd.testing.assert_frame_equal(
        parquet_rows(s_store, "samples"), parquet_rows(samples_store(fresh), "samples")
    )
    pd.testing.assert_frame_equal(incremental.window_stats, full.window_stats)
    pd.testing.assert_frame_equal(incremental.trend_points, full.trend_points)
    expected = reference_stats(reference_scopes(samples, as_of), as_of)
    for r in incremental.window_stats.itertuples(index=False):
        key = (r.scope, r.indicator, r.window)
        assert_stats_equal((r.count, r.max, r.avg, r.stddev), expected[key], key)


def test_change_map_keeps_only_hours_not_rolled_up(
    spark: SparkSession, first_run: Run, tmp_path: Path
) -> None:
    """After the rollups consumed a version, the next compaction drops its hours from the map."""
    archive, warehouse = tmp_path / "archive", tmp_path / "warehouse"
    shutil.copytree(first_run.archive, archive)
    shutil.copytree(first_run.warehouse, warehouse)
    s_store = samples_store(warehouse)
    assert len(s_store.load().meta["hours"]) > 24  # every hour of the first run
    late = (AS_OF - 30 * DAY) // HOUR * HOUR - 7 * HOUR  # a late file of an hour nobody had
    ts = np.array([late + 5, late + 6], dtype=np.int64)
    write_node_samples(archive, "push-1", ts, {i: np.array([1, 2]) for i in INDICATORS})
    compact(spark, archive, warehouse, prune_through=consumed_version(warehouse))
    manifest = s_store.load()
    assert manifest.meta["hours"] == {str(late): manifest.version}
    rolled = update_rollups(spark, warehouse)
    assert rolled.hours == [late]
    assert not rolled.full


def test_empty_archive_gives_empty_cluster_windows(spark: SparkSession, tmp_path: Path) -> None:
    result = run_pipeline(spark, tmp_path / "no-archive", tmp_path / "warehouse", AS_OF)
    stats = result.window_stats
    assert len(stats) == len(INDICATORS) * len(WINDOWS)
    assert set(stats["scope"]) == {CLUSTER_SCOPE}
    assert (stats["count"] == 0).all()
    assert stats[["max", "avg", "stddev"]].isna().all().all()
    assert result.trend_points.empty
    assert tuple(result.trend_points.columns) == STAT_COLUMNS
    assert [(s.input_rows, s.output_rows) for s in result.stages[:2]] == [(0, 0), (0, 0)]


def test_one_run_at_a_time(spark: SparkSession, tmp_path: Path) -> None:
    with locking.warehouse_lock(tmp_path), pytest.raises(locking.StoreBusyError):
        run_pipeline(spark, tmp_path / "archive", tmp_path, AS_OF)


def test_session_settings(spark: SparkSession) -> None:
    conf = spark.conf
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.getConf().get("spark.driver.host") == "127.0.0.1"
