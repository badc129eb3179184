"""Memory bounds of the subject table (issue 22 item 3) against a real server: MaxSubjects
refuses a new subject with ``too_many_subjects`` (WebSocket ``publish_result``, HTTP 507
problem+json) without disturbing other clients, MaxRetainedBytes refuses with
``retained_bytes_exceeded``, and idle subjects are evicted after CacheExpireTime unless
subscribed, keeping their snapshot until a new subject needs the room (ADR 022). Numbers (RSS,
sweep cost, /health latency) come from benchmarks/subject_memory.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from .pgtest import ServerProcess, WsClient, exported, http_publish, monitor_http

pytestmark = pytest.mark.timeout(120)

LIMIT = 30
EXPIRE = 1.0


@pytest.fixture(scope="module")
def bounded(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(
        ServerName="it-subject-memory",
        MaxSubjects=LIMIT,
        MaxRetainedBytes=200_000,
        CacheExpireTime=EXPIRE,
        MetaSubjectInterval=0,
        **{"Canary.Enabled": False},  # /pushgrid/canary would hold one of the LIMIT subjects
    )


async def _publish_until_ok(client: WsClient, subject: str, deadline: float = 30) -> dict[str, Any]:
    """Publish until accepted (idle subjects are evicted about once a second): a hang guard."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        result = await client.publish(subject, "after expiry")
        if result.get("result") == "ok" or loop.time() > end:
            return result
        await asyncio.sleep(0.2)


async def test_subjects_beyond_max_subjects_are_refused_then_evicted(
    bounded: ServerProcess, connect: Callable[..., Awaitable[WsClient]]
) -> None:
    watcher = await connect(bounded)
    publisher = await connect(bounded)
    kept = "/mem/kept"
    await publisher.publish_ok(kept, "kept snapshot", {"f": "1"})
    await watcher.subscribe(kept)
    await watcher.expect("message", subject=kept)  # its snapshot
    for i in range(LIMIT - 1):
        await publisher.publish_ok(f"/mem/s{i}", "x")

    refused = await publisher.publish("/mem/one-too-many", "x")
    assert (refused["result"], refused["code"]) == ("failed", "too_many_subjects")
    answer = await http_publish(bounded, "/mem/http-too-many", "x")
    assert answer.status_code == 507
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "too_many_subjects"

    # other clients are unaffected: a known subject still publishes and reaches its subscriber
    await publisher.publish_ok(kept, "still live")
    update = await watcher.expect("message", subject=kept, content="still live")
    assert update["kind"] == "update"

    # after CacheExpireTime the idle subjects go; the subscribed one keeps its snapshot
    accepted = await _publish_until_ok(publisher, "/mem/after-expiry")
    assert accepted["result"] == "ok"
    late = await connect(bounded)
    await late.subscribe(kept)
    snapshot = await late.expect("message", subject=kept)
    assert (snapshot["kind"], snapshot["content"]) == ("snapshot", "still live")

    # idle ones keep their snapshot (ADR 022); the least recently published one gave its room
    frames = {}
    for name in ("/mem/s0", "/mem/s1", f"/mem/s{LIMIT - 2}"):
        reader = await connect(bounded)
        _, frames[name] = await reader.subscribe_all(name)
    assert frames["/mem/s0"] == []
    # ... and the operator sees it: a counter, not only a new epoch on clients (ADR 032)
    stats, metrics, cache = await exported(bounded, "pushgrid:type=Cache")
    assert stats["totals"]["dropped_snapshots_total"] == 1
    assert metrics[("pushgrid_dropped_snapshots_total", ())] == 1
    assert cache["DroppedSnapshots"] == 1
    for name in ("/mem/s1", f"/mem/s{LIMIT - 2}"):
        assert [(f["kind"], f["content"], f["seq"]) for f in frames[name]] == [("snapshot", "x", 1)]


async def test_retained_bytes_beyond_the_bound_are_refused(
    server_factory: Callable[..., ServerProcess], connect: Callable[..., Awaitable[WsClient]]
) -> None:
    bounded = server_factory(
        ServerName="it-retained-bytes", MaxRetainedBytes=200_000, MetaSubjectInterval=0
    )
    client = await connect(bounded)
    big = "y" * 50_000
    results = [await client.publish(f"/mem/big{i}", big) for i in range(4)]
    codes = [(r["result"], r.get("code")) for r in results]
    # a guaranteed 50 kB message is held twice (snapshot and cache): the second one fits
    assert codes == [("ok", None), ("ok", None)] + [("failed", "retained_bytes_exceeded")] * 2
    answer = await http_publish(bounded, "/mem/big-http", big)
    assert answer.status_code == 507
    assert answer.json()["code"] == "retained_bytes_exceeded"


async def _engine_subjects(server: ServerProcess) -> int:
    async with monitor_http(server) as mon:
        response = await mon.get("/jolokia/read/pushgrid:type=Cache/Subjects")
    assert response.status_code == 200, response.text
    count: int = response.json()["value"]
    return count


async def _until_fewer_subjects(server: ServerProcess, known: int) -> None:
    """Poll the engine's subject count until it drops below ``known`` (a hang guard of 30 s,
    not a timing check: the test then asserts what is left)."""
    for _ in range(60):
        if await _engine_subjects(server) < known:
            return
        await asyncio.sleep(0.5)


async def test_a_subject_followed_only_by_delta_subscribers_is_kept(
    server_factory: Callable[..., ServerProcess], connect: Callable[..., Awaitable[WsClient]]
) -> None:
    """Issue 34 item 1: a subject whose only subscriber asked for field deltas is in use like
    one with a plain subscriber: idle past CacheExpireTime it keeps its epoch and numbering."""
    server = server_factory(ServerName="it-delta-kept", CacheExpireTime=2, MetaSubjectInterval=0)
    publisher = await connect(server)
    delta, plain, idle = "/X/Y", "/X/plain", "/X/idle"  # oldest first: evicted in this order
    firsts = {
        s: await publisher.publish_ok(s, "1", {"f": "1"}, retained=False) for s in (delta, plain)
    }
    await publisher.publish_ok(idle, "1", {"f": "1"}, retained=False)
    known = await _engine_subjects(server)
    follower = await connect(server)
    await follower.send(
        {"op": "subscribe", "id": 1, "subjects": [{"subject": delta, "delta": True}]}
    )
    await follower.expect("subscribed", id=1)
    await follower.subscribe(plain)
    # idle past CacheExpireTime: the sweep (about once a second) forgets the unsubscribed one
    await _until_fewer_subjects(server, known)
    assert await _engine_subjects(server) == known - 1, "only the unsubscribed subject goes"
    for subject in (delta, plain):
        again = await publisher.publish_ok(subject, "2", {"f": "2"}, retained=False)
        assert (again["epoch"], again["seq"]) == (firsts[subject]["epoch"], 2), subject
        message = await follower.expect("message", subject=subject, content="2")
        assert (message["epoch"], message["seq"]) == (again["epoch"], 2)
