"""Guaranteed delivery at the protocol level: recovery, cache limits, history."""

from __future__ import annotations

import asyncio

N = 50


async def test_recovery_after_disconnect_gets_exactly_the_missed_messages(server, connect, subject):
    s = subject("IBM")
    publisher = await connect(server)
    sub = await connect(server)
    subscribed = await sub.subscribe(s)
    epoch = subscribed["epoch"]
    for i in range(1, 6):
        await publisher.publish_ok(s, f"m{i}", {"i": str(i)})
    got = await sub.messages(5, s)
    assert [m["seq"] for m in got] == [1, 2, 3, 4, 5]
    last = got[-1]["seq"]
    await sub.close()

    for i in range(6, 6 + N):
        result = await publisher.publish_ok(s, f"m{i}", {"i": str(i)})
        assert (result["epoch"], result["seq"]) == (epoch, i)

    again = await connect(server)
    subscribed, recovered = await again.subscribe_all(s, recover={"epoch": epoch, "seq": last})
    assert subscribed["status"] == "allow"
    assert subscribed["recovery"] == "recovered"
    assert subscribed["epoch"] == epoch
    assert subscribed["seq"] == last + N
    assert len(recovered) == N, [f.get("seq") for f in recovered]
    assert all(f["type"] == "message" and f["kind"] == "recovered" for f in recovered)
    assert [f["seq"] for f in recovered] == list(range(last + 1, last + N + 1))
    assert [f["content"] for f in recovered] == [f"m{i}" for i in range(6, 6 + N)]
    assert [f["fields"] for f in recovered] == [{"i": str(i)} for i in range(6, 6 + N)]
    assert {f["epoch"] for f in recovered} == {epoch}

    # then live messages, continuing the sequence
    for i in range(6 + N, 9 + N):
        await publisher.publish_ok(s, f"m{i}")
    live = await again.messages(3, s)
    assert [(f["kind"], f["seq"]) for f in live] == [
        ("update", last + N + 1),
        ("update", last + N + 2),
        ("update", last + N + 3),
    ]
    assert await again.sync() == [], "nothing after the live messages (no duplicates)"


async def test_recovery_when_nothing_was_missed_is_up_to_date(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    for i in range(3):
        last = await publisher.publish_ok(s, f"m{i}")
    sub = await connect(server)
    subscribed = await sub.subscribe(s, recover={"epoch": last["epoch"], "seq": last["seq"]})
    assert subscribed["recovery"] == "up_to_date"
    assert (subscribed["epoch"], subscribed["seq"]) == (last["epoch"], last["seq"])
    assert await sub.sync() == [], "up_to_date: neither recovered messages nor a snapshot"
    await publisher.publish_ok(s, "next")
    (update,) = await sub.messages(1, s)
    assert (update["kind"], update["seq"]) == ("update", last["seq"] + 1)


async def test_resubscribe_with_recover_on_a_live_connection(server, connect, subject):
    """A client that detected a gap re-subscribes on the same connection (allowed)."""
    s = subject()
    publisher = await connect(server)
    sub = await connect(server)
    await sub.subscribe(s)
    for i in range(1, 11):
        result = await publisher.publish_ok(s, f"m{i}")
    await sub.messages(10, s)
    subscribed = await sub.subscribe(s, recover={"epoch": result["epoch"], "seq": 4})
    assert subscribed["recovery"] == "recovered"
    frames = await sub.sync()
    assert [(f["kind"], f["seq"]) for f in frames] == [("recovered", i) for i in range(5, 11)]
    await publisher.publish_ok(s, "m11")
    (update,) = await sub.messages(1, s)
    assert update["seq"] == 11
    assert await sub.sync() == [], "the re-subscription must not duplicate live delivery"


async def test_recovery_from_an_unknown_epoch_is_new_epoch_with_snapshot(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    last = await publisher.publish_ok(s, "now", {"f": "1"})
    sub = await connect(server)
    subscribed, frames = await sub.subscribe_all(s, recover={"epoch": "not-an-epoch", "seq": 3})
    assert subscribed["recovery"] == "new_epoch"
    assert (subscribed["epoch"], subscribed["seq"]) == (last["epoch"], last["seq"])
    assert [(f["kind"], f["content"], f["seq"]) for f in frames] == [("snapshot", "now", 1)]


async def test_cache_overflow_makes_recovery_fail_with_a_snapshot(server_factory, connect):
    srv = server_factory(MaxCachedMessagesPerSubject=10)
    s = "/cache/size/IBM"
    publisher = await connect(srv)
    first = await publisher.publish_ok(s, "m1")
    epoch, position = first["epoch"], first["seq"]

    # Control: 10 missed messages still fit in the cache -> recovered.
    for i in range(2, 12):
        await publisher.publish_ok(s, f"m{i}", {"i": str(i)})
    sub = await connect(srv)
    subscribed = await sub.subscribe(s, recover={"epoch": epoch, "seq": position})
    assert subscribed["recovery"] == "recovered"
    assert [f["seq"] for f in await sub.sync()] == list(range(2, 12))
    await sub.close()

    # 20 missed messages: the cache (10) lost some -> failed, then the snapshot.
    position = 11
    for i in range(12, 32):
        last = await publisher.publish_ok(s, f"m{i}", {"i": str(i)} if i % 2 else None)
    sub = await connect(srv)
    subscribed, frames = await sub.subscribe_all(s, recover={"epoch": epoch, "seq": position})
    assert subscribed["status"] == "allow"
    assert subscribed["recovery"] == "failed"
    assert (subscribed["epoch"], subscribed["seq"]) == (epoch, last["seq"])
    assert len(frames) == 1, frames
    snapshot = frames[0]
    assert snapshot["kind"] == "snapshot"
    assert (snapshot["content"], snapshot["seq"], snapshot["epoch"]) == ("m31", 31, epoch)
    assert snapshot["fields"] == {"i": "31"}
    await publisher.publish_ok(s, "m32")
    (update,) = await sub.messages(1, s)
    assert (update["kind"], update["seq"]) == ("update", 32)


async def test_cache_expiry_makes_recovery_fail_with_a_snapshot(server_factory, connect):
    srv = server_factory(CacheExpireTime=1)
    s = "/cache/expire/IBM"
    publisher = await connect(srv)
    first = await publisher.publish_ok(s, "m1")
    for i in range(2, 5):
        last = await publisher.publish_ok(s, f"m{i}")
    await asyncio.sleep(2.5)  # > CacheExpireTime: the missed messages are forgotten
    sub = await connect(srv)
    subscribed, frames = await sub.subscribe_all(
        s, recover={"epoch": first["epoch"], "seq": first["seq"]}
    )
    assert subscribed["recovery"] == "failed"
    assert (subscribed["epoch"], subscribed["seq"]) == (last["epoch"], last["seq"])
    assert [(f["kind"], f["content"], f["seq"]) for f in frames] == [("snapshot", "m4", 4)]
    # history after expiry is empty as well
    other = await connect(srv)
    subscribed = await other.subscribe(s, history=5)
    assert subscribed["status"] == "allow"
    assert await other.sync() == []


async def test_recovery_from_a_future_seq_fails_with_snapshot(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    last = await publisher.publish_ok(s, "only")
    sub = await connect(server)
    subscribed = await sub.subscribe(s, recover={"epoch": last["epoch"], "seq": 99})
    assert subscribed["recovery"] == "failed"
    assert [(f["kind"], f["seq"]) for f in await sub.sync()] == [("snapshot", 1)]


async def test_history_sends_the_last_n_cached_messages_then_live(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    for i in range(1, 11):
        last = await publisher.publish_ok(s, f"m{i}", {"i": str(i)})
    sub = await connect(server)
    subscribed, frames = await sub.subscribe_all(s, history=5)
    assert subscribed["status"] == "allow"
    assert subscribed["recovery"] == "none"
    assert (subscribed["epoch"], subscribed["seq"]) == (last["epoch"], 10)
    assert [(f["kind"], f["seq"], f["content"]) for f in frames] == [
        ("historical", i, f"m{i}") for i in range(6, 11)
    ], "history replaces the snapshot"
    assert [f["fields"] for f in frames] == [{"i": str(i)} for i in range(6, 11)]
    await publisher.publish_ok(s, "m11")
    (update,) = await sub.messages(1, s)
    assert (update["kind"], update["seq"], update["content"]) == ("update", 11, "m11")

    # asking for more than is cached gives all of it, oldest first
    more = await connect(server)
    await more.subscribe(s, history=50)
    assert [f["seq"] for f in await more.sync()] == list(range(1, 12))


async def test_history_does_not_include_standard_messages(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    await publisher.publish_ok(s, "g1")
    await publisher.publish_ok(s, "s1", qos="standard")
    await publisher.publish_ok(s, "g2")
    sub = await connect(server)
    await sub.subscribe(s, history=5)
    assert [f["content"] for f in await sub.sync()] == ["g1", "g2"]


async def test_standard_messages_are_not_recovered(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    first = await publisher.publish_ok(s, "g1")
    await publisher.publish_ok(s, "s1", qos="standard")
    await publisher.publish_ok(s, "g2")
    await publisher.publish_ok(s, "s2", qos="standard")
    sub = await connect(server)
    subscribed, frames = await sub.subscribe_all(
        s, recover={"epoch": first["epoch"], "seq": first["seq"]}
    )
    assert (subscribed["recovery"], subscribed["seq"]) == ("recovered", 2)
    assert [(f["kind"], f["content"], f["seq"]) for f in frames] == [("recovered", "g2", 2)]
