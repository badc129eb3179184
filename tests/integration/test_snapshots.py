"""Snapshot messages (spec 4.1.2, Table 4.3) over WebSocket and HTTP, and PublishSnapshotMessage."""

from __future__ import annotations

import pytest

# Table 4.3 of the architecture guide: (published content, published fields) ->
# (snapshot content, snapshot fields). The subject is /Stocks/NYSE/IBM.
TABLE_4_3 = [
    (("193", {"volume": "6.62M"}), ("193", {"volume": "6.62M"})),
    (("192", {}), ("192", {"volume": "6.62M"})),
    (("195", {"ask": "190"}), ("195", {"ask": "190", "volume": "6.62M"})),
    (
        ("193", {"bid": "194", "ask": "191"}),
        ("193", {"bid": "194", "ask": "191", "volume": "6.62M"}),
    ),
]


async def test_table_4_3_snapshot_after_each_message(server_factory, connect):
    # Own server: the subject is the one of the table, /Stocks/NYSE/IBM.
    srv = server_factory()
    subject = "/Stocks/NYSE/IBM"
    publisher = await connect(srv)
    live = await connect(srv)

    async with srv.http() as http:
        # Before any message: no snapshot anywhere.
        response = await http.get("/snapshot", params={"subject": subject})
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("application/problem+json")
        subscribed = await live.subscribe(subject)
        assert subscribed["status"] == "allow"
        assert subscribed["seq"] == 0
        assert await live.sync() == [], "no snapshot may be sent for a subject without messages"

        for step, ((content, fields), (snap_content, snap_fields)) in enumerate(TABLE_4_3, 1):
            result = await publisher.publish_ok(subject, content, fields)
            assert result["seq"] == step
            epoch = result["epoch"]

            # A live subscriber gets the message itself: its own fields, not the merged ones.
            (update,) = await live.messages(1, subject)
            assert update["kind"] == "update"
            assert (update["content"], update["fields"]) == (content, fields)
            assert (update["epoch"], update["seq"]) == (epoch, step)

            # GET /snapshot, text: the content only (spec 4.1.3).
            text = await http.get("/snapshot", params={"subject": subject})
            assert text.status_code == 200, text.text
            assert text.headers["content-type"].startswith("text/plain")
            assert text.text == snap_content

            # GET /snapshot, JSON: content, merged fields and position.
            doc = await http.get(
                "/snapshot", params={"subject": subject}, headers={"Accept": "application/json"}
            )
            assert doc.status_code == 200, doc.text
            assert doc.headers["content-type"].startswith("application/json")
            assert doc.json() == {
                "subject": subject,
                "content": snap_content,
                "fields": snap_fields,
                "epoch": epoch,
                "seq": step,
            }

            # A fresh WebSocket subscriber: subscribed, then exactly one snapshot message.
            fresh = await connect(srv)
            subscribed, frames = await fresh.subscribe_all(subject)
            assert subscribed["status"] == "allow"
            assert subscribed["recovery"] == "none"
            assert (subscribed["epoch"], subscribed["seq"]) == (epoch, step)
            assert len(frames) == 1, frames
            snapshot = frames[0]
            assert snapshot["type"] == "message"
            assert snapshot["kind"] == "snapshot"
            assert snapshot["subject"] == subject
            assert snapshot["content"] == snap_content
            assert snapshot["fields"] == snap_fields
            assert (snapshot["epoch"], snapshot["seq"]) == (epoch, step)
            await fresh.close()


async def test_snapshot_then_live_updates_without_gap(server, connect, subject):
    s = subject("IBM")
    publisher = await connect(server)
    for i in range(1, 4):
        await publisher.publish_ok(s, f"v{i}", {"n": str(i)})
    sub = await connect(server)
    subscribed = await sub.subscribe(s)
    assert subscribed["seq"] == 3
    for i in range(4, 7):
        await publisher.publish_ok(s, f"v{i}")
    frames = await sub.messages(4, s)
    assert [(f["kind"], f["seq"], f["content"]) for f in frames] == [
        ("snapshot", 3, "v3"),
        ("update", 4, "v4"),
        ("update", 5, "v5"),
        ("update", 6, "v6"),
    ]
    assert frames[0]["fields"] == {"n": "3"}


async def test_not_retained_message_is_delivered_but_not_in_snapshot(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    sub = await connect(server)
    await publisher.publish_ok(s, "kept", {"a": "1"})
    await sub.subscribe(s)
    (snapshot,) = await sub.messages(1, s)
    assert snapshot["content"] == "kept"
    result = await publisher.publish_ok(s, "transient", {"a": "2"}, retained=False)
    (update,) = await sub.messages(1, s)
    assert (update["content"], update["retained"], update["seq"]) == (
        "transient",
        False,
        result["seq"],
    )
    async with server.http() as http:
        doc = await http.get(
            "/snapshot", params={"subject": s}, headers={"Accept": "application/json"}
        )
    assert doc.json()["content"] == "kept"
    assert doc.json()["fields"] == {"a": "1"}


async def test_standard_qos_takes_no_sequence_number(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    sub = await connect(server)
    await sub.subscribe(s)
    first = await publisher.publish_ok(s, "g1")
    standard = await publisher.publish_ok(s, "s1", qos="standard")
    second = await publisher.publish_ok(s, "g2")
    assert (first["seq"], standard["seq"], second["seq"]) == (1, 1, 2)
    frames = await sub.messages(3, s)
    assert [(f["content"], f["qos"], f["seq"]) for f in frames] == [
        ("g1", "guaranteed", 1),
        ("s1", "standard", 1),
        ("g2", "guaranteed", 2),
    ]


async def test_unsubscribe_stops_delivery_and_is_idempotent(server, connect, subject):
    s = subject()
    publisher = await connect(server)
    sub = await connect(server)
    await sub.subscribe(s)
    await publisher.publish_ok(s, "before")
    assert [f["content"] for f in await sub.messages(1, s)] == ["before"]
    for request_id in (41, 42):  # twice: idempotent
        await sub.send({"op": "unsubscribe", "id": request_id, "subjects": [s]})
        unsubscribed = await sub.expect("unsubscribed", id=request_id)
        assert unsubscribed["subject"] == s
    await publisher.publish_ok(s, "after")
    assert await sub.sync() == [], "a message arrived after unsubscribe"


async def test_welcome_reflects_the_configuration(server_factory, connect):
    srv = server_factory(
        ServerName="node-x",
        KeepaliveInterval=7,
        KeepaliveTimeout=20,
        MaxMessageSize=2048,
        MaxSubscriptionsPerConnection=3,
    )
    client = await connect(srv)
    welcome = client.welcome
    assert welcome["server"] == "node-x"
    assert welcome["keepalive"] == 7
    assert welcome["max_message_size"] == 2048
    assert welcome["max_subscriptions"] == 3
    assert welcome["session"]
    other = await connect(srv)
    assert other.welcome["session"] != welcome["session"]
    # MaxSubscriptionsPerConnection: the 4th subject is refused, the connection stays usable.
    for i in range(3):
        assert (await client.subscribe(f"/lim/s/{i}"))["status"] == "allow"
    refused = await client.subscribe("/lim/s/3")
    assert (refused["type"], refused["code"]) == ("error", "too_many_subscriptions"), refused
    # re-subscribing to a subject already held is allowed
    assert (await client.subscribe("/lim/s/0"))["status"] == "allow"
    await client.send({"op": "ping", "id": 9})
    assert (await client.expect("pong"))["id"] == 9


@pytest.mark.parametrize("publish_snapshot", [False])
async def test_publish_snapshot_message_false(server_factory, connect, publish_snapshot):
    srv = server_factory(PublishSnapshotMessage=publish_snapshot)
    s = "/Stocks/NYSE/IBM"
    publisher = await connect(srv)
    for content in ("193", "192", "195"):
        last = await publisher.publish_ok(s, content, {"volume": "6.62M"})
    sub = await connect(srv)
    subscribed, frames = await sub.subscribe_all(s)
    assert subscribed["status"] == "allow"
    assert subscribed["recovery"] == "none"
    assert (subscribed["epoch"], subscribed["seq"]) == (last["epoch"], 3)
    assert frames == [], "PublishSnapshotMessage = false: no snapshot message"
    # live messages still flow, continuing from the announced position
    await publisher.publish_ok(s, "196")
    (update,) = await sub.messages(1, s)
    assert (update["kind"], update["seq"], update["content"]) == ("update", 4, "196")
    # the snapshot itself is still kept (HTTP)
    async with srv.http() as http:
        response = await http.get("/snapshot", params={"subject": s})
    assert (response.status_code, response.text) == (200, "196")
