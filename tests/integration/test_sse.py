"""The Server-Sent Events fallback, ``GET /events`` (docs/protocol.md 9.1), against a real server.

The stream is read with httpx and parsed here (``pgtest.SseStream``): events are separated by a
blank line, ``data:`` holds one JSON server frame, ``id:`` the stream's position token (opaque:
the tests only hand it back as ``Last-Event-ID``, as a browser's EventSource would).
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import time
import uuid
from typing import Any

import jwt
import pytest

from .pgtest import (
    ServerProcess,
    SseEvent,
    SseStream,
    http_publish,
    jolokia_exec,
    publish_burst,
    stats_json,
)

SECRET = "sse-integration-secret-0123456789abcdef"


async def publish_ok(
    server: ServerProcess, subject: str, content: str, **kw: Any
) -> dict[str, Any]:
    response = await http_publish(server, subject, content, **kw)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["result"] == "ok", body
    return body


def is_message(subject: str, content: str | None = None) -> Any:
    return lambda f: (
        f.get("type") == "message"
        and f.get("subject") == subject
        and (content is None or f.get("content") == content)
    )


def check_ids(events: list[SseEvent]) -> None:
    """Events that move the position carry an id; the others carry none (docs/protocol.md 9.1).

    A ``subscribed`` frame moves the position at once only when nothing follows it
    (``up_to_date``); otherwise its position is pending until the first event that is not one of
    the subject's opening messages (snapshot, recovered, historical), which then carries the id.
    """
    positions: dict[str, tuple[str, int]] = {}
    pending: tuple[str, tuple[str, int]] | None = None
    for event in events:
        frame = event.data
        moves = False
        if pending is not None:
            subject, position = pending
            opening = (
                frame["type"] == "message"
                and frame["subject"] == subject
                and frame["kind"] in ("snapshot", "recovered", "historical")
            )
            if not opening:
                pending = None
                if positions.get(subject) != position:
                    positions[subject] = position
                    moves = True
        if frame["type"] == "subscribed" and frame["status"] == "allow":
            position = (frame["epoch"], frame["seq"])
            if frame["recovery"] == "up_to_date":
                positions[frame["subject"]] = position
                moves = True
            else:
                pending = (frame["subject"], position)
        elif frame["type"] == "message" and (
            frame["kind"] == "snapshot" or frame["qos"] == "guaranteed" or frame.get("conflated")
        ):
            positions[frame["subject"]] = (frame["epoch"], frame["seq"])
            moves = True
        if moves:
            assert event.id, f"an event that moves the position needs an id: {event}"
        else:
            assert event.id is None, f"no id expected on {event}"


async def open_stream(server: ServerProcess, subjects: list[str], **kw: Any) -> SseStream:
    stream = await SseStream(server, subjects, **kw).open()
    assert stream.status == 200, (stream.status, stream.body)
    return stream


@pytest.fixture
async def streams():
    opened: list[SseStream] = []

    async def make(server: ServerProcess, subjects: list[str], **kw: Any) -> SseStream:
        stream = await open_stream(server, subjects, **kw)
        opened.append(stream)
        return stream

    yield make
    for stream in opened:
        await stream.close()


# --- the stream -------------------------------------------------------------------------------


async def test_stream_welcome_subscribed_snapshot_and_live_updates(server, subject, streams):
    a, b = subject("A"), subject("B")
    await publish_ok(server, a, "193", fields={"volume": "6.62M"})
    stream = await streams(server, [a, b])
    assert stream.headers["content-type"].startswith("text/event-stream")

    welcome = await stream.next()
    assert welcome.data["type"] == "welcome"
    assert welcome.data["session"]
    assert welcome.retry == 2000, "the first event sets the reconnection delay"
    assert welcome.id is None

    sub_a = await stream.next()
    assert sub_a.data["type"] == "subscribed"
    assert (sub_a.data["subject"], sub_a.data["status"]) == (a, "allow")
    assert sub_a.data["recovery"] == "none"
    snapshot = await stream.next()
    assert snapshot.data["type"] == "message"
    assert (snapshot.data["kind"], snapshot.data["subject"]) == ("snapshot", a)
    assert (snapshot.data["content"], snapshot.data["fields"]) == ("193", {"volume": "6.62M"})
    sub_b = await stream.next()
    assert (sub_b.data["type"], sub_b.data["subject"], sub_b.data["status"]) == (
        "subscribed",
        b,
        "allow",
    )

    # live updates published over HTTP
    first = await publish_ok(server, a, "194", fields={"bid": "1"})
    await publish_ok(server, b, "b1")
    await publish_ok(server, a, "standard", qos="standard")
    last = await publish_ok(server, a, "195")
    live = await stream.take_until(is_message(a, "195"))
    assert [(e.data["subject"], e.data["content"], e.data["kind"]) for e in live] == [
        (a, "194", "update"),
        (b, "b1", "update"),
        (a, "standard", "update"),
        (a, "195", "update"),
    ]
    assert live[0].data["seq"] == first["seq"]
    assert live[-1].data["seq"] == last["seq"]
    assert live[2].data["qos"] == "standard"
    for event in stream.events:
        assert isinstance(event.data, dict), f"one JSON frame per event: {event.raw[:200]}"
        assert "type" in event.data
    check_ids(stream.events)
    assert live[2].id is None, "a standard message does not move the position"
    assert stream.buffer == []


# --- recovery ---------------------------------------------------------------------------------


async def test_last_event_id_recovers_exactly_the_missed_messages(server, subject, streams):
    a, b = subject("A"), subject("B")
    await publish_ok(server, a, "a0")
    await publish_ok(server, b, "b0")
    first = await streams(server, [a, b])
    await first.expect("message", subject=b, kind="snapshot")
    for i in (1, 2):
        await publish_ok(server, a, f"a{i}")
    await first.wait_for(is_message(a, "a2"))
    last_id = first.last_event_id
    assert last_id
    await first.close()

    missed = [await publish_ok(server, a, f"m{i}") for i in range(1, 11)]
    second = await streams(server, [a, b], headers={"Last-Event-ID": last_id})
    welcome = await second.next()
    assert welcome.data["type"] == "welcome"
    sub_a = await second.next()
    assert sub_a.data["type"] == "subscribed", sub_a
    assert (sub_a.data["subject"], sub_a.data["status"]) == (a, "allow")
    assert sub_a.data["recovery"] == "recovered"
    assert (sub_a.data["epoch"], sub_a.data["seq"]) == (missed[-1]["epoch"], missed[-1]["seq"])
    recovered = [await second.next() for _ in missed]
    assert [e.data["kind"] for e in recovered] == ["recovered"] * 10
    assert [e.data["subject"] for e in recovered] == [a] * 10
    assert [e.data["content"] for e in recovered] == [f"m{i}" for i in range(1, 11)]
    assert [e.data["seq"] for e in recovered] == [m["seq"] for m in missed]
    sub_b = await second.next()
    assert (sub_b.data["type"], sub_b.data["subject"]) == ("subscribed", b)
    assert sub_b.data["recovery"] == "up_to_date", "nothing missed on B"

    # then live, with no duplicate and no gap
    marker = await publish_ok(server, a, "live")
    after = await second.take_until(is_message(a, "live"))
    assert [(e.data["kind"], e.data["seq"]) for e in after] == [("update", marker["seq"])]
    assert marker["seq"] == missed[-1]["seq"] + 1
    check_ids(second.events)


async def test_position_parameter_recovers_a_subject(server, subject, streams):
    a, b = subject("A"), subject("B")
    held = await publish_ok(server, a, "a1")
    missed = [await publish_ok(server, a, f"m{i}") for i in range(1, 11)]
    await publish_ok(server, b, "b1")
    position = f"{a} {held['epoch']}:{held['seq']}"
    stream = await streams(server, [a, b], params=[("position", position)])
    await stream.expect("welcome")
    events = await stream.take_until(lambda f: f.get("type") == "subscribed" and f["subject"] == b)
    sub_a, *recovered, sub_b = events
    assert (sub_a.data["type"], sub_a.data["subject"], sub_a.data["recovery"]) == (
        "subscribed",
        a,
        "recovered",
    )
    assert [(e.data["kind"], e.data["content"]) for e in recovered] == [
        ("recovered", f"m{i}") for i in range(1, 11)
    ]
    assert [e.data["seq"] for e in recovered] == [m["seq"] for m in missed]
    assert sub_b.data["recovery"] == "none", "no position for B: a fresh subscription"
    snapshot_b = await stream.next()
    assert (snapshot_b.data["kind"], snapshot_b.data["content"]) == ("snapshot", "b1")
    marker = await publish_ok(server, a, "live")
    after = await stream.take_until(is_message(a, "live"))
    assert [(e.data["kind"], e.data["seq"]) for e in after] == [("update", marker["seq"])]


async def test_a_reconnect_right_after_a_recovering_subscribed_event_loses_nothing(
    server, subject, streams
):
    """9.1: "a reconnect loses nothing". The ``subscribed`` event of a recovery comes before
    the recovered messages; an EventSource cut off right after it reconnects with its id."""
    a = subject("A")
    await publish_ok(server, a, "a0")
    first = await streams(server, [a])
    await first.expect("message", subject=a, kind="snapshot")
    held_id = first.last_event_id
    assert held_id
    await first.close()
    missed = [await publish_ok(server, a, f"m{i}") for i in range(1, 4)]

    second = await streams(server, [a], headers={"Last-Event-ID": held_id})
    subscribed = await second.expect("subscribed", subject=a)
    assert subscribed.data["recovery"] == "recovered"
    assert subscribed.id is None, "its position holds only once the recovered messages are sent"
    await second.close()  # cut off before the recovered messages were read

    # cut off right after the subscribed event (which carries no id), an EventSource still holds
    # the id it saw last on the first stream
    last_id = held_id
    third = await streams(server, [a], headers={"Last-Event-ID": last_id})
    again = await third.expect("subscribed", subject=a)
    await publish_ok(server, a, "live")
    got = await third.take_until(is_message(a, "live"))
    contents = [e.data["content"] for e in got if e.data["type"] == "message"]
    assert contents == [*(f"m{i}" for i in range(1, 4)), "live"], (
        f"messages {[m['seq'] for m in missed]} were lost: the id of the subscribed event "
        f"(recovery {again.data['recovery']!r} on reconnect) claimed a position the client "
        "had not received yet"
    )


async def test_every_id_carries_the_position_of_every_subject(server, subject, streams):
    """9.1: the id encodes "the position of **every** subject of the stream". A stream that
    recovers A then B and is cut off right after A's subscribed event must still recover B."""
    a, b = subject("A"), subject("B")
    await publish_ok(server, a, "a0")
    await publish_ok(server, b, "b0")
    first = await streams(server, [a, b])
    await first.expect("message", subject=b, kind="snapshot")
    held_id = first.last_event_id
    assert held_id
    await first.close()
    missed = [await publish_ok(server, b, f"m{i}") for i in range(1, 4)]  # only B moves

    second = await streams(server, [a, b], headers={"Last-Event-ID": held_id})
    sub_a = await second.expect("subscribed", subject=a)
    assert sub_a.data["recovery"] == "up_to_date"
    assert sub_a.id
    await second.close()  # cut off before B was recovered

    third = await streams(server, [a, b], headers={"Last-Event-ID": sub_a.id})
    sub_b = await third.expect("subscribed", subject=b)
    assert sub_b.data["recovery"] == "recovered", (
        f"B answered {sub_b.data['recovery']!r}: the id of A's subscribed event did not carry "
        "B's position"
    )
    got = await third.take_until(is_message(b, "m3"))
    assert [e.data["seq"] for e in got if e.data["type"] == "message"] == [m["seq"] for m in missed]


# --- refused requests -------------------------------------------------------------------------


async def test_invalid_requests(server, subject, streams):
    a = subject("A")
    invalid_id = await SseStream(
        server, [a], headers={"Last-Event-ID": "not a pushgrid id!"}
    ).open()
    assert invalid_id.status == 400
    assert invalid_id.headers["content-type"].startswith("application/problem+json")
    problem = json.loads(invalid_id.body)
    assert problem["status"] == 400, problem
    assert problem["type"] == f"urn:pushgrid:error:{problem['code']}", problem
    await invalid_id.close()

    no_subject = await SseStream(server, []).open()
    assert no_subject.status == 400
    assert no_subject.headers["content-type"].startswith("application/problem+json")
    await no_subject.close()

    bad_position = await SseStream(server, [a], params=[("position", "garbage")]).open()
    assert bad_position.status == 400
    await bad_position.close()

    # an invalid subject: an error frame in the stream, the other subjects still served
    stream = await streams(server, ["/Stocks", a])
    await stream.expect("welcome")
    error = await stream.next()
    assert error.data["type"] == "error", error
    assert (error.data["code"], error.data["subject"]) == ("invalid_subject", "/Stocks")
    assert error.id is None
    subscribed = await stream.next()
    assert (subscribed.data["type"], subscribed.data["subject"]) == ("subscribed", a)
    assert subscribed.data["status"] == "allow"
    await publish_ok(server, a, "after")
    (message,) = await stream.messages(1, a)
    assert message.data["content"] == "after"


# --- entitlement ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jwt_server(module_server_factory) -> ServerProcess:
    return module_server_factory(
        Entitlement="jwt", EntitlementJwtSecret=SECRET, ServerName="it-sse-jwt"
    )


def token(permissions: dict[str, list[str]]) -> str:
    claims = {"sub": "sse-user", "exp": int(time.time()) + 3600, "permissions": permissions}
    return jwt.encode(claims, SECRET, algorithm="HS256")


async def test_entitlement_over_the_stream_and_http_publish(jwt_server, streams):
    base = f"/sse/{uuid.uuid4().hex[:8]}"
    mine, other = f"{base}/IBM", f"/forbidden/{uuid.uuid4().hex[:8]}/X"
    reader = token({"sub": [f"{base}/*"]})
    writer = token({"pub": [f"{base}/*"]})

    # token as a query parameter
    stream = await streams(jwt_server, [mine, other], params=[("token", reader)])
    await stream.expect("welcome")
    allowed = await stream.expect("subscribed", subject=mine)
    assert allowed.data["status"] == "allow"
    denied = await stream.expect("subscribed", subject=other)
    assert denied.data["status"] == "deny"
    assert denied.data["reason"]
    check_ids(stream.events)  # a denied subscription moves no position

    # POST /publish with a Bearer token
    ok = await http_publish(jwt_server, mine, "193", token=writer)
    assert ok.status_code == 200, ok.text
    (message,) = await stream.messages(1, mine)
    assert message.data["content"] == "193"
    refused = await http_publish(jwt_server, mine, "194", token=reader)
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "denied"
    anonymous = await http_publish(jwt_server, mine, "195")
    assert anonymous.status_code == 403
    assert anonymous.json()["code"] == "denied"
    elsewhere = await http_publish(jwt_server, other, "1", token=writer)
    assert elsewhere.status_code == 403

    # token as Authorization: Bearer on the stream; and no token at all
    bearer = await streams(jwt_server, [mine], headers={"authorization": f"Bearer {reader}"})
    assert (await bearer.expect("subscribed", subject=mine)).data["status"] == "allow"
    snapshot = await bearer.expect("message", subject=mine)
    assert (snapshot.data["kind"], snapshot.data["content"]) == ("snapshot", "193")
    nobody = await streams(jwt_server, [mine])
    refused_sub = await nobody.expect("subscribed", subject=mine)
    assert refused_sub.data["status"] == "deny"
    assert "token" in refused_sub.data["reason"]
    ok = await http_publish(jwt_server, mine, "196", token=writer)
    assert ok.status_code == 200
    (live,) = await bearer.messages(1, mine)
    assert live.data["content"] == "196"
    (live,) = await stream.messages(1, mine)
    assert live.data["content"] == "196", "the refused publishes delivered nothing"
    assert [e for e in nobody.buffer if e.data["type"] == "message"] == []


# --- conflation -------------------------------------------------------------------------------


async def test_conflation_over_the_stream(server, subject, streams, connect):
    s = subject("conflated")
    await publish_ok(server, s, "100", fields={"volume": "1M"})
    stream = await streams(server, [s], params=[("conflation", "547")])
    await stream.expect("subscribed", subject=s)
    snapshot = await stream.expect("message", subject=s)
    assert snapshot.data["kind"] == "snapshot"
    publisher = await connect(server)
    # Periods count from the subscription, not from the burst: a burst that straddles a period
    # end leaves as two messages. Retry (bounded) with fresh values until one period took it.
    for burst in range(3):
        results = await publish_burst(
            publisher,
            s,
            [
                (f"{burst + 1}01", {"ask": "1"}),
                (f"{burst + 1}02", {"bid": "2"}),
                (f"{burst + 1}03", {"ask": "3"}),
            ],
        )
        message = await stream.wait_for(is_message(s))
        if message.data["seq"] == results[-1]["seq"] or burst == 2:
            break
        await stream.wait_for(is_message(s, f"{burst + 1}03"))  # the straddling burst's rest
    assert message.data["conflated"] is True
    assert message.data["content"] == f"{burst + 1}03"
    assert message.data["fields"] == {"ask": "3", "bid": "2"}
    assert message.data["seq"] == results[-1]["seq"]
    assert message.id, "a conflated message moves the position"
    await asyncio.sleep(1.2)
    assert [e for e in stream.buffer if e.data["type"] == "message"] == []

    # its id is a usable position: nothing was missed
    await stream.close()
    again = await streams(server, [s], headers={"Last-Event-ID": message.id})
    subscribed = await again.expect("subscribed", subject=s)
    assert subscribed.data["recovery"] == "up_to_date"


# --- field deltas (docs/protocol.md 5.1.2, 9.1) -----------------------------------------------

RECORD = {"bid": "10.00", "ask": "10.02", "last": "10.01", "volume": "100"}


def merge(held: dict[str, str], events: list[SseEvent], subject: str) -> dict[str, str]:
    """What a client merging deltas holds after ``events`` (a snapshot replaces, others update)."""
    for event in events:
        frame = event.data
        if frame.get("type") == "message" and frame["subject"] == subject:
            held = {} if frame["kind"] == "snapshot" else held
            held = {**held, **frame["fields"]}
    return held


async def test_field_deltas_over_the_stream(server, subject, streams):
    """``delta=<subject>``: the delta subject's live updates carry only the changed fields
    after a first whole one; the other subject of the stream gets whole updates."""
    a, b = subject("delta"), subject("whole")
    await publish_ok(server, a, "0", fields=RECORD)
    stream = await streams(server, [a, b], params=[("delta", a)])
    snapshot = await stream.expect("message", subject=a)
    assert (snapshot.data["kind"], snapshot.data["fields"]) == ("snapshot", RECORD)
    await stream.expect("subscribed", subject=b)
    changed = {**RECORD, "bid": "10.01"}
    await publish_ok(server, a, "1", fields=changed)
    await publish_ok(server, a, "2", fields={**changed, "volume": "200"})
    await publish_ok(server, b, "b", fields=RECORD)
    await publish_ok(server, b, "b", fields=RECORD)
    got = await stream.messages(2, a)
    assert [e.data["fields"] for e in got] == [changed, {"volume": "200"}]
    assert all(e.id for e in got), "a guaranteed delta moves the position like the update"
    assert [e.data["fields"] for e in await stream.messages(2, b)] == [RECORD, RECORD]
    check_ids(stream.events)

    both = await streams(server, [a, b], params=[("delta", "true")])
    await stream.close()
    await both.expect("message", subject=b, kind="snapshot")
    await publish_ok(server, b, "b", fields={**RECORD, "ask": "9"})
    await publish_ok(server, b, "b", fields={**RECORD, "ask": "9"})
    assert [e.data["fields"] for e in await both.messages(2, b)] == [{**RECORD, "ask": "9"}, {}]

    refused = await SseStream(server, [a], params=[("delta", b)]).open()
    assert refused.status == 400, refused.body
    assert "delta=" in json.loads(refused.body)["detail"]
    await refused.close()


async def test_merged_deltas_hold_every_field_across_reconnects(server, subject, streams):
    """The property test of the WebSocket deltas (tests/unit/test_hub.py) over the stream: a
    random 10-field stream, the client reconnecting with ``Last-Event-ID`` (recovery) and
    afresh (snapshot); what it merged always equals every field published."""
    rng = random.Random(32)
    s = subject("merged")
    names = [f"f{i}" for i in range(10)]
    merged: dict[str, str] = {}
    held: dict[str, str] = {}
    last_id: str | None = None
    for round_ in range(4):
        published: list[dict[str, str]] = []
        headers = {"Last-Event-ID": last_id} if last_id and round_ % 2 else {}
        stream = await streams(server, [s], params=[("delta", s)], headers=headers)
        await stream.expect("subscribed", subject=s)
        for step in range(15):
            fields = {name: str(rng.randrange(4)) for name in rng.sample(names, rng.randint(1, 4))}
            merged.update(fields)
            published.append(fields)
            await publish_ok(server, s, f"{round_}.{step}", fields=fields)
        await stream.wait_for(is_message(s, f"{round_}.14"))
        held = merge(held, stream.events, s)
        assert held == merged, round_
        updates = [e.data["fields"] for e in stream.events if e.data.get("kind") == "update"]
        assert updates[0].items() >= published[0].items(), "the first live message is whole"
        # after it, only changes: a field published with the value it had is left out
        assert any(len(got) < len(sent) for got, sent in zip(updates, published, strict=True))
        last_id = stream.last_event_id
        await stream.close()
        # published while no stream is open: recovered, or in the next snapshot
        fields = {name: str(rng.randrange(4)) for name in rng.sample(names, 3)}
        merged.update(fields)
        await publish_ok(server, s, "gap", fields=fields)


# --- closing ----------------------------------------------------------------------------------


async def test_shutdown_sends_a_closing_event(server_factory, subject, streams):
    srv = server_factory()
    s = subject("A")
    stream = await streams(srv, [s])
    await stream.expect("subscribed", subject=s)
    await srv.astop(signal.SIGTERM)
    await stream.wait_ended()
    closing = stream.events[-1]
    assert closing.data["type"] == "closing", stream.events
    assert closing.data["code"] == 1001
    assert isinstance(closing.data["reason"], str)
    check_ids(stream.events)


async def test_keepalive_events_and_no_keepalive_timeout(server_factory, subject, streams):
    """An idle stream gets keepalive events and outlives KeepaliveTimeout (it sends nothing)."""
    srv = server_factory(KeepaliveInterval=0.5, KeepaliveTimeout=1.0)
    s = subject("A")
    stream = await streams(srv, [s])
    await stream.expect("subscribed", subject=s)
    await stream.expect("keepalive", timeout=5)
    check_ids(stream.events)
    await asyncio.sleep(2.5)  # more than twice KeepaliveTimeout without a byte from the client
    assert not stream.ended.is_set(), stream.events[-3:]
    await publish_ok(srv, s, "still here")
    (message,) = await stream.messages(1, s)
    assert message.data["content"] == "still here"
    assert [e for e in stream.events if e.data["type"] == "closing"] == []


async def test_a_stream_is_a_session_the_operator_can_disconnect(server_factory, subject, streams):
    srv = server_factory()
    s = subject("A")
    assert (await stats_json(srv))["gauges"]["sessions"] == 0
    stream = await streams(srv, [s])
    welcome = await stream.expect("welcome")
    await stream.expect("subscribed", subject=s)
    session_id = welcome.data["session"]
    gauges = (await stats_json(srv))["gauges"]
    assert gauges["sessions"] == 1, gauges
    assert gauges["subscriptions"] == 1, gauges
    listed = await jolokia_exec(srv, "pushgrid:type=Sessions", "list", [])
    assert [(x["id"], x["subjects"]) for x in listed["value"]] == [(session_id, [s])]

    answer = await jolokia_exec(srv, "pushgrid:type=Sessions", "disconnect", [session_id])
    assert answer.get("status") == 200, answer
    assert answer["value"] is True
    await stream.wait_ended()
    closing = stream.events[-1]
    assert closing.data["type"] == "closing", stream.events
    assert closing.data["code"] == 4003

    async def sessions() -> int:
        return int((await stats_json(srv))["gauges"]["sessions"])

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while await sessions() != 0:
        assert loop.time() < deadline, "the session was not removed"
        await asyncio.sleep(0.05)
    again = await jolokia_exec(srv, "pushgrid:type=Sessions", "disconnect", [session_id])
    assert again["value"] is False


async def test_client_closing_the_stream_ends_its_session(server_factory, subject):
    srv = server_factory()
    s = subject("A")
    stream = await open_stream(srv, [s])
    try:
        await stream.expect("subscribed", subject=s)
        assert (await stats_json(srv))["gauges"]["sessions"] == 1
    finally:
        await stream.close()
    seen: list[int] = []

    async def poll() -> None:
        seen.append(int((await stats_json(srv))["gauges"]["sessions"]))

    await poll()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while seen[-1] != 0 and loop.time() < deadline:
        await asyncio.sleep(0.05)
        await poll()
    assert seen[-1] == 0, f"sessions after the client left: {seen[-5:]}"
    gauges = (await stats_json(srv))["gauges"]
    assert gauges["subscriptions"] == 0
