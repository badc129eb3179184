"""The delivery latency family through the statistics pipeline (ADR 062).

Pure transforms against hand-computed frames (the explode of the archive's bucket text, the
percentiles of merged window sums), then the whole pipeline over an archive written by the
server's own writer, against windows merged by hand from the raw lines and read with the
server's percentile function (``ops.delivery.percentiles``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from pushgrid.metrics.archive import DELIVERY, ArchiveWriter
from pushgrid.metrics.window_spec import HOUR, MINUTE, WINDOWS, window_start
from pushgrid.ops.delivery import bucket_text, percentiles, text_counts
from pushgrid.protocol.latency import BUCKET_COUNT, UPPER
from pushgrid.server.monitoring.delivery_view import ARCHIVE_COLUMNS, ARCHIVE_KEYS
from pushgrid.spark_stats.delivery import (
    DELIVERY_COLUMNS,
    DELIVERY_KEYS,
    DELIVERY_VALUES,
    delivery_scope_seconds,
    delivery_windows,
)
from pushgrid.spark_stats.families import DELIVERY_FAMILY
from pushgrid.spark_stats.pipeline import run_pipeline

pytestmark = pytest.mark.spark

AS_OF = 1_795_348_800 + 2 * HOUR + 20 * MINUTE + 34  # 2026-11-22 14:20:34 UTC
NODES = ("m1", "m 2")


def test_the_family_reads_what_the_server_writes() -> None:
    assert (DELIVERY_KEYS, DELIVERY_VALUES) == (ARCHIVE_KEYS, ARCHIVE_COLUMNS)
    assert DELIVERY_FAMILY.header == "ts,node,scope,buckets,count," + ",".join(ARCHIVE_COLUMNS[1:])


def test_scope_seconds_explode_buckets_and_add_nodes(spark: SparkSession) -> None:
    rows = [
        (10, "a", "member", "30:2 31:5", 7, 0, 0, 0, 0, 0),
        (10, "b", "member", "31:1  40:3", 4, 0, 0, 0, 0, 0),  # two spaces: still two items
        (10, "b", "leg:engine", "5:9", 9, 0, 0, 0, 0, 0),
        (11, "a", "member", "30:1 x:2 99:4 7 8:0", 1, 0, 0, 0, 0, 0),  # bad items dropped
    ]
    frame = spark.createDataFrame(rows, DELIVERY_FAMILY.schema)
    got = sorted(tuple(r) for r in delivery_scope_seconds(frame).collect())
    expected = sorted(
        [
            ("node:a\tmember\t30", 10, 2),
            ("node:a\tmember\t31", 10, 5),
            ("node:b\tmember\t31", 10, 1),
            ("node:b\tmember\t40", 10, 3),
            ("node:b\tleg:engine\t5", 10, 9),
            ("node:a\tmember\t30", 11, 1),
            ("cluster\tmember\t30", 10, 2),
            ("cluster\tmember\t31", 10, 6),  # 5 (a) + 1 (b)
            ("cluster\tmember\t40", 10, 3),
            ("cluster\tleg:engine\t5", 10, 9),
            ("cluster\tmember\t30", 11, 1),
        ]
    )
    assert got == expected


def test_window_percentiles_from_merged_sums_by_hand() -> None:
    # window sums of the bucket series as window_series gives them (count = seconds with data)
    exact = pd.DataFrame.from_records(
        [
            ("cluster\tmember\t30", "n", "1m", AS_OF, 3, 60, 0, 30),
            ("cluster\tmember\t31", "n", "1m", AS_OF, 2, 39, 0, 30),
            ("cluster\tmember\t45", "n", "1m", AS_OF, 1, 1, 1, 1),
            ("cluster\tmember\t30", "n", "5m", AS_OF, 9, 200, 0, 30),
        ],
        columns=["scope", "indicator", "window", "as_of", "count", "sum", "sumsq", "max"],
    )
    got = delivery_windows(exact, AS_OF)
    assert list(got.columns) == list(DELIVERY_COLUMNS)
    assert len(got) == len(WINDOWS)  # one series, every window listed
    one = got[got["window"] == "1m"].iloc[0]
    # 100 latencies: 60 in bucket 30 (<= 10 ms), 39 in 31 (<= 12.589 ms), 1 in 45 (<= 316.228 ms)
    # nearest rank: p50 = 50th -> bucket 30; p90 = 90th -> 31; p99 = 99th -> 31; p99.9 -> 45
    assert (one["scope"], one["series"], one["count"]) == ("cluster", "member", 100)
    assert (one["p50"], one["p90"], one["p99"], one["p999"]) == (0.01, 0.012589, 0.012589, 0.316228)
    assert one["buckets"] == "30:60 31:39 45:1"
    five = got[got["window"] == "5m"].iloc[0]
    assert (five["count"], five["p50"], five["p999"], five["buckets"]) == (
        200,
        0.01,
        0.01,
        "30:200",
    )
    empty = got[got["window"] == "15mo"].iloc[0]
    assert empty["count"] == 0
    assert empty["buckets"] == ""
    assert pd.isna(empty["p50"])
    assert pd.isna(empty["p999"])


# -- the pipeline over a written archive ---------------------------------------------------------

Lines = dict[tuple[str, str, str], dict[int, list[int]]]  # (scope, node, series) -> ts -> counts


def _counts(ts: int, node: int, series: int) -> list[int]:
    """A deterministic, varied histogram: one to three non-empty buckets."""
    counts = [0] * BUCKET_COUNT
    base = 20 + (ts * 7 + node * 13 + series * 5) % 40
    counts[base] = 1 + ts % 5
    if ts % 3 == 0:
        counts[min(BUCKET_COUNT - 1, base + 9 + node)] = 1 + ts % 2
    if ts % 11 == 0:
        counts[BUCKET_COUNT - 1] = 1  # above 100 s: the unbounded bucket
    return counts


def write_archive(root: Path, start: int, end: int) -> dict[tuple[str, str], dict[int, list[int]]]:
    """Lines every 7th second per node (a client reports every few seconds), two series."""
    writers = {
        n: ArchiveWriter(root, n, DELIVERY_VALUES, prefix=DELIVERY, keys=DELIVERY_KEYS)
        for n in NODES
    }
    seen: dict[tuple[str, str], dict[int, list[int]]] = {}
    for ts in range(start, end + 1):
        for k, (node, writer) in enumerate(writers.items()):
            if (ts + k) % 7:
                continue
            batch = []
            for j, series in enumerate(("member", "pattern:/a/*")):
                counts = _counts(ts, k, j)
                values = {"count": float(sum(counts))}
                batch.append(((series, bucket_text(counts)), values))
                if ts <= AS_OF:
                    for scope in (f"node:{node}", "cluster"):
                        cur = seen.setdefault((scope, series), {}).setdefault(
                            ts, [0] * BUCKET_COUNT
                        )
                        for i, n in enumerate(counts):
                            cur[i] += n
            batch.append((("member", ""), {"count": 0.0, "gaps": 2.0}))  # loss only: no bucket
            writer.write_lines(ts, batch)
    for writer in writers.values():
        writer.close()
    return seen


def test_pipeline_windows_equal_buckets_merged_by_hand(spark: SparkSession, tmp_path: Path) -> None:
    start, end = AS_OF - HOUR - 40 * MINUTE, AS_OF + 60  # lines after T in the .open file
    seen = write_archive(tmp_path / "archive", start, end)
    result = run_pipeline(spark, tmp_path / "archive", tmp_path / "warehouse", AS_OF)
    assert result.delivery_stats is not None
    got = {(r.scope, r.series, r.window): r for r in result.delivery_stats.itertuples(index=False)}
    assert {(s, x) for s, x, _ in got} == set(seen)
    for (scope, series), seconds in seen.items():
        for w in WINDOWS:
            merged = [0] * BUCKET_COUNT
            lo = window_start(w, AS_OF)
            for ts, counts in seconds.items():
                if lo <= ts <= AS_OF:
                    merged = [a + b for a, b in zip(merged, counts, strict=True)]
            row = got[(scope, series, w.name)]
            assert row.as_of == AS_OF
            assert row.count == sum(merged), (scope, series, w.name)
            assert text_counts(row.buckets) == merged, (scope, series, w.name)
            expected = percentiles(merged)
            for name in ("p50", "p90", "p99", "p999"):
                value = getattr(row, name)
                want = expected[name]
                assert (pd.isna(value) and want is None) or value == want, (name, value, want)
    assert any(r.p999 == float("inf") for r in got.values())  # the unbounded bucket
    assert UPPER[0] / 1e6 <= min(r.p50 for r in got.values() if r.count)
    assert any(s.name == "delivery_windows" for s in result.stages)
