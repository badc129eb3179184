"""A delivery archive (ADR 062) written by the server's own writer, and the check of the
pipeline's delivery windows against the same buckets merged by hand and read with the server's
percentile function. Shared by the unit Spark run of tests/unit/test_spark_watched.py (its one
pipeline run reads all three families), so no other Spark run is needed for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pushgrid.metrics.archive import DELIVERY, ArchiveWriter
from pushgrid.metrics.window_spec import WINDOWS, window_start
from pushgrid.ops.delivery import bucket_text, percentiles, text_counts
from pushgrid.protocol.latency import BUCKET_COUNT
from pushgrid.spark_stats.delivery import DELIVERY_KEYS, DELIVERY_VALUES
from pushgrid.spark_stats.results import PipelineResult

SERIES = ("member", "pattern:/a/*")
GAPS = 2  # the loss-only line's gaps, every line


@dataclass
class Seen:
    """What the archive holds up to the as-of second, per (scope, series) and second."""

    buckets: dict[tuple[str, str], dict[int, list[int]]] = field(default_factory=dict)
    gaps: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)


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


def write_delivery_archive(
    root: Path, nodes: Sequence[str], start: int, end: int, as_of: int
) -> Seen:
    """Lines every 7th second per node (a client reports every few seconds), two series and a
    loss-only line (no bucket); returns the buckets of seconds up to ``as_of``, per node scope
    and for the cluster (the nodes added)."""
    writers = {
        n: ArchiveWriter(root, n, DELIVERY_VALUES, prefix=DELIVERY, keys=DELIVERY_KEYS)
        for n in nodes
    }
    seen = Seen()
    for ts in range(start, end + 1):
        for k, (node, writer) in enumerate(writers.items()):
            if (ts + k) % 7:
                continue
            batch = []
            for j, series in enumerate(SERIES):
                counts = _counts(ts, k, j)
                batch.append(((series, bucket_text(counts)), {"count": float(sum(counts))}))
                if ts <= as_of:
                    for scope in (f"node:{node}", "cluster"):
                        cur = seen.buckets.setdefault((scope, series), {})
                        cur[ts] = [
                            a + b
                            for a, b in zip(cur.get(ts, [0] * BUCKET_COUNT), counts, strict=True)
                        ]
            batch.append((("member", ""), {"count": 0.0, "gaps": float(GAPS)}))
            if ts <= as_of:
                for scope in (f"node:{node}", "cluster"):
                    gaps = seen.gaps.setdefault((scope, "member"), {})
                    gaps[ts] = gaps.get(ts, 0) + GAPS
            writer.write_lines(ts, batch)
    for writer in writers.values():
        writer.close()
    return seen


def check_delivery_windows(result: PipelineResult, seen: Seen, as_of: int) -> None:
    """Every window of every (scope, series): the merged buckets and their percentiles, and the
    clients' gaps (the loss-only lines) added up."""
    assert result.delivery_stats is not None
    got = {(r.scope, r.series, r.window): r for r in result.delivery_stats.itertuples(index=False)}
    assert {(s, x) for s, x, _ in got} == set(seen.buckets)
    for (scope, series), seconds in seen.buckets.items():
        for w in WINDOWS:
            merged = [0] * BUCKET_COUNT
            lo = window_start(w, as_of)
            for ts, counts in seconds.items():
                if lo <= ts <= as_of:
                    merged = [a + b for a, b in zip(merged, counts, strict=True)]
            row = got[(scope, series, w.name)]
            key = (scope, series, w.name)
            assert row.as_of == as_of
            assert row.count == sum(merged), key
            assert text_counts(row.buckets) == merged, key
            for name, want in percentiles(merged).items():
                value = getattr(row, name)
                assert (pd.isna(value) and want is None) or value == want, (key, name, value)
            gaps = seen.gaps.get((scope, series), {})
            want_gaps = sum(n for ts, n in gaps.items() if lo <= ts <= as_of)
            assert row.gaps == want_gaps, (key, row.gaps, want_gaps)
            assert (row.duplicates, row.resyncs, row.recovered, row.recovery_failed) == (0,) * 4
    assert any(r.gaps > 0 for r in got.values())
    assert any(r.p999 == float("inf") for r in got.values())  # the unbounded bucket
