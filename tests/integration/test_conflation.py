# ruff: noqa: ASYNC109
"""Conflation (docs/protocol.md 5.1.1, spec 5.5 and Table 5.1) against a real server.

Time is scaled down (500 ms periods instead of 5 s). Nothing here measures time: the tests wait
generously (bounded) and assert on what arrived, in which order, with which content. "Nothing
more arrived" is proven with a ping/pong round trip after waiting a couple of periods.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pushgrid.client import Message, MessageType, PushgridClient, Status, StatusEvent
from pushgrid.protocol.frames import Position

from .pgtest import (
    DEFAULT_TIMEOUT,
    Frame,
    WsClient,
    eventually,
    publish_burst,
    stats_json,
    subscribe_with,
)

PERIOD = 0.5  # the 547 ms subscriptions conflate over 500 ms


def is_message(subject: str) -> Any:
    return lambda f: f.get("type") == "message" and f.get("subject") == subject


async def messages_until(
    client: WsClient, subject: str, content: str, timeout: float = DEFAULT_TIMEOUT
) -> list[Frame]:
    """Every message of ``subject`` up to and including the first whose content is ``content``."""
    out: list[Frame] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not out or out[-1]["content"] != content:
        remaining = max(0.01, deadline - loop.time())
        out.append(await client.wait_for(is_message(subject), remaining, f"{subject} {content}"))
    return out


async def at_period_start(live_since: float, period: float) -> None:
    """Sleep until 0.1 s into the subscription's next period. Periods are counted from the
    moment it went live (a little before ``live_since``, the loop time its ``subscribed`` answer
    arrived): a burst sent at a random moment could straddle a boundary and be split in two."""
    loop = asyncio.get_running_loop()
    elapsed = loop.time() - live_since
    await asyncio.sleep((int(elapsed / period) + 1) * period - elapsed + 0.1)


# --- spec Table 5.1 ---------------------------------------------------------------------------


async def test_table_5_1_on_a_scaled_time_base(server, connect, subject):
    s = subject("IBM")
    publisher = await connect(server)
    # 10:12:00 and 10:12:32: published before anyone subscribes
    await publisher.publish_ok(s, "193", {"volume": "6.62M"})
    await publisher.publish_ok(s, "192", {"bid": "194"})

    # 10:12:40: the client subscribes with 547 ms (-> 500 ms) and gets the snapshot at once
    client = await connect(server)
    subscribed = await subscribe_with(client, s, conflation=547)
    live_since = asyncio.get_running_loop().time()
    assert subscribed["type"] == "subscribed", subscribed
    assert (subscribed["status"], subscribed["recovery"], subscribed["seq"]) == ("allow", "none", 2)
    snapshot = await client.wait_for(is_message(s), what="snapshot")
    assert snapshot["kind"] == "snapshot"
    assert snapshot["content"] == "192"
    assert snapshot["fields"] == {"volume": "6.62M", "bid": "194"}
    assert snapshot["seq"] == 2
    assert "conflated" not in snapshot

    # 10:12:41 and 10:12:43: two messages within the first period (aggregated in memory)
    await at_period_start(live_since, PERIOD)
    results = await publish_burst(publisher, s, [("195", {"ask": "192"}), ("196", {"bid": "197"})])

    # 10:12:45: the period ends: exactly one conflated message, the first message after the
    # snapshot (so neither 195 nor 196 was delivered on its own)
    conflated = await client.wait_for(is_message(s), what="the conflated message")
    assert conflated["kind"] == "update"
    assert conflated["content"] == "196"
    assert conflated["fields"] == {"ask": "192", "bid": "197"}, "the union of the period's fields"
    assert conflated["conflated"] is True
    assert (conflated["epoch"], conflated["seq"]) == (results[1]["epoch"], results[1]["seq"])
    assert conflated["seq"] == 4
    assert conflated["qos"] == "guaranteed"
    assert conflated["retained"] is True

    # 10:12:50 and 10:12:55: no new messages -> nothing at all in the next two periods
    await asyncio.sleep(2 * PERIOD + 0.3)
    assert await client.sync() == []
    # the publisher's own view is unaffected
    assert await publisher.sync() == []


# --- rounding of the period ---------------------------------------------------------------------


async def test_conflation_78_ms_is_no_conflation(server, connect, subject):
    s = subject("78")
    client = await connect(server)
    subscribed = await subscribe_with(client, s, conflation=78)
    assert subscribed["status"] == "allow", subscribed
    publisher = await connect(server)
    items = [(f"c{i}", {f"f{i}": str(i)}) for i in range(1, 6)]
    results = await publish_burst(publisher, s, items)

    got = await client.messages(5, s)
    assert [m["content"] for m in got] == [c for c, _ in items], "each message on its own"
    assert [m["fields"] for m in got] == [f for _, f in items]
    assert [m["seq"] for m in got] == [r["seq"] for r in results]
    for message in got:
        assert message["kind"] == "update"
        assert "conflated" not in message, message
    assert await client.sync() == []


async def test_conflation_887_ms_is_conflated(server, connect, subject):
    s = subject("887")
    client = await connect(server)
    subscribed = await subscribe_with(client, s, conflation=887)
    live_since = asyncio.get_running_loop().time()
    assert subscribed["status"] == "allow", subscribed
    publisher = await connect(server)
    items = [(f"c{i}", {f"f{i}": str(i), "last": str(i)}) for i in range(1, 6)]
    await at_period_start(live_since, 0.8)  # 887 ms conflates over 800 ms
    results = await publish_burst(publisher, s, items)

    message = await client.wait_for(is_message(s), what="the conflated message")
    assert message["conflated"] is True
    assert message["kind"] == "update"
    assert message["content"] == "c5"
    assert message["fields"] == {**{f"f{i}": str(i) for i in range(1, 6)}, "last": "5"}
    assert message["seq"] == results[-1]["seq"]
    await asyncio.sleep(1.0)  # more than one 800 ms period
    assert await client.sync() == []


# --- per subscription -------------------------------------------------------------------------


def check_conflated_stream(
    got: list[Frame], published: list[tuple[str, dict[str, str]]], seqs: list[int]
) -> None:
    """Conflated deliveries of ``published`` (whose seqs are ``seqs``): fewer messages, each the
    latest content with exactly the union of the fields published since the previous one."""
    assert 1 <= len(got) < len(published), [m["content"] for m in got]
    index_of = {seq: i for i, seq in enumerate(seqs)}
    previous = -1
    for message in got:
        assert message["kind"] == "update"
        assert message["conflated"] is True, message
        assert message["seq"] in index_of, message
        index = index_of[message["seq"]]
        assert index > previous, "conflated messages move forward"
        content, _ = published[index]
        assert message["content"] == content, "the latest content of the period"
        union: dict[str, str] = {}
        for _, fields in published[previous + 1 : index + 1]:
            union.update(fields)
        assert message["fields"] == union, "the union of the period's fields, latest values"
        previous = index
    assert got[-1]["content"] == published[-1][0], "the last content is the last published"
    assert previous == len(published) - 1
    everything: set[str] = set()
    for message in got:
        everything |= message["fields"].keys()
    assert everything == {name for _, fields in published for name in fields}


async def test_conflation_is_per_subscription(server, connect, subject):
    s = subject("shared")
    plain, fast, slow = [await connect(server) for _ in range(3)]
    assert (await subscribe_with(plain, s))["status"] == "allow"
    assert (await subscribe_with(fast, s, conflation=300))["status"] == "allow"
    assert (await subscribe_with(slow, s, conflation=1000))["status"] == "allow"

    publisher = await connect(server)
    published = [(f"m{i}", {f"f{i}": str(i), "last": str(i)}) for i in range(1, 31)]
    seqs = []
    for content, fields in published:  # about 1.5 s of traffic: several periods of each
        seqs.append((await publisher.publish_ok(s, content, fields))["seq"])
        await asyncio.sleep(0.05)

    # the subscriber without conflation gets every message, on its own, in order
    got = await plain.messages(len(published), s)
    assert [m["content"] for m in got] == [c for c, _ in published]
    assert [m["fields"] for m in got] == [f for _, f in published]
    assert [m["seq"] for m in got] == seqs
    assert all("conflated" not in m for m in got)
    assert await plain.sync() == []

    # each conflated subscriber gets its own conflated messages
    for client in (fast, slow):
        got = await messages_until(client, s, published[-1][0])
        check_conflated_stream(got, published, seqs)
        assert await client.sync() == [], "nothing after the message holding the last content"


async def test_unsubscribe_stops_conflated_deliveries(server, connect, subject):
    s = subject("unsub")
    client = await connect(server)
    assert (await subscribe_with(client, s, conflation=500))["status"] == "allow"
    live_since = asyncio.get_running_loop().time()
    publisher = await connect(server)

    # a first period delivers as usual
    await at_period_start(live_since, PERIOD)
    await publish_burst(publisher, s, [("a1", {"x": "1"}), ("a2", {"y": "2"})])
    first = await client.wait_for(is_message(s), what="conflated a2")
    assert (first["content"], first["fields"], first["conflated"]) == (
        "a2",
        {"x": "1", "y": "2"},
        True,
    )

    # messages absorbed in the current period, then unsubscribe before it ends
    await publish_burst(publisher, s, [("b1", {"x": "3"}), ("b2", {"y": "4"})])
    request_id = client.next_id()
    await client.send({"op": "unsubscribe", "id": request_id, "subjects": [s]})
    frames = await client.sync()
    answers = [i for i, f in enumerate(frames) if f.get("type") == "unsubscribed"]
    assert answers, frames
    before, after = frames[: answers[0]], frames[answers[0] + 1 :]
    # (should the period have ended before the unsubscribe, its message comes first)
    assert all(f["content"] == "b2" and f["conflated"] for f in before), before
    assert after == [], "nothing after the unsubscribed answer"
    # and later messages do not reach it either
    await publish_burst(publisher, s, [("c1", {"x": "5"})])
    await asyncio.sleep(2 * PERIOD + 0.3)
    assert await client.sync() == [], "no conflated delivery after unsubscribe"


# --- the Python client ------------------------------------------------------------------------


async def test_python_client_takes_conflated_updates_without_gap_recovery(
    server_factory, connect, subject
):
    srv = server_factory()
    s = subject("sdk")
    received: asyncio.Queue[Message] = asyncio.Queue()
    events: list[StatusEvent] = []
    client = PushgridClient(
        [srv.address], on_message=received.put_nowait, on_status=events.append, proxy=None
    )
    try:
        await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
        await client.subscribe([s], conflation_ms=500)
        await eventually(
            lambda: any(e.status is Status.SUBSCRIBE_ALLOW for e in events),
            what=f"SUBSCRIBE_ALLOW in {events}",
        )
        publisher = await connect(srv)
        published = [(f"m{i}", {f"f{i}": str(i)}) for i in range(1, 21)]
        seqs = []
        for content, fields in published:  # about 1 s of traffic: two periods at least
            seqs.append((await publisher.publish_ok(s, content, fields))["seq"])
            await asyncio.sleep(0.04)

        got: list[Message] = []
        while not got or got[-1].content != published[-1][0]:
            got.append(await asyncio.wait_for(received.get(), DEFAULT_TIMEOUT))
        assert 1 <= len(got) < len(published), [m.content for m in got]
        for message in got:
            assert message.subject == s
            assert message.type is MessageType.UPDATE
            assert message.conflated is True
        assert [m.seq for m in got] == sorted({m.seq for m in got}), "increasing seqs"
        assert got[-1].seq == seqs[-1]
        assert client.position(s) == Position(got[-1].epoch, seqs[-1])

        # the seq jumps were not taken for gaps: no resubscribe with recovery
        await asyncio.sleep(2 * PERIOD)
        assert received.empty(), "nothing after the last content"
        assert [e for e in events if e.status in (Status.DATA_SYNC, Status.DATA_RESYNC)] == []
        assert [e.status for e in events if e.subject == s] == [Status.SUBSCRIBE_ALLOW]
        totals = (await stats_json(srv))["totals"]
        assert totals["recovery_successes_total"] == 0, totals
        assert totals["recovery_failures_total"] == 0, totals
    finally:
        await asyncio.wait_for(client.close(), DEFAULT_TIMEOUT)
