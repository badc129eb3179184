"""Delivery accounting adds up (issue 33 item 4, ADR 054) and a slow consumer's record names it
(item 8c), on one real server with known traffic.

Traffic under the watched pattern ``/acct/*``:
- ``/acct/mixed``: 2 plain subscribers, 1 delta subscriber, 1 conflated subscriber (500 ms);
  20 messages whose field ``a`` changes and ``b`` does not;
- ``/acct/slow``: a subscriber that stops reading (a slow consumer) and a fast one;
- ``/acct/gone``: a conflated subscriber (3 s) that unsubscribes before its period ends;
- ``/acct/secret``: 3 publishes the publisher's token does not allow (refused by entitlement).

After settling, every count is judged exactly: due = written + conflated + dropped + closed +
covered per subject, per pattern and for the member, in /stats, the MBean and Prometheus.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jwt

from pushgrid.protocol.errors import CloseCode

from .pgtest import (
    AdminHarness,
    RawWs,
    ServerProcess,
    jolokia_bulk,
    member_entry,
    monitor_http,
    parse_prometheus,
)

SECRET = "integration-test-secret-0123456789abcdef"
PATTERN = "/acct/*"
MIXED, SLOW, GONE, DENIED = "/acct/mixed", "/acct/slow", "/acct/gone", "/acct/secret"
OUTCOMES = ("written", "conflated", "dropped", "closed", "covered")


def token(sub: str, permissions: dict[str, list[str]]) -> str:
    claims = {"sub": sub, "exp": int(time.time()) + 3600, "permissions": permissions}
    return jwt.encode(claims, SECRET, algorithm="HS256")


READER = token("reader", {"sub": ["/acct/*"]})
MONITOR = token("monitor", {"sub": ["/pushgrid/*"]})
EVENTS = "/pushgrid/acct-1/slow-consumers"
PUBLISHER = token("publisher", {"pub": ["/acct/mixed", "/acct/slow", "/acct/gone"]})


async def stats(srv: ServerProcess) -> dict[str, Any]:
    async with monitor_http(srv) as mon:
        response = await mon.get("/stats", params={"format": "json"})
    assert response.status_code == 200, response.text
    section: dict[str, Any] = response.json()["accounting"]
    return section


def rows(section: dict[str, Any], kind: str) -> dict[str, dict[str, int]]:
    return {row["name"]: row["total"] for row in section[kind]}


def adds_up(row: dict[str, int]) -> bool:
    return row["due"] == sum(row[name] for name in OUTCOMES)


async def subscribe_raw(client: Any, item: dict[str, Any]) -> None:
    request_id = client.next_id()
    await client.send({"op": "subscribe", "id": request_id, "subjects": [item]})
    answer = await client.expect("subscribed", id=request_id)
    assert answer["status"] == "allow", answer


async def slow_consumers(srv: ServerProcess) -> list[dict[str, Any]]:
    """The member's slow-consumer log (Sessions MBean ``slowConsumers``)."""
    async with monitor_http(srv) as mon:
        (log,) = await jolokia_bulk(
            mon,
            [
                {
                    "type": "exec",
                    "mbean": "pushgrid:type=Sessions",
                    "operation": "slowConsumers",
                    "arguments": [],
                }
            ],
        )
    assert log["status"] == 200, log
    records: list[dict[str, Any]] = log["value"]
    return records


async def flood_until_slow(srv: ServerProcess, publisher: Any, fast: Any) -> int:
    """Publish 4 KiB messages on SLOW, 100 at a time (pipelined; the fast subscriber reads
    them all) until the member has closed the slow consumer; how many were published."""
    payload = "x" * 4096
    published = 0
    while not await slow_consumers(srv):
        assert published < 5000, "the slow consumer was never closed"
        ids = []
        for _ in range(100):
            request_id = publisher.next_id()
            ids.append(request_id)
            await publisher.send(
                {"op": "publish", "id": request_id, "subject": SLOW, "content": payload}
            )
            published += 1
        for request_id in ids:
            result = await publisher.expect("publish_result", id=request_id, timeout=30)
            assert result["result"] == "ok", result
        assert len(await fast.messages(100, SLOW, timeout=30)) == 100
    return published


async def test_delivery_accounting_adds_up_and_the_slow_consumer_is_named(
    server_factory, connect, tmp_path
) -> None:
    srv = server_factory(
        ServerName="acct-1",
        Entitlement="jwt",
        EntitlementJwtSecret=SECRET,
        MaxOutboundBufferSize=65536,
        SlowConsumerCloseTimeout=1,
        MetaSubjectInterval=60,  # meta-subjects on (the slow-consumer event), rounds rare
        **{"WatchedSubjects.Patterns": PATTERN, "Canary.Enabled": False},
    )
    plain = [await connect(srv, READER) for _ in range(2)]
    for client in plain:
        await subscribe_raw(client, {"subject": MIXED})
    delta = await connect(srv, READER)
    await subscribe_raw(delta, {"subject": MIXED, "delta": True})
    conflated = await connect(srv, READER)
    await subscribe_raw(conflated, {"subject": MIXED, "conflation": 500})
    gone = await connect(srv, READER)
    await subscribe_raw(gone, {"subject": GONE, "conflation": 3000})
    fast = await connect(srv, READER)
    await subscribe_raw(fast, {"subject": SLOW})
    slow = await asyncio.to_thread(
        RawWs, srv.host, srv.port, rcvbuf=4096, path=f"/ws?token={READER}"
    )
    slow.send_json({"op": "subscribe", "id": 1, "subjects": [{"subject": SLOW}]})
    await asyncio.to_thread(slow.read_frames, 2)  # welcome + subscribed; then it stops reading
    host, port = slow.sock.getsockname()[:2]
    slow_address = f"{host}:{port}"
    publisher = await connect(srv, PUBLISHER)
    monitor = await connect(srv, MONITOR)
    await subscribe_raw(monitor, {"subject": EVENTS})

    for i in range(20):
        await publisher.publish_ok(MIXED, f"m{i}", {"a": str(i), "b": "same"})
    for i in range(5):
        await publisher.publish_ok(GONE, f"g{i}")
    await gone.send({"op": "unsubscribe", "id": gone.next_id(), "subjects": [GONE]})
    for _ in range(3):
        refused = await publisher.publish(DENIED, "no")
        assert refused["result"] == "denied", refused
    published = await flood_until_slow(srv, publisher, fast)
    ended = await asyncio.to_thread(slow.read_until_closed, 30)
    assert ended == "reset" or slow.close_code == CloseCode.SLOW_CONSUMER, (ended, slow.close_code)
    slow.close()
    # every plain subscriber read all 20; the conflated one got one message per period
    for client in (*plain, delta):
        assert len(await client.messages(20, MIXED)) == 20
    await asyncio.sleep(1.0)  # past the last 500 ms period of the conflated subscription
    conflated_frames = [m for m in await conflated.sync() if m.get("type") == "message"]
    assert 1 <= len(conflated_frames) <= 20
    assert conflated_frames[-1]["content"] == "m19"

    # settled: the abandoned period (3 s) has ended and nothing is queued any more
    section: dict[str, Any] = {}

    async def settled() -> bool:
        nonlocal section
        section = await stats(srv)
        subjects = rows(section, "subjects")
        return (
            GONE in subjects
            and subjects[GONE]["closed"] == 5
            and all(adds_up(row) for row in subjects.values())
            and adds_up(section["totals"])
        )

    deadline = asyncio.get_running_loop().time() + 30
    while not await settled():
        assert asyncio.get_running_loop().time() < deadline, section
        await asyncio.sleep(0.3)

    subjects = rows(section, "subjects")
    n = len(conflated_frames)
    assert subjects[MIXED] == {
        "published": 20,
        "due": 80,
        "written": 60 + n,
        "conflated": 20 - n,
        "deltas": 19,  # the delta subscriber's first message is whole
        "dropped": 0,
        "closed": 0,
        "covered": 0,
        "refused": 0,
    }
    assert subjects[GONE] == {
        "published": 5,
        "due": 5,
        "written": 0,
        "conflated": 0,
        "deltas": 0,
        "dropped": 0,
        "closed": 5,
        "covered": 0,
        "refused": 0,
    }
    slow_row = subjects[SLOW]
    assert slow_row["published"] == published
    assert slow_row["dropped"] > 0
    # the fast subscriber's every message, and the slow one's until it was closed
    assert slow_row["written"] >= published
    assert slow_row["due"] == slow_row["written"] + slow_row["dropped"]
    assert published < slow_row["due"] <= 2 * published
    assert subjects[DENIED]["refused"] == 3
    assert subjects[DENIED]["published"] == subjects[DENIED]["due"] == 0
    # the slow-consumer event went to its one subscriber (a meta-subject: not in the pattern)
    assert (subjects[EVENTS]["due"], subjects[EVENTS]["written"]) == (1, 1)
    (pattern,) = section["patterns"]
    assert pattern["name"] == PATTERN
    expected = {column: sum(row[column] for row in subjects.values()) for column in subjects[MIXED]}
    assert pattern["total"] == {
        column: sum(row[column] for name, row in subjects.items() if name.startswith("/acct/"))
        for column in expected
    }
    assert pattern["unaccounted"] == 0
    assert section["totals"] == expected  # nothing else was published on this member
    assert section["unaccounted"] == 0
    assert [row["name"] for row in section["subjects"]][:2] == [SLOW, MIXED]  # by due

    # the MBean and Prometheus say the same
    async with monitor_http(srv) as mon:
        (answer,) = await jolokia_bulk(mon, [{"type": "read", "mbean": "pushgrid:type=Accounting"}])
        metrics = parse_prometheus((await mon.get("/metrics")).text)
    assert answer["status"] == 200, answer
    assert answer["value"]["Totals"] == expected
    assert {r["name"]: r["total"] for r in answer["value"]["Subjects"]} == subjects
    for column, value in pattern["total"].items():
        key = ("pushgrid_pattern_deliveries_total", (("column", column), ("pattern", PATTERN)))
        assert metrics[key] == value, (column, metrics.get(key))

    # the admin API adds the members' rows up (one member here: the same numbers)
    admin = AdminHarness(tmp_path / "admin", [member_entry("acct-1", srv)])
    try:
        async with admin.client("viewer") as api:
            cluster = (await api.get("/api/v1/delivery/accounting")).json()
            member = (await api.get("/api/v1/members/acct-1/delivery/accounting")).json()
            unknown = await api.get("/api/v1/members/nobody/delivery/accounting")
            offenders = (await api.get("/api/v1/slow-consumers/offenders")).json()
    finally:
        admin.close()
    assert cluster["totals"]["total"] == expected
    assert cluster["totals"]["adds_up"] is True
    assert {r["name"]: r["total"] for r in cluster["subjects"]} == subjects
    ((pattern_row),) = cluster["patterns"]
    assert (pattern_row["name"], pattern_row["total"], pattern_row["adds_up"]) == (
        PATTERN,
        pattern["total"],
        True,
    )
    assert pattern_row["members"] == ["acct-1"]
    assert member["totals"]["total"] == cluster["totals"]["total"]
    assert unknown.status_code == 404
    (offender,) = offenders["items"]
    assert (offender["client"], offender["closes"], offender["members"]) == (
        "reader",
        1,
        ["acct-1"],
    )
    assert (offender["last_remote"], offender["subjects"]) == (slow_address, [SLOW])

    # item 8c: the slow consumer's record names its address, client and subjects
    (record,) = await slow_consumers(srv)
    assert record["remote"] == slow_address
    assert record["subjects"] == [SLOW]
    assert (record["client_id"], record["transport"]) == ("reader", "websocket")
    # issue 33 item 5: compression, queued subjects, send rate, time connected, offenses
    assert (record["compressed"], record["offenses"], record["rtt_ms"]) == (False, 1, None)
    assert set(record["queued_by_subject"]) <= {SLOW}
    assert record["send_rate"] > 0
    assert record["connected_seconds"] > 0
    # ... and the same record as an event on the member's meta-subject
    (event,) = await monitor.messages(1, EVENTS)
    fields = event["fields"]
    assert (event["content"], fields["remote"], fields["client_id"]) == (
        record["session"],
        slow_address,
        "reader",
    )
    assert json.loads(fields["subjects"]) == [SLOW]
    assert json.loads(fields["queued_bytes"]) == record["queued_bytes"]
