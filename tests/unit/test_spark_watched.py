"""Watched patterns through the statistics pipeline (ADR 030), checked against numpy.

The archive is written by the server's own writer (metrics.archive.ArchiveWriter, ``watched``
prefix): two nodes (one with a space), two patterns (one with a comma and quotes, so the CSV
quoting matters), a pattern added at run time on one node only, a pattern unwatched for five
minutes on the other (no lines), closed hours and the ``.open`` current hour holding lines after
the as-of second. Expected statistics are computed from the raw lines: per node, and for the
cluster the sum over the nodes that have a line for the pattern at that second (the largest
node's ``subjects``: members share subjects).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")

from delivery_archive import Seen, check_delivery_windows, write_delivery_archive
from pyspark.sql import SparkSession

from pushgrid.metrics import sqlstore
from pushgrid.metrics.archive import WATCHED, ArchiveWriter
from pushgrid.metrics.watched import WATCH_NAMES
from pushgrid.metrics.window_spec import HOUR, MINUTE, WINDOWS, window_start
from pushgrid.spark_stats.pipeline import run_pipeline
from pushgrid.spark_stats.results import WATCHED_COLUMNS, PipelineResult

pytestmark = pytest.mark.spark

AS_OF = 1_795_348_800 + 2 * HOUR + 20 * MINUTE + 34  # 2026-11-22 14:20:34 UTC
START = AS_OF - HOUR - 40 * MINUTE
END = AS_OF + 60  # lines after the as-of second, in the .open file: never counted
NODES = ("m1", "m 2")
STOCKS, FX = "/Stocks/*", '/Fx/"a,b"/*'
Lines = dict[tuple[str, str], dict[int, tuple[int, ...]]]  # (pattern, scope) -> ts -> values


def _present(node: str, pattern: str, ts: int) -> bool:
    if pattern == FX:  # added at run time on m1 only, 40 minutes before the as-of
        return node == "m1" and ts >= AS_OF - 40 * MINUTE
    # unwatched for five minutes on "m 2"
    return not (node == "m 2" and AS_OF - HOUR <= ts < AS_OF - HOUR + 5 * MINUTE)


def write_archive(root: Path) -> Lines:
    rng = np.random.default_rng(25)
    writers = {
        n: ArchiveWriter(root, n, WATCH_NAMES, prefix=WATCHED, keys=("pattern",)) for n in NODES
    }
    lines: Lines = {}
    for ts in range(START, END + 1):
        for node, writer in writers.items():
            batch = []
            for pattern in (STOCKS, FX):
                if not _present(node, pattern, ts):
                    continue
                values = tuple(int(v) for v in rng.integers(0, 5_000, len(WATCH_NAMES)))
                batch.append(((pattern,), dict(zip(WATCH_NAMES, values, strict=True))))
                if ts <= AS_OF:
                    lines.setdefault((pattern, f"node:{node}"), {})[ts] = values
                    cluster = lines.setdefault((pattern, "cluster"), {})
                    old = cluster.get(ts, (0,) * len(WATCH_NAMES))
                    cluster[ts] = tuple(
                        max(a, b) if name == "subjects" else a + b
                        for name, a, b in zip(WATCH_NAMES, old, values, strict=True)
                    )
            if batch:
                writer.write_lines(ts, batch)
    for writer in writers.values():
        writer.close()
    return lines


def expected_stats(lines: Lines) -> dict[tuple[str, str, str, str], tuple[Any, ...]]:
    out: dict[tuple[str, str, str, str], tuple[Any, ...]] = {}
    for (pattern, scope), rows in lines.items():
        ts = np.array(sorted(rows), dtype=np.int64)
        values = np.array([rows[t] for t in ts.tolist()], dtype=np.int64)
        for w in WINDOWS:
            a = np.searchsorted(ts, window_start(w, AS_OF), "left")
            for k, name in enumerate(WATCH_NAMES):
                x = values[a:, k]
                key = (pattern, scope, name, w.name)
                if len(x) == 0:
                    out[key] = (0, None, None, None)
                else:
                    std = float(np.std(x.astype(np.float64)))
                    out[key] = (len(x), float(x.max()), int(x.sum()) / len(x), std)
    return out


@dataclass
class Run:
    lines: Lines
    result: PipelineResult
    warehouse: Path
    delivery: Seen  # the delivery family's buckets (ADR 062), read by the same run


@pytest.fixture(scope="module")
def watched_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("watched")
    lines = write_archive(root / "archive")
    delivery = write_delivery_archive(root / "archive", NODES, START, END, AS_OF)
    result = run_pipeline(spark, root / "archive", root / "warehouse", AS_OF)
    return Run(lines, result, root / "warehouse", delivery)


def test_pattern_windows_match_numpy_on_raw_lines(watched_run: Run) -> None:
    stats = watched_run.result.watched_stats
    assert stats is not None
    assert tuple(stats.columns) == WATCHED_COLUMNS
    got = {
        (r.pattern, r.scope, r.indicator, r.window): (r.count, r.max, r.avg, r.stddev)
        for r in stats.itertuples(index=False)
    }
    expected = expected_stats(watched_run.lines)
    assert set(got) == set(expected)
    for key, (count, maximum, avg, std) in expected.items():
        g_count, g_max, g_avg, g_std = got[key]
        assert g_count == count, key
        if count == 0:
            assert all(v is None or math.isnan(v) for v in (g_max, g_avg, g_std)), key
            continue
        assert (g_max, g_avg) == (maximum, avg), key
        assert math.isclose(g_std, std, rel_tol=1e-9, abs_tol=1e-9), key
    # the run-time pattern: one node, 40 minutes of 60 in its 1-hour window
    fx = got[(FX, "cluster", "subscribers", "1h")]
    assert fx[0] == 40 * MINUTE + 1  # the 1h window reaches back past the pattern's start
    assert (FX, "node:m 2", "subscribers", "1m") not in got


def test_delivery_windows_equal_buckets_merged_by_hand(watched_run: Run) -> None:
    """ADR 062: the delivery family of the same run (closed hours, the .open hour with lines
    after T, the unbounded bucket, loss-only lines skipped)."""
    check_delivery_windows(watched_run.result, watched_run.delivery, AS_OF)


def test_stages_of_the_three_families(watched_run: Run) -> None:
    names = [s.name for s in watched_run.result.stages]
    assert names == [
        "compaction",
        "rollups",
        "windows",
        "watched_compaction",
        "watched_rollups",
        "watched_windows",
        "delivery_compaction",
        "delivery_rollups",
        "delivery_windows",
    ]
    stages = {s.name: s for s in watched_run.result.stages}
    closed = sum(1 for rows in watched_run.lines.values() for t in rows if t < AS_OF - AS_OF % HOUR)
    node_closed = sum(
        1
        for (_, scope), rows in watched_run.lines.items()
        if scope != "cluster"
        for t in rows
        if t < AS_OF - AS_OF % HOUR
    )
    assert 0 < node_closed < closed
    assert stages["watched_compaction"].output_rows == node_closed
    assert (watched_run.warehouse / "watched" / "samples" / "_manifest.json").exists()


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Any]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    sqlstore.upgrade(url)
    engine = sqlstore.make_engine(url)
    with sqlstore.make_session_factory(engine)() as s:
        yield s
    engine.dispose()


def test_pattern_windows_stored_and_read_back(watched_run: Run, session: Any) -> None:
    run_id = sqlstore.start_run(session, master="local[2]").id
    written = sqlstore.write_results(session, run_id, watched_run.result)
    stats = watched_run.result.watched_stats
    assert stats is not None
    assert written.watched_stats == len(stats)
    rows = sqlstore.watched_window_stats(session, FX)
    assert {r.scope for r in rows} == {"cluster", "node:m1"}
    expected = stats[stats["pattern"] == FX]
    assert len(rows) == len(expected)
    by_key = {(r.scope, r.indicator, r.window): r.count for r in rows}
    for r in expected.itertuples(index=False):
        assert by_key[(r.scope, r.indicator, r.window)] == r.count
    # a rerun of the same as-of replaces, never duplicates
    sqlstore.write_results(
        session, sqlstore.start_run(session, master="local[2]").id, watched_run.result
    )
    assert len(sqlstore.watched_window_stats(session, FX)) == len(expected)
