"""Watched subjects on a real server driven by real clients (issue 25 item 1).

N messages to /Stocks/NYSE/A (two subscribers) and M to /Stocks/NASDAQ/B (one subscriber), with
/Stocks/NYSE/* watched from the configuration: Jolokia, /stats (JSON and text), /metrics and the
admin API count exactly N in and 2N out for the pattern, the meta-subject says the same, and
/metrics passes promtool. Then the admin API adds, refuses and removes patterns at run time
(role-checked, audited), and the new pattern counts only what came after it.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pushgrid.metrics import sqlstore
from pushgrid.metrics.archive import read_samples

from .pgtest import (
    DEFAULT_TIMEOUT,
    AdminHarness,
    ServerProcess,
    WsClient,
    member_entry,
    monitor_http,
    parse_prometheus,
    parse_stats_text,
)
from .spark_delivery import check_delivery_windows, reporting_subscriber, until_archived

API = "/api/v1"
NYSE, NASDAQ = "/Stocks/NYSE/A", "/Stocks/NASDAQ/B"
PATTERN = "/Stocks/NYSE/*"
N, M = 23, 11
CONTENT = "q-12345"  # every message the same size: bytes in = count * len


async def _watched(server: ServerProcess) -> dict[str, dict[str, Any]]:
    async with monitor_http(server) as http:
        document = (await http.get("/stats", params={"format": "json"})).json()
    return {p["pattern"]: p for p in document["watched_subjects"]["patterns"]}


async def _until_totals(
    server: ServerProcess, pattern: str, messages_in: int, messages_out: int
) -> dict[str, Any]:
    """The pattern's document once the sampler counted these totals (bounded wait)."""
    deadline = time.monotonic() + 3 * DEFAULT_TIMEOUT
    while True:
        found = (await _watched(server)).get(pattern)
        totals = found["totals"] if found else {}
        if (totals.get("messages_in_total"), totals.get("messages_out_total")) == (
            messages_in,
            messages_out,
        ):
            assert found is not None
            return found
        assert time.monotonic() < deadline, f"{pattern}: {found}"
        await asyncio.sleep(0.2)


async def _jolokia(server: ServerProcess, request: dict[str, Any]) -> Any:
    async with monitor_http(server) as http:
        answer = (await http.post("/jolokia", json=request)).json()
    assert answer["status"] == 200, answer
    return answer["value"]


def _promtool(text: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    # promtool lints too (exit 3 for lint-only findings); only errors (exit 1) fail it
    assert checked.returncode in (0, 3), checked.stdout + checked.stderr


async def test_one_pattern_counts_exactly_in_every_view(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    server = server_factory(
        ServerName="watch-1",
        MetaSubjectInterval=1,
        **{"WatchedSubjects.Patterns": PATTERN, "WatchedSubjects.MaxPatterns": 3},
    )
    subscribers = [await connect(server) for _ in range(2)]
    for client in subscribers:
        await client.subscribe(NYSE)
    await subscribers[0].subscribe(NASDAQ)
    publisher = await connect(server)
    for _ in range(N):
        await publisher.publish_ok(NYSE, CONTENT)
    for _ in range(M):
        await publisher.publish_ok(NASDAQ, CONTENT)

    found = await _until_totals(server, PATTERN, N, 2 * N)
    assert found["totals"]["bytes_in_total"] == N * len(CONTENT)
    assert found["totals"]["bytes_out_total"] > 2 * N * len(CONTENT)  # whole frames
    assert (found["subscribers"], found["subjects"], found["source"]) == (2, 1, "config")
    assert set(found["indicators"]) == {
        "incoming_messages_per_second",
        "outgoing_messages_per_second",
        "incoming_bytes_per_second",
        "outgoing_bytes_per_second",
        "subscribers",
        "subjects",
    }

    document = await _jolokia(
        server, {"type": "read", "mbean": "pushgrid:type=WatchedSubjects", "attribute": "Document"}
    )
    (bean,) = document["patterns"]
    assert bean["totals"] == found["totals"]
    async with monitor_http(server) as http:
        _, lines = parse_stats_text((await http.get("/stats")).text)
        metrics_text = (await http.get("/metrics")).text
    key = "watched.%2FStocks%2FNYSE%2F*"
    assert lines[f"{key}.messages_in_total"] == str(N)
    assert lines[f"{key}.messages_out_total"] == str(2 * N)
    metrics = parse_prometheus(metrics_text)
    label = (("pattern", PATTERN),)
    assert metrics[("pushgrid_watched_messages_received_total", label)] == N
    assert metrics[("pushgrid_watched_messages_sent_total", label)] == 2 * N
    assert metrics[("pushgrid_watched_received_bytes_total", label)] == N * len(CONTENT)
    assert metrics[("pushgrid_watched_subscribers", label)] == 2
    labels = {dict(k[1]).get("pattern") for k in metrics if k[0].startswith("pushgrid_watched_")}
    assert labels == {None, PATTERN}  # the pattern, never a raw subject
    _promtool(metrics_text)

    # the meta-subject: retained, so a new subscriber gets the latest round as its snapshot
    meta = "/pushgrid/watch-1/watched/%2FStocks%2FNYSE%2F*"
    watcher = await connect(server)
    deadline = time.monotonic() + 3 * DEFAULT_TIMEOUT
    while True:
        await watcher.subscribe(meta)
        frame = await watcher.wait_for(
            lambda f: f.get("type") == "message" and f.get("subject") == meta, what=meta
        )
        if frame["fields"]["messages_in_total"] == str(N):
            break
        assert time.monotonic() < deadline, frame
        await watcher.send({"op": "unsubscribe", "id": watcher.next_id(), "subjects": [meta]})
        await asyncio.sleep(0.5)
    assert frame["content"] == PATTERN
    assert frame["fields"]["messages_out_total"] == str(2 * N)

    await _admin_changes(tmp_path, server, publisher)


async def _admin_changes(tmp_path: Path, server: ServerProcess, publisher: WsClient) -> None:
    admin = AdminHarness(tmp_path / "admin", [member_entry("watch-1", server)])
    try:
        async with admin.client("viewer") as api:
            answer = (await api.get(f"{API}/watched-subjects")).json()
            (cluster,) = answer["cluster"]
            assert (cluster["pattern"], cluster["totals"]["messages_in_total"]) == (PATTERN, N)
            assert cluster["totals"]["messages_out_total"] == 2 * N
            refused = await api.post(f"{API}/watched-subjects", json={"pattern": "/Stocks/*"})
            assert refused.status_code == 403  # a viewer may not change what is watched
        async with admin.client("operator") as api:
            added = await api.post(f"{API}/watched-subjects", json={"pattern": "/Stocks/*"})
            assert added.status_code == 201, added.text
            assert added.json()["members"] == [
                {"member": "watch-1", "outcome": "watched", "detail": None}
            ]
            again = await api.post(f"{API}/watched-subjects", json={"pattern": "/Stocks/*"})
            assert again.json()["members"][0]["outcome"] == "already_watched"
            bad = await api.post(f"{API}/watched-subjects", json={"pattern": "/Stocks//x"})
            assert (bad.status_code, bad.json()["code"]) == (422, "invalid_pattern")
            third = await api.post(f"{API}/watched-subjects", json={"pattern": "*"})
            assert third.status_code == 201
            capped = await api.post(f"{API}/watched-subjects", json={"pattern": "/Forex/*"})
            assert (capped.status_code, capped.json()["code"]) == (409, "watch_cap")
            assert "WatchedSubjects.MaxPatterns" in capped.json()["detail"]
            removed = await api.delete(f"{API}/watched-subjects", params={"pattern": "*"})
            assert removed.json()["members"][0]["outcome"] == "removed"
            gone = await api.delete(f"{API}/watched-subjects", params={"pattern": "*"})
            assert gone.status_code == 404
        # the run-time pattern counts from the moment it was added
        for _ in range(5):
            await publisher.publish_ok(NASDAQ, CONTENT)
        found = await _until_totals(server, "/Stocks/*", 5, 5)
        assert found["source"] == "runtime"
        async with admin.client("admin") as api:
            entries = (await api.get(f"{API}/audit")).json()["items"]
        actions = [(e["action"], e["target"]) for e in entries if e["action"].startswith("watch")]
        assert ("watched.add", "/Stocks/*") in actions
        assert ("watched.remove", "*") in actions
    finally:
        admin.close()


def _archived_in(archive: Path, pattern: str) -> tuple[int, int]:
    """Incoming messages and bytes the node's watched archive lines hold for ``pattern``."""
    rows = [
        row
        for path in archive.rglob("watched-*.csv*")
        for row in read_samples(path)
        if row["pattern"] == pattern
    ]
    return (
        sum(int(row["incoming_messages_per_second"]) for row in rows),
        sum(int(row["incoming_bytes_per_second"]) for row in rows),
    )


async def test_pattern_windows_from_archive_through_spark_to_the_admin_api(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
    spark: Any,
) -> None:
    """ADR 030: archive -> real Spark run -> SQL -> admin API equals what was published."""
    archive = tmp_path / "archive"
    server = server_factory(
        ServerName="watch-arch",
        MetricsArchive=str(archive),
        **{"WatchedSubjects.Patterns": PATTERN},
    )
    publisher = await connect(server)
    # the one subscriber reports its delivery latencies: the same run computes their windows
    async with reporting_subscriber(server, NYSE) as received:
        # the pattern's first reading only starts its counters: its seconds begin after it
        deadline = time.monotonic() + 3 * DEFAULT_TIMEOUT
        while not any(archive.rglob("watched-*.csv*")):
            assert time.monotonic() < deadline, "no watched archive file"
            await asyncio.sleep(0.1)
        for k in range(N):
            await publisher.publish_ok(NYSE, CONTENT)
            if k % 8 == 7:
                await asyncio.sleep(0.6)  # spread over a few seconds
        for _ in range(M):
            await publisher.publish_ok(NASDAQ, CONTENT)  # not the pattern's
        await _until_totals(server, PATTERN, N, N)
        assert len(received) == N
        delivery = await until_archived(archive, "member", N)
    deadline = time.monotonic() + 3 * DEFAULT_TIMEOUT
    # a second's rates are rounded, the remainder carried to the next second: wait for both
    while _archived_in(archive, PATTERN) != (N, N * len(CONTENT)):
        assert time.monotonic() < deadline, _archived_in(archive, PATTERN)
        await asyncio.sleep(0.2)
    last = max(
        int(row["ts"])
        for path in archive.rglob("watched-*.csv*")
        for row in [*read_samples(path), *delivery]
    )

    from pushgrid.spark_stats.pipeline import run_pipeline  # pyspark: only for this test

    result = await asyncio.to_thread(run_pipeline, spark, archive, tmp_path / "warehouse", last)
    admin = AdminHarness(tmp_path / "admin", [member_entry("watch-arch", server)])
    try:
        with admin.session_factory() as session:
            run_id = sqlstore.start_run(session, master="local").id
            assert sqlstore.write_results(session, run_id, result).watched_stats > 0
        async with admin.client("viewer") as api:
            answer = await api.get(
                f"{API}/watched-subjects/statistics", params={"pattern": PATTERN}
            )
            bad = await api.get(f"{API}/watched-subjects/statistics", params={"pattern": "/a//b"})
            latency = await api.get(f"{API}/stats/delivery")
    finally:
        admin.close()
    assert answer.status_code == 200, answer.text
    assert bad.status_code == 422, bad.text
    assert bad.json()["code"] == "invalid_pattern"
    body = answer.json()
    stats = {(s["scope"], s["indicator"], s["window"]): s for s in body["items"]}
    assert {s["scope"] for s in body["items"]} == {"cluster", "node:watch-arch"}
    for scope in ("cluster", "node:watch-arch"):
        for name, total in (
            ("incoming_messages_per_second", N),
            ("outgoing_messages_per_second", N),
            ("incoming_bytes_per_second", N * len(CONTENT)),
        ):
            window = stats[(scope, name, "15m")]
            assert round(window["avg"] * window["count"]) == total, (scope, name, window)
        assert stats[(scope, "subscribers", "15m")]["max"] == 1
        assert stats[(scope, "subjects", "15m")]["max"] == 1
    assert stats[("cluster", "incoming_messages_per_second", "1d")]["low_coverage"] is True
    assert latency.status_code == 200, latency.text
    assert result.delivery_stats is not None
    check_delivery_windows(latency.json(), delivery, "watch-arch")
    assert {f"pattern:{PATTERN}", "member"} <= {i["series"] for i in latency.json()["items"]}
