"""The delivery latency family (ADR 062): windows of p50/p90/p99/p99.9 from merged buckets.

The archive's ``delivery-HH.csv`` lines (docs/archive.md) hold, per node, second and *series*
(``member``: the node's clients' end-to-end latency; ``leg:<leg>``: the server's own legs;
``pattern:<pattern>``: a watched pattern), the second's latency histogram as text
(``"31:120 32:7"``, protocol/latency.py buckets). Merging histograms is adding counts per
bucket, so the family reuses the pipeline's exact machinery (compaction, minute / hour / day
rollups, window assembly) with one trick: every *(scope, series, bucket)* is its own series
of one measure, ``n``, the bucket's count in that second. A window's exact ``sum`` of ``n`` is
then the window's merged count of that bucket, and the percentiles are read from the merged
counts by the very function the server uses (``protocol.latency.quantile_of``, nearest rank,
the bucket's upper bound, which ``ops.delivery.percentiles`` applies for /stats and the MBean):
one definition for every view and these windows.

Inside the Spark jobs the scope is ``<scope>\\t<series>\\t<bucket>`` (a tab is never in a
pattern, results.PATTERN_SEPARATOR); only non-empty buckets make rows, so the cost follows the
buckets clients actually hit (a few per series), not the 72 possible.

The clients' loss reports of the same lines (``gaps``, ``duplicates``, ``resyncs``,
``recovered``, ``recovery_failed``: issue 33 item 2) ride the same trick: ``<bucket>`` is then
``loss:<kind>`` and ``n`` the second's count, so a window's sum is the window's total of that
kind, per node and cluster-wide, for lines with buckets and for loss-only lines alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.protocol.latency import BUCKET_COUNT, LOSS_KINDS, PERCENTILES, quantile_of

from .exact import exact_int
from .results import CLUSTER_SCOPE, PATTERN_SEPARATOR

__all__ = [
    "DELIVERY_COLUMNS",
    "DELIVERY_KEYS",
    "DELIVERY_MEASURES",
    "DELIVERY_VALUES",
    "delivery_scope_seconds",
    "delivery_windows",
]

#: the archive's text columns after ``node`` and its integer columns (metrics/archive.py)
DELIVERY_KEYS: tuple[str, ...] = ("scope", "buckets")
DELIVERY_VALUES: tuple[str, ...] = ("count", *LOSS_KINDS)
#: the one measure the windows sum: a bucket's count in one second
DELIVERY_MEASURES: tuple[str, ...] = ("n",)
#: what the pipeline hands to the store, one row per scope, series, window and as-of
DELIVERY_COLUMNS: tuple[str, ...] = (
    "scope",
    "series",
    "window",
    "as_of",
    "count",
    *(name for name, _ in PERCENTILES),
    "buckets",
    *LOSS_KINDS,
)
_SEP = PATTERN_SEPARATOR
#: the third part of a loss series' scope: ``loss:<kind>`` (a bucket's is its index)
LOSS_PREFIX = "loss:"


def delivery_scope_seconds(samples: DataFrame) -> DataFrame:
    """Archive rows (``ts, node, scope, buckets, ...``) -> scope seconds ``scope, ts, n``.

    One row per node, series, second and non-empty bucket (scope
    ``node:<node>\\t<series>\\t<bucket>``) and one per cluster series, second and bucket (scope
    ``cluster\\t<series>\\t<bucket>``, the nodes' counts added: an exact merge). A malformed
    ``index:count`` item or an index outside the 72 buckets is dropped, never guessed.
    """
    items = samples.select(
        "ts",
        "node",
        F.col("scope").alias("series"),
        F.explode(F.split(F.trim(F.col("buckets")), " +")).alias("item"),
    )
    pairs = items.select(
        "ts",
        "node",
        "series",
        F.split(F.col("item"), ":").getItem(0).try_cast("int").alias("bucket"),
        F.split(F.col("item"), ":").getItem(1).try_cast("long").alias("n"),
        F.size(F.split(F.col("item"), ":")).alias("parts"),
    ).where((F.col("parts") == 2) & F.col("bucket").between(0, BUCKET_COUNT - 1) & (F.col("n") > 0))
    buckets = pairs.select(
        "ts", "node", "series", F.col("bucket").cast("string").alias("part"), "n"
    )
    kinds = F.array(
        *(F.struct(F.lit(LOSS_PREFIX + k).alias("part"), F.col(k).alias("n")) for k in LOSS_KINDS)
    )
    losses = (
        samples.select("ts", "node", F.col("scope").alias("series"), F.explode(kinds).alias("x"))
        .select("ts", "node", "series", "x.part", F.col("x.n").cast("long").alias("n"))
        .where(F.col("n") > 0)
    )
    parts = buckets.unionByName(losses)
    nodes = parts.select(
        F.concat_ws(
            _SEP, F.concat(F.lit("node:"), F.col("node")), F.col("series"), F.col("part")
        ).alias("scope"),
        "ts",
        "n",
    )
    cluster = parts.groupBy("series", "part", "ts").agg(F.sum("n").cast("long").alias("n"))
    cluster = cluster.select(
        F.concat_ws(_SEP, F.lit(CLUSTER_SCOPE), F.col("series"), F.col("part")).alias("scope"),
        "ts",
        "n",
    )
    return nodes.unionByName(cluster)


def delivery_windows(exact: pd.DataFrame, as_of: int) -> pd.DataFrame:
    """Window aggregates of the bucket series (``transforms.EXACT_COLUMNS``, scope
    ``<scope>\\t<series>\\t<bucket>``, measure ``n``) -> ``DELIVERY_COLUMNS`` as of ``as_of``.

    Per scope, series and window the bucket sums are the merged histogram; ``count`` is its
    total and the percentiles are ``quantile_of`` of it at ``PERCENTILES`` (seconds, the
    bucket's upper bound; ``inf`` above the last bound), as ``ops.delivery.percentiles``.
    Every window of a series that has data in any window is listed: a window without samples
    has ``count`` 0 and no percentiles. The ``loss:<kind>`` parts are the window's totals of
    each loss kind (``LOSS_KINDS`` columns, 0 when none).
    """
    merged: dict[tuple[str, str], dict[str, list[int]]] = {}
    lost: dict[tuple[str, str, str], dict[str, int]] = {}
    for scope, window, total in _bucket_sums(exact):
        head, series, part = scope.split(_SEP)
        windows = merged.setdefault((head, series), {})
        if part.startswith(LOSS_PREFIX):
            kind = part.removeprefix(LOSS_PREFIX)
            per_kind = lost.setdefault((head, series, window), {})
            per_kind[kind] = per_kind.get(kind, 0) + total
            continue
        windows.setdefault(window, [0] * BUCKET_COUNT)[int(part)] += total
    rows: list[tuple[Any, ...]] = []
    for (scope, series), windows in sorted(merged.items(), key=_cluster_first):
        for window in WINDOW_NAMES:
            counts = windows.get(window, [0] * BUCKET_COUNT)
            total = sum(counts)
            quantiles = [quantile_of(counts, total, q) for _, q in PERCENTILES]
            loss = lost.get((scope, series, window), {})
            losses = [loss.get(kind, 0) for kind in LOSS_KINDS]
            rows.append(
                (scope, series, window, int(as_of), total, *quantiles, _text(counts), *losses)
            )
    return pd.DataFrame.from_records(rows, columns=list(DELIVERY_COLUMNS))


def _text(counts: list[int]) -> str:
    """The archive's and the MBean's bucket text (``ops.delivery.bucket_text``, which the
    pipeline may not import: tests/unit/test_import_rules.py; the unit tests read it back with
    ``ops.delivery.text_counts``)."""
    return " ".join(f"{i}:{n}" for i, n in enumerate(counts) if n)


def _bucket_sums(exact: pd.DataFrame) -> Iterable[tuple[str, str, int]]:
    frame = exact.loc[:, ["scope", "window", "sum"]]
    for scope, window, total in frame.itertuples(index=False, name=None):
        yield str(scope), str(window), exact_int(total)


def _cluster_first(item: tuple[tuple[str, str], Any]) -> tuple[bool, str, str]:
    scope, series = item[0]
    return (scope != CLUSTER_SCOPE, scope, series)
