"""Delivery truth end to end (ADR 048): the Python client measures each live update's latency
on the server's clock (ingress time in the message, clock offset from its pings), reports
histograms and loss counters; the server's /stats, Prometheus, the Delivery MBean and the
admin API show the same numbers; a broken report gets ``invalid_report`` and nothing else
changes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pushgrid.client import BackoffPolicy, Message, PushgridClient
from pushgrid.metrics.archive import read_samples
from pushgrid.ops.delivery import text_counts
from pushgrid.protocol.frames import Subscribed
from pushgrid.protocol.latency import BUCKET_COUNT, UPPER, bucket_of, quantile_of

from .pgtest import (
    DEFAULT_TIMEOUT,
    AdminHarness,
    ServerProcess,
    WsClient,
    eventually,
    jolokia_bulk,
    jolokia_exec,
    member_entry,
    monitor_http,
    parse_prometheus,
)

API = "/api/v1"
PATTERN = "/lat/*"
N = 40
FAST_RETRY = BackoffPolicy(base=0.05, quick_retries=20, jitter=0.0, cap=0.5, stable_after=0.0)


async def _delivery(server: ServerProcess) -> dict[str, Any]:
    async with monitor_http(server) as http:
        document = (await http.get("/stats", params={"format": "json"})).json()
    delivery: dict[str, Any] = document["delivery"]
    return delivery


async def until(read: Callable[[], Awaitable[dict[str, Any] | None]], what: str) -> dict[str, Any]:
    """Poll the async ``read`` until it returns something (bounded by DEFAULT_TIMEOUT)."""
    deadline = time.monotonic() + DEFAULT_TIMEOUT
    while True:
        found = await read()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {DEFAULT_TIMEOUT}s")
        await asyncio.sleep(0.1)


def _index(seconds: float) -> int:
    """The bucket whose upper bound a percentile reports."""
    return UPPER.index(round(seconds * 1e6))


def _subscriber(
    server: ServerProcess, received: list[Message], clock: Callable[[], float]
) -> PushgridClient:
    return PushgridClient(
        [server.address],
        on_message=received.append,
        backoff=FAST_RETRY,
        proxy=None,
        report_interval=0.5,
        wall_clock=clock,
    )


@pytest.mark.parametrize("skew", [-5.0, 0.0, 5.0])
async def test_reported_latency_matches_the_clients_on_every_view(
    server_factory: Callable[..., ServerProcess], tmp_path: Path, skew: float
) -> None:
    server = server_factory(**{"WatchedSubjects.Patterns": PATTERN})
    subject = "/lat/IBM"
    received: list[Message] = []
    client = _subscriber(server, received, lambda: time.time() + skew)
    publisher = await WsClient.connect(server)
    try:
        await client.subscribe(subject)
        await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
        await eventually(lambda: client.clock_offset is not None, what="a clock offset")
        offset = client.clock_offset
        assert offset is not None
        assert abs(offset + skew) < 0.5
        for i in range(N):
            await publisher.publish_ok(subject, f"m{i}")
            await asyncio.sleep(0.005 * (i % 4))
        await eventually(lambda: len(received) == N, what=f"{N} messages")
        latencies = [m.latency for m in received]
        assert all(x is not None and -0.05 < x < 2.0 for x in latencies), latencies
        mine = np.array(latencies, dtype=float) * 1e6

        async def reported() -> dict[str, Any] | None:
            delivery = await _delivery(server)
            return delivery if delivery["latency"]["count"] == N else None

        delivery = await until(reported, what=f"{N} latencies reported")
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            exact = float(np.quantile(mine, q, method="inverted_cdf"))
            assert abs(_index(delivery["latency"][name]) - bucket_of(exact)) <= 1, (name, exact)
        assert delivery["patterns"][PATTERN]["latency"]["count"] == N
        assert delivery["legs"]["publish_ack"]["count"] == N
        assert delivery["legs"]["engine"]["count"] == N
        assert delivery["reports"] >= 1
        assert delivery["rejected_reports"] == 0
        await _other_views(server, tmp_path, delivery)
        await _archived(server, delivery)
        await _meta_subject(server, delivery)
    finally:
        await client.close()
        await publisher.close()


async def _other_views(server: ServerProcess, tmp_path: Path, stats: dict[str, Any]) -> None:
    """Prometheus, the MBean and the admin API say what /stats says."""
    async with monitor_http(server) as http:
        samples = parse_prometheus((await http.get("/metrics")).text)
    # buckets only (the clients report no sums): the +Inf bucket is the count
    assert samples[("pushgrid_delivery_latency_seconds_bucket", (("le", "+Inf"),))] == N
    pattern_count = (
        "pushgrid_delivery_pattern_latency_seconds_bucket",
        (("le", "+Inf"), ("pattern", PATTERN)),
    )
    assert samples[pattern_count] == N
    async with monitor_http(server) as http:
        (answer,) = await jolokia_bulk(
            http,
            [{"type": "read", "mbean": "pushgrid:type=Delivery", "attribute": "LatencyP50"}],
        )
    assert answer["value"] == stats["latency"]["p50"]
    admin = AdminHarness(tmp_path / "admin", [member_entry("lat-1", server)])
    try:
        async with admin.client("viewer") as api:
            reply = await api.get(f"{API}/delivery/latency")
            assert reply.status_code == 200, reply.text
            body = reply.json()
            listed = await api.get(f"{API}/sessions")
            assert listed.status_code == 200, listed.text
            sessions = listed.json()["items"]
    finally:
        admin.close()
    # per client (the Clients page): the reporting subscriber's own median, the publisher that
    # reports nothing shows nothing (no number made up)
    (reporting,) = [s for s in sessions if s["delivery_latency_ms"] is not None]
    (silent,) = [s for s in sessions if s["delivery_latency_ms"] is None]
    assert reporting["delivery_latency_ms"] == round(stats["latency"]["p50"] * 1000, 3)
    assert reporting["lost_messages"] == 0
    assert silent["lost_messages"] is None
    (member,) = body["members"]
    assert member["reachable"]
    assert member["latency"]["p50"] == stats["latency"]["p50"]
    assert body["cluster"]["latency"]["count"] == N
    assert body["cluster"]["latency"]["p99"] == stats["latency"]["p99"]
    (pattern,) = body["cluster"]["patterns"]
    assert (pattern["pattern"], pattern["latency"]["count"]) == (PATTERN, N)


async def _archived(server: ServerProcess, stats: dict[str, Any]) -> None:
    """The per-second archive's delivery lines add up to what /stats shows (exact merge)."""
    node_dir = server.workdir / "data" / "archive"

    async def lines() -> dict[str, Any] | None:
        rows = [row for path in node_dir.glob("*/*/delivery-*.csv*") for row in read_samples(path)]
        member = [r for r in rows if r["scope"] == "member"]
        if sum(int(float(r["count"])) for r in member) != N:
            return None
        return {"rows": rows, "member": member}

    found = await until(lines, what=f"{N} latencies in the archive")
    merged = [0] * BUCKET_COUNT
    for row in found["member"]:
        for index, count in enumerate(text_counts(row["buckets"])):
            merged[index] += count
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        assert quantile_of(merged, N, q) == stats["latency"][name], name
    patterns = [r for r in found["rows"] if r["scope"] == f"pattern:{PATTERN}"]
    assert sum(int(float(r["count"])) for r in patterns) == N
    legs = [r for r in found["rows"] if r["scope"] == "leg:publish_ack"]
    assert sum(int(float(r["count"])) for r in legs) == N


async def _meta_subject(server: ServerProcess, stats: dict[str, Any]) -> None:
    """``/pushgrid/<node>/delivery`` carries the same numbers (a retained meta-subject)."""
    watcher = await WsClient.connect(server)
    try:
        await watcher.subscribe("/pushgrid/it-node/delivery")
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        while True:
            (message,) = await watcher.messages(1, "/pushgrid/it-node/delivery")
            if message["fields"].get("latency.count") == str(N):
                break
            assert time.monotonic() < deadline, message
        assert float(message["fields"]["latency.p50"]) == stats["latency"]["p50"]
        assert float(message["content"]) == stats["latency"]["p99"]
    finally:
        await watcher.close()


async def test_a_gap_forced_on_a_client_is_counted(
    server_factory: Callable[..., ServerProcess],
) -> None:
    server = server_factory()
    subject = "/lat/gap"
    received: list[Message] = []
    client = _subscriber(server, received, time.time)
    publisher = await WsClient.connect(server)
    try:
        await client.subscribe(subject)
        await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
        for i in range(3):
            result = await publisher.publish_ok(subject, f"m{i}")
        await eventually(lambda: len(received) == 3, what="3 messages")
        # Force the gap: the client believes it holds only seq 1 (as if 2 and 3 never came),
        # so seq 4 is a gap it must recover.
        tracker = client._protocol._tracker
        tracker.on_subscribed(Subscribed(subject, "allow", "none", result["epoch"], 1))
        await publisher.publish_ok(subject, "m3")

        async def counted() -> dict[str, Any] | None:
            delivery = await _delivery(server)
            loss = delivery["loss_total"]
            return delivery if loss["gaps"] == 1 and loss["recovered"] == 1 else None

        delivery = await until(counted, what="the gap and its recovery reported")
        assert delivery["loss_total"]["recovery_failed"] == 0
        assert delivery["loss_total"]["duplicates"] == 0
    finally:
        await client.close()
        await publisher.close()


async def test_a_malformed_report_gets_invalid_report_and_nothing_else_changes(
    server_factory: Callable[..., ServerProcess],
) -> None:
    server = server_factory()
    bad = await WsClient.connect(server)
    good = await WsClient.connect(server)
    try:
        await bad.send(
            {"op": "report", "id": 5, "interval": 5, "entries": [{"latency": [[99, 1]]}]}
        )
        error = await bad.expect("error", id=5)
        assert error["code"] == "invalid_report"
        await good.send({"op": "report", "interval": 5, "entries": [{"latency": [[30, 2]]}]})
        # the same connection is still served, and so is the other one
        subscribed = await bad.subscribe("/lat/after")
        assert subscribed["status"] == "allow"
        await good.publish_ok("/lat/after", "x")
        (message,) = await bad.messages(1, "/lat/after")
        assert message["ingress"] > 0

        async def settled() -> dict[str, Any] | None:
            delivery = await _delivery(server)
            return delivery if delivery["reports"] == 1 else None

        delivery = await until(settled, what="the good report counted")
        assert delivery["rejected_reports"] == 1
        assert delivery["latency"]["count"] == 2
        # the reporting session's own summary (what a session view reads)
        answer = await jolokia_exec(
            server, "pushgrid:type=Sessions", "detail", [good.welcome["session"]]
        )
        detail = answer["value"]
        assert detail["delivery"]["latency_count"] == 2
        assert detail["delivery"]["reports"] == 1
    finally:
        await bad.close()
        await good.close()
