"""Delivery latency windows through the real Spark run (ADR 062), checked inside the watched
patterns' archive -> Spark -> SQL -> admin API test (test_watched_subjects.py) so the suite
starts no other Spark run: a reporting subscriber there makes the server archive delivery
buckets, and the same pipeline run computes their windows.

The expected windows are merged by hand from the archive's lines (every line of the run is
inside the 15-minute window) and read with the server's own percentile function.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pushgrid.client import BackoffPolicy, PushgridClient
from pushgrid.metrics.archive import read_samples
from pushgrid.ops.delivery import percentiles, text_counts
from pushgrid.protocol.latency import BUCKET_COUNT

from .pgtest import DEFAULT_TIMEOUT, ServerProcess, eventually

FAST_RETRY = BackoffPolicy(base=0.05, quick_retries=20, jitter=0.0, cap=0.5, stable_after=0.0)


@asynccontextmanager
async def reporting_subscriber(server: ServerProcess, subject: str) -> AsyncIterator[list[Any]]:
    """A Python client subscribed to ``subject`` that reports its latencies every 0.5 s, once
    it has a clock offset (so every message it receives is measured); yields what it got."""
    received: list[Any] = []
    client = PushgridClient(
        [server.address],
        on_message=received.append,
        backoff=FAST_RETRY,
        proxy=None,
        report_interval=0.5,
    )
    try:
        await client.subscribe(subject)
        await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
        await eventually(lambda: client.clock_offset is not None, what="a clock offset")
        yield received
    finally:
        await client.close()


def delivery_lines(archive: Path) -> list[dict[str, str]]:
    return [row for path in archive.rglob("delivery-*.csv*") for row in read_samples(path)]


async def until_archived(archive: Path, series: str, n: int) -> list[dict[str, str]]:
    """The delivery lines once ``series`` holds ``n`` latencies (bounded wait)."""
    deadline = time.monotonic() + 3 * DEFAULT_TIMEOUT
    while True:
        rows = delivery_lines(archive)
        if sum(int(float(r["count"])) for r in rows if r["scope"] == series) == n:
            return rows
        assert time.monotonic() < deadline, f"{n} latencies of {series} not archived"
        await asyncio.sleep(0.2)


def check_delivery_windows(body: dict[str, Any], rows: list[dict[str, str]], node: str) -> None:
    """``GET /stats/delivery`` equals the archive's buckets merged by hand: for the node and
    the cluster (one node: the same), every series, the 15-minute window."""
    merged: dict[str, list[int]] = {}
    for row in rows:
        counts = merged.setdefault(row["scope"], [0] * BUCKET_COUNT)
        for index, n in enumerate(text_counts(row["buckets"])):
            counts[index] += n
    windows = {(i["scope"], i["series"], i["window"]): i for i in body["items"]}
    expected_series = {s for s, counts in merged.items() if sum(counts)}
    for scope in ("cluster", f"node:{node}"):
        assert {s for (sc, s, _) in windows if sc == scope} == expected_series, scope
        for series in expected_series:
            window = windows[(scope, series, "15m")]
            counts = merged[series]
            assert window["count"] == sum(counts), (scope, series)
            assert text_counts(window["buckets"]) == counts, (scope, series)
            for name, value in percentiles(counts).items():
                assert window[name] == value, (scope, series, name)
