"""The delivery latency family's pure transforms (ADR 062) against hand-computed frames: the
explode of the archive's bucket text and the percentiles of merged window sums. The whole
pipeline over a delivery archive is checked in the one Spark run of test_spark_watched.py
(tests/delivery_archive.py: windows merged by hand, read with the server's percentiles)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from pushgrid.metrics.window_spec import HOUR, MINUTE, WINDOWS
from pushgrid.server.monitoring.delivery_view import ARCHIVE_COLUMNS, ARCHIVE_KEYS
from pushgrid.spark_stats.delivery import (
    DELIVERY_COLUMNS,
    DELIVERY_KEYS,
    DELIVERY_VALUES,
    delivery_scope_seconds,
    delivery_windows,
)
from pushgrid.spark_stats.families import DELIVERY_FAMILY

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


def test_loss_reports_become_series_of_their_kind_per_node_and_cluster(
    spark: SparkSession,
) -> None:
    """The clients' loss counts of a line (issue 33 item 2): one ``loss:<kind>`` part per kind
    with a count, beside the buckets; a loss-only line (no latencies) counts too."""
    rows = [
        (10, "a", "member", "30:2", 2, 3, 0, 1, 0, 0),  # 3 gaps, 1 resync
        (10, "b", "member", "", 0, 2, 1, 0, 0, 4),  # loss only: 2 gaps, 1 dup, 4 failed
        (11, "b", "pattern:/S/*", "", 0, 0, 0, 0, 5, 0),  # 5 recovered
    ]
    frame = spark.createDataFrame(rows, DELIVERY_FAMILY.schema)
    got = sorted(tuple(r) for r in delivery_scope_seconds(frame).collect())
    expected = sorted(
        [
            ("node:a\tmember\t30", 10, 2),
            ("cluster\tmember\t30", 10, 2),
            ("node:a\tmember\tloss:gaps", 10, 3),
            ("node:a\tmember\tloss:resyncs", 10, 1),
            ("node:b\tmember\tloss:gaps", 10, 2),
            ("node:b\tmember\tloss:duplicates", 10, 1),
            ("node:b\tmember\tloss:recovery_failed", 10, 4),
            ("node:b\tpattern:/S/*\tloss:recovered", 11, 5),
            ("cluster\tmember\tloss:gaps", 10, 5),  # 3 (a) + 2 (b)
            ("cluster\tmember\tloss:resyncs", 10, 1),
            ("cluster\tmember\tloss:duplicates", 10, 1),
            ("cluster\tmember\tloss:recovery_failed", 10, 4),
            ("cluster\tpattern:/S/*\tloss:recovered", 11, 5),
        ]
    )
    assert got == expected


def test_window_loss_totals_by_hand() -> None:
    exact = pd.DataFrame.from_records(
        [
            ("cluster\tmember\t30", "n", "1m", AS_OF, 1, 4, 0, 4),
            ("cluster\tmember\tloss:gaps", "n", "1m", AS_OF, 2, 5, 0, 3),
            ("cluster\tmember\tloss:gaps", "n", "5m", AS_OF, 3, 9, 0, 3),
            ("node:b\tpattern:/S/*\tloss:recovered", "n", "1m", AS_OF, 1, 5, 0, 5),
        ],
        columns=["scope", "indicator", "window", "as_of", "count", "sum", "sumsq", "max"],
    )
    got = delivery_windows(exact, AS_OF)
    assert len(got) == 2 * len(WINDOWS)  # both series, every window, loss-only included
    member = got[(got["scope"] == "cluster") & (got["series"] == "member")]
    one = member[member["window"] == "1m"].iloc[0]
    assert (one["count"], one["buckets"], one["gaps"], one["resyncs"]) == (4, "30:4", 5, 0)
    assert member[member["window"] == "5m"].iloc[0]["gaps"] == 9
    assert member[member["window"] == "5m"].iloc[0]["count"] == 0
    pattern = got[got["series"] == "pattern:/S/*"]
    first = pattern[pattern["window"] == "1m"].iloc[0]
    assert (first["scope"], first["count"], first["recovered"], first["gaps"]) == (
        "node:b",
        0,
        5,
        0,
    )
    assert pd.isna(first["p50"])
