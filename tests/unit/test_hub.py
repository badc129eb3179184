"""Hub + Session with the real MemoryEngine; only the socket side (Peer) is faked."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from wsproto.frame_protocol import FrameProtocol, Opcode

from pushgrid.metrics.counters import Counters
from pushgrid.protocol.codec import Limits
from pushgrid.protocol.errors import LocalProtocolError
from pushgrid.protocol.frames import Pong, Position
from pushgrid.server.core.accounting import CLOSED, COVERED, DUE
from pushgrid.server.core.deltas import DeltaLimits
from pushgrid.server.core.entitlement import ALLOW_ALL, Grant
from pushgrid.server.core.hub import Hub
from pushgrid.server.core.outgoing import update_frame
from pushgrid.server.core.session import Session, SessionPolicy
from pushgrid.server.engine.base import (
    EngineUnavailable,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
)
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import MemoryEngine
from pushgrid.server.framing.outframe import OutFrame

SUBJECT = "/Stocks/NYSE/IBM"
OTHER = "/Stocks/NYSE/MSFT"
EPOCH = "e1"
POLICY = SessionPolicy(
    server_name="node-1",
    version="0.1.0",
    keepalive=30.0,
    limits=Limits(),
    max_subscriptions=100,
    publish_snapshot=True,
)


class FakePeer:
    """The socket side: records every frame the hub and session queue, and the WebSocket frame
    a WebSocket connection would write for it."""

    def __init__(self) -> None:
        self.outs: list[OutFrame] = []
        self.frames: list[bytes] = []
        self.closed: tuple[int, str] | None = None

    def send(self, frame: OutFrame) -> None:
        assert isinstance(frame, OutFrame)
        self.outs.append(frame)
        self.frames.append(frame.ws())

    def send_all(self, frames: Sequence[OutFrame]) -> None:
        for frame in frames:
            self.send(frame)

    # live deliveries: a real connection accounts them (core/accounting.py); queued alike here
    deliver = send
    deliver_all = send_all

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)

    def decoded(self) -> list[dict[str, Any]]:
        return [decode_ws(frame) for frame in self.frames]

    def take(self) -> list[dict[str, Any]]:
        """Decoded frames since the last take()."""
        out = self.decoded()
        self.frames.clear()
        return out


def decode_ws(frame: bytes) -> dict[str, Any]:
    """One server WebSocket frame -> its JSON object (parsed by wsproto, as a client would)."""
    parser = FrameProtocol(client=True, extensions=[])
    parser.receive_bytes(frame)
    frames = list(parser.received_frames())
    assert len(frames) == 1
    assert frames[0].opcode is Opcode.TEXT
    assert frames[0].message_finished
    payload = frames[0].payload
    assert isinstance(payload, str)
    value = json.loads(payload)
    assert isinstance(value, dict)
    return value


class GatedEngine(MemoryEngine):
    """MemoryEngine whose recover/snapshot wait for ``gate``, so publishes can happen meanwhile.

    ``read_first`` reads the engine before waiting (the answer is then stale by the time it is
    returned); otherwise it waits first and reads the current state.
    """

    def __init__(self, read_first: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.read_first = read_first
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()
        self.gated = True

    async def _hold(self) -> None:
        self.entered.set()
        await self.gate.wait()

    async def recover(self, subject: str, since: Position) -> Recovery:
        if not self.gated:
            return await super().recover(subject, since)
        if self.read_first:
            answer = await super().recover(subject, since)
            await self._hold()
            return answer
        await self._hold()
        return await super().recover(subject, since)

    async def snapshot(self, subject: str) -> Snapshot | None:
        if not self.gated:
            return await super().snapshot(subject)
        if self.read_first:
            answer = await super().snapshot(subject)
            await self._hold()
            return answer
        await self._hold()
        return await super().snapshot(subject)


class World:
    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        self.counters = Counters()
        self.hub = Hub(engine, self.counters)
        self._n = 0

    def session(self, grant: Grant = ALLOW_ALL) -> tuple[Session, FakePeer]:
        self._n += 1
        peer = FakePeer()
        session = Session(f"s{self._n}", self.hub, peer, POLICY, grant, "127.0.0.1:1")
        self.hub.add_session(session)
        session.welcome()  # the protocol's first frame; the tests look at what follows it
        peer.frames.clear()
        return session, peer

    async def publish(
        self, content: str, subject: str = SUBJECT, qos: str = "guaranteed", **fields: str
    ) -> Published:
        return await self.engine.publish(
            PublishRequest(subject, content, fields, True, qos)  # type: ignore[arg-type]
        )


async def _world(engine: MemoryEngine) -> World:
    world = World(engine)
    await engine.start(world.hub.deliver)
    return world


@pytest.fixture
async def world() -> AsyncIterator[World]:
    w = await _world(MemoryEngine(epoch=EPOCH))
    yield w
    await w.engine.close()


def subscribe(*items: dict[str, Any], request_id: int = 1) -> str:
    return json.dumps({"op": "subscribe", "id": request_id, "subjects": list(items)})


# --- subscribe --------------------------------------------------------------------------------


async def test_subscribe_sends_subscribed_then_snapshot(world: World) -> None:
    await world.publish("193", volume="6.62M")
    await world.publish("192")
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT}, request_id=7))
    frames = peer.take()
    assert [f["type"] for f in frames] == ["subscribed", "message"]
    subscribed, snapshot = frames
    assert subscribed == {
        "type": "subscribed",
        "subject": SUBJECT,
        "status": "allow",
        "recovery": "none",
        "epoch": EPOCH,
        "seq": 2,
        "id": 7,
        "reason": None,
    }
    assert snapshot["kind"] == "snapshot"
    assert snapshot["subject"] == SUBJECT
    assert snapshot["content"] == "192"
    assert snapshot["fields"] == {"volume": "6.62M"}
    assert (snapshot["epoch"], snapshot["seq"]) == (EPOCH, 2)
    assert world.hub.subscriber_count(SUBJECT) == 1
    assert world.counters.subscriptions == 1


async def test_subscribe_without_snapshot_sends_subscribed_only(world: World) -> None:
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT}))
    frames = peer.take()
    assert len(frames) == 1
    assert frames[0]["type"] == "subscribed"
    assert (frames[0]["epoch"], frames[0]["seq"]) == (EPOCH, 0)


async def test_subscribe_to_several_subjects_keeps_per_subject_order(world: World) -> None:
    await world.publish("a")
    await world.publish("b", subject=OTHER)
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT}, {"subject": OTHER}))
    frames = peer.take()
    assert [(f["type"], f["subject"]) for f in frames] == [
        ("subscribed", SUBJECT),
        ("message", SUBJECT),
        ("subscribed", OTHER),
        ("message", OTHER),
    ]


async def test_denied_subscription_registers_nothing(world: World) -> None:
    session, peer = world.session(Grant(subscribe=("/Bonds/*",), publish=()))
    await session.handle_text(subscribe({"subject": SUBJECT}))
    [frame] = peer.take()
    assert (frame["type"], frame["status"], frame["subject"]) == ("subscribed", "deny", SUBJECT)
    assert world.hub.subscriber_count(SUBJECT) == 0
    assert world.counters.subscriptions == 0
    await world.publish("x")
    assert peer.frames == []


# --- live fan-out -----------------------------------------------------------------------------


async def test_live_update_is_the_same_bytes_object_for_every_subscriber(world: World) -> None:
    a, peer_a = world.session()
    b, peer_b = world.session()
    for session in (a, b):
        await session.handle_text(subscribe({"subject": SUBJECT}))
    peer_a.frames.clear()
    peer_b.frames.clear()
    out_before = world.counters.messages_out_total

    published = await world.publish("195", ask="190")

    assert len(peer_a.frames) == 1
    assert len(peer_b.frames) == 1
    assert peer_a.outs[-1] is peer_b.outs[-1]  # JSON-encoded once, by the hub
    assert peer_a.outs[-1].payload == update_frame(published).payload
    assert peer_a.frames[0] is peer_b.frames[0]  # one WebSocket frame, shared
    assert peer_a.frames[0] is peer_a.outs[-1].ws()
    update = decode_ws(peer_a.frames[0])
    assert update == {
        "type": "message",
        "kind": "update",
        "subject": SUBJECT,
        "content": "195",
        "fields": {"ask": "190"},
        "epoch": EPOCH,
        "seq": 1,
        "qos": "guaranteed",
        "retained": True,
        "ts": published.ts,
    }
    assert world.counters.messages_out_total == out_before + 2


async def test_published_by_a_session_reaches_subscribers(world: World) -> None:
    sub, sub_peer = world.session()
    await sub.handle_text(subscribe({"subject": SUBJECT}))
    sub_peer.frames.clear()
    pub, pub_peer = world.session()
    await pub.handle_text(
        json.dumps(
            {"op": "publish", "id": 9, "subject": SUBJECT, "content": "x", "fields": {"k": "v"}}
        )
    )
    await pub.answers.settle()  # the engine's part runs as a task (core/answers.py)
    [result] = pub_peer.take()
    assert result["type"] == "publish_result"
    assert (result["result"], result["id"], result["epoch"], result["seq"]) == ("ok", 9, EPOCH, 1)
    [update] = sub_peer.take()
    assert (update["kind"], update["content"], update["fields"], update["seq"]) == (
        "update",
        "x",
        {"k": "v"},
        1,
    )


async def test_other_subjects_are_not_delivered(world: World) -> None:
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT}))
    peer.frames.clear()
    await world.publish("x", subject=OTHER)
    await world.publish("y", subject=SUBJECT + "/BID")
    assert peer.frames == []


async def test_resubscribe_does_not_double_delivery(world: World) -> None:
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT}))
    await session.handle_text(subscribe({"subject": SUBJECT}))
    assert world.counters.subscriptions == 1
    assert world.hub.subscriber_count(SUBJECT) == 1
    peer.frames.clear()
    await world.publish("x")
    assert len(peer.frames) == 1


# --- unsubscribe ------------------------------------------------------------------------------


async def test_unsubscribe_stops_delivery(world: World) -> None:
    a, peer_a = world.session()
    b, peer_b = world.session()
    for session in (a, b):
        await session.handle_text(subscribe({"subject": SUBJECT}))
    peer_a.frames.clear()
    peer_b.frames.clear()

    await a.handle_text(json.dumps({"op": "unsubscribe", "id": 3, "subjects": [SUBJECT]}))
    assert peer_a.take() == [{"type": "unsubscribed", "subject": SUBJECT, "id": 3}]
    assert world.hub.subscriber_count(SUBJECT) == 1
    assert world.counters.subscriptions == 1
    assert SUBJECT not in a.subjects

    await world.publish("after")
    assert peer_a.frames == []
    assert [f["content"] for f in peer_b.take()] == ["after"]


async def test_unsubscribe_is_idempotent(world: World) -> None:
    session, peer = world.session()
    await session.handle_text(json.dumps({"op": "unsubscribe", "id": 4, "subjects": [SUBJECT]}))
    assert peer.take() == [{"type": "unsubscribed", "subject": SUBJECT, "id": 4}]
    assert world.counters.subscriptions == 0
    assert world.hub.unsubscribe(session, SUBJECT) is False


async def test_last_unsubscribe_forgets_the_subject(world: World) -> None:
    session, _ = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT}))
    assert SUBJECT in set(world.hub.subjects())
    assert world.hub.unsubscribe(session, SUBJECT) is True
    assert set(world.hub.subjects()) == set()
    assert world.hub.subscriber_count(SUBJECT) == 0


# --- pending subscriptions: nothing lost, nothing twice ---------------------------------------


def _guaranteed(frames: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [
        (f["kind"], f["seq"]) for f in frames if f["type"] == "message" and f["qos"] == "guaranteed"
    ]


async def _start_gated_subscribe(
    world: World, item: dict[str, Any]
) -> tuple[Session, FakePeer, asyncio.Task[None]]:
    engine = world.engine
    assert isinstance(engine, GatedEngine)
    session, peer = world.session()
    before = world.hub.subscriber_count(SUBJECT)
    engine.entered.clear()
    task = asyncio.create_task(session.handle_text(subscribe(item)))
    await asyncio.wait_for(engine.entered.wait(), timeout=10)  # hang guard only
    assert world.hub.subscriber_count(SUBJECT) == before + 1  # pending counts as subscribed
    assert SUBJECT in session.subjects
    return session, peer, task


@pytest.fixture(params=[False, True], ids=["wait-then-read", "read-then-wait"])
async def gated(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    w = await _world(GatedEngine(read_first=request.param, epoch=EPOCH))
    yield w
    await w.engine.close()


async def test_recovery_with_publishes_while_pending(gated: World) -> None:
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    for i in range(1, 4):
        await gated.publish(f"m{i}")  # seq 1..3 before the client comes back

    _, peer, task = await _start_gated_subscribe(
        gated, {"subject": SUBJECT, "recover": {"epoch": EPOCH, "seq": 1}}
    )
    await gated.publish("m4")
    await gated.publish("std", qos="standard")
    await gated.publish("m5")
    assert peer.frames == []  # nothing is sent while the subscription is pending

    engine.gate.set()
    await task
    frames = peer.take()

    assert frames[0]["type"] == "subscribed"
    assert frames[0]["status"] == "allow"
    assert frames[0]["recovery"] == "recovered"
    assert frames[0]["epoch"] == EPOCH
    assert all(f["type"] == "message" for f in frames[1:])
    # every missed guaranteed message exactly once, in seq order; recovered ones first
    assert [seq for _, seq in _guaranteed(frames)] == [2, 3, 4, 5]
    kinds = [kind for kind, _ in _guaranteed(frames)]
    assert kinds[:2] == ["recovered", "recovered"]
    assert set(kinds) <= {"recovered", "update"}
    assert kinds == sorted(kinds, key=lambda k: k == "update")  # no recovered after an update
    assert [f["content"] for f in frames[1:] if f["qos"] == "guaranteed"] == [
        "m2",
        "m3",
        "m4",
        "m5",
    ]
    # the standard message published meanwhile arrives once, as a live update
    standard = [f for f in frames if f["type"] == "message" and f["qos"] == "standard"]
    assert [(f["kind"], f["content"]) for f in standard] == [("update", "std")]

    # now live: the next message arrives once, as an update
    await gated.publish("m6")
    assert [(f["kind"], f["seq"]) for f in peer.take()] == [("update", 6)]
    assert gated.counters.recovery_successes_total == 1


async def test_snapshot_with_publishes_while_pending(gated: World) -> None:
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    await gated.publish("m1", f="1")
    _, peer, task = await _start_gated_subscribe(gated, {"subject": SUBJECT})
    await gated.publish("m2", f="2")
    await gated.publish("m3", f="3")
    engine.gate.set()
    await task
    frames = peer.take()

    subscribed, snapshot, *updates = frames
    assert subscribed["type"] == "subscribed"
    assert snapshot["kind"] == "snapshot"
    # accounting (ADR 054): m2 and m3 were due to the opening subscription; what the snapshot
    # held is "covered", the rest was handed over as updates
    tally = gated.hub.take_tally()[SUBJECT]
    assert tally[DUE] == 2
    assert tally[COVERED] == 2 - len(updates)
    assert (subscribed["epoch"], subscribed["seq"]) == (EPOCH, snapshot["seq"])
    # the snapshot covers up to its seq; the buffered updates after it follow, each once
    assert [u["kind"] for u in updates] == ["update"] * len(updates)
    assert [u["seq"] for u in updates] == list(range(snapshot["seq"] + 1, 4))
    final = snapshot["content"] if not updates else updates[-1]["content"]
    assert final == "m3"

    await gated.publish("m4")
    assert [(f["kind"], f["seq"]) for f in peer.take()] == [("update", 4)]


async def test_unsubscribe_while_pending_sends_nothing(gated: World) -> None:
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    await gated.publish("m1")
    session, peer, task = await _start_gated_subscribe(gated, {"subject": SUBJECT})
    assert gated.hub.unsubscribe(session, SUBJECT) is True
    await gated.publish("m2")
    engine.gate.set()
    await task
    assert peer.frames == []
    assert gated.hub.subscriber_count(SUBJECT) == 0
    assert gated.counters.subscriptions == 0
    await gated.publish("m3")
    assert peer.frames == []


async def test_an_abandoned_opening_subscription_accounts_its_buffered_updates(
    gated: World,
) -> None:
    """Updates buffered for a subscription that never opened are due and end "closed"."""
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    session, peer, task = await _start_gated_subscribe(gated, {"subject": SUBJECT})
    gated.hub.take_tally()
    await gated.publish("m1")
    await gated.publish("m2")
    assert gated.hub.unsubscribe(session, SUBJECT) is True
    engine.gate.set()
    await task
    assert peer.frames == []
    tally = gated.hub.take_tally()[SUBJECT]
    assert (tally[DUE], tally[CLOSED], tally[COVERED]) == (2, 2, 0)


async def test_disconnect_while_pending_sends_nothing(gated: World) -> None:
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    session, peer, task = await _start_gated_subscribe(
        gated, {"subject": SUBJECT, "recover": {"epoch": EPOCH, "seq": 0}}
    )
    gated.hub.remove_session(session)
    await gated.publish("m1")
    engine.gate.set()
    await task
    assert peer.frames == []
    assert gated.hub.subscriber_count(SUBJECT) == 0
    assert set(gated.hub.subjects()) == set()
    assert gated.counters.subscriptions == 0
    assert gated.counters.sessions == 0


async def test_pending_subscriber_does_not_delay_live_ones(gated: World) -> None:
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    engine.gated = False
    await gated.publish("m0")
    live, live_peer = gated.session()
    await live.handle_text(subscribe({"subject": SUBJECT}))
    live_peer.frames.clear()
    engine.gated = True
    _, pending_peer, task = await _start_gated_subscribe(gated, {"subject": SUBJECT})
    published = await gated.publish("m1")
    assert live_peer.frames == [update_frame(published).ws()]
    assert pending_peer.frames == []
    live_peer.frames.clear()
    engine.gate.set()
    await task
    frames = pending_peer.take()
    assert frames[0]["type"] == "subscribed"
    messages = frames[1:]
    assert messages[0]["kind"] == "snapshot"
    seqs = [m["seq"] for m in messages]
    assert seqs == sorted(set(seqs))  # each at most once, in order
    assert messages[-1]["content"] == "m1"
    assert live_peer.frames == []  # the live subscriber got nothing twice


async def test_first_message_published_while_pending_is_not_lost(gated: World) -> None:
    # The subject has no snapshot yet when the subscription starts; m1 arrives while the
    # engine's answer is on its way. The subscriber must get m1 exactly once.
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    _, peer, task = await _start_gated_subscribe(gated, {"subject": SUBJECT})
    await gated.publish("m1", f="1")
    engine.gate.set()
    await task
    frames = peer.take()
    assert frames[0]["type"] == "subscribed"
    messages = frames[1:]
    assert [(m["content"], m["seq"]) for m in messages] == [("m1", 1)]
    assert messages[0]["kind"] in ("snapshot", "update")
    await gated.publish("m2")
    assert [(f["kind"], f["seq"]) for f in peer.take()] == [("update", 2)]


async def test_failed_recovery_resyncs_with_publishes_while_pending(gated: World) -> None:
    engine = gated.engine
    assert isinstance(engine, GatedEngine)
    engine.gated = False
    await gated.publish("m1", f="1")
    engine.gated = True
    # a position from another epoch: the server answers new_epoch and sends the snapshot
    _, peer, task = await _start_gated_subscribe(
        gated, {"subject": SUBJECT, "recover": {"epoch": "old", "seq": 7}}
    )
    await gated.publish("m2", f="2")
    engine.gate.set()
    await task
    frames = peer.take()
    subscribed, *messages = frames
    assert subscribed["recovery"] == "new_epoch"
    assert messages
    assert messages[0]["kind"] == "snapshot"
    assert subscribed["seq"] == messages[0]["seq"]
    # snapshot then, if it predates m2, m2 as an update: every seq at most once, in order
    seqs = [m["seq"] for m in messages]
    assert seqs == sorted(set(seqs))
    assert messages[-1]["content"] == "m2"
    assert gated.counters.recovery_failures_total == 1


# --- sessions and counters --------------------------------------------------------------------


async def test_remove_session_clears_subscriptions_and_counters(world: World) -> None:
    keep, keep_peer = world.session()
    gone, gone_peer = world.session()
    assert world.counters.sessions == 2
    assert world.counters.connections_total == 2
    await keep.handle_text(subscribe({"subject": SUBJECT}))
    await gone.handle_text(subscribe({"subject": SUBJECT}, {"subject": OTHER}))
    assert world.counters.subscriptions == 3

    world.hub.remove_session(gone)

    assert gone.id not in world.hub.sessions
    assert keep.id in world.hub.sessions
    assert gone.subjects == {}
    assert world.counters.sessions == 1
    assert world.counters.subscriptions == 1
    assert world.counters.connections_total == 2
    assert world.counters.disconnections_total == 1
    assert world.hub.subscriber_count(SUBJECT) == 1
    assert world.hub.subscriber_count(OTHER) == 0
    assert set(world.hub.subjects()) == {SUBJECT}

    keep_peer.frames.clear()
    gone_peer.frames.clear()
    await world.publish("x")
    await world.publish("y", subject=OTHER)
    assert gone_peer.frames == []
    assert len(keep_peer.frames) == 1

    # removing twice changes nothing
    before = world.counters.as_dict()
    world.hub.remove_session(gone)
    assert world.counters.as_dict() == before


async def test_removing_every_session_leaves_an_empty_hub(world: World) -> None:
    sessions = [world.session()[0] for _ in range(3)]
    for session in sessions:
        await session.handle_text(subscribe({"subject": SUBJECT}, {"subject": OTHER}))
    for session in sessions:
        world.hub.remove_session(session)
    assert world.hub.sessions == {}
    assert set(world.hub.subjects()) == set()
    counters = world.counters
    assert (counters.sessions, counters.subscriptions) == (0, 0)
    assert (counters.connections_total, counters.disconnections_total) == (3, 3)


# --- hot-subject tally and watched sessions (issue 17) ----------------------------------------


async def test_tally_counts_messages_in_out_and_bytes_per_subject(world: World) -> None:
    a, _ = world.session()
    b, _ = world.session()
    for session in (a, b):
        await session.handle_text(subscribe({"subject": SUBJECT}))
    world.hub.take_tally()
    first = await world.publish("1")
    await world.publish("22")
    await world.publish("x", subject=OTHER)  # nobody subscribed: in, not out
    for subject in (SUBJECT, SUBJECT, OTHER):  # accepted here (the session/HTTP paths call it)
        world.hub.count_published(subject)
    tally = world.hub.take_tally()
    size = len(update_frame(first).ws())
    assert world.counters.messages_in_total == 3
    assert tally[SUBJECT][0] == 2
    assert tally[SUBJECT][1] == 4
    assert tally[SUBJECT][2] >= 4 * size
    assert tally[OTHER][:4] == [1, 0, 0, 0]
    assert world.hub.take_tally() == {}
    assert dict(world.hub.subscriber_counts()) == {SUBJECT: 2}


async def test_a_delivered_message_is_not_counted_in_where_it_did_not_enter(world: World) -> None:
    """Issue 21 item 5: every member of a cluster fans a message out, only the one that accepted
    it from a publisher counts it in (the cluster sums the members' incoming rates)."""
    a, _ = world.session()
    await a.handle_text(subscribe({"subject": SUBJECT}))
    world.hub.take_tally()
    await world.publish("from another member")  # the engine delivers, nobody here accepted it
    assert world.counters.messages_in_total == 0
    assert world.hub.take_tally()[SUBJECT][:2] == [0, 1]
    publisher, _ = world.session()
    await publisher.handle_text(
        json.dumps({"op": "publish", "id": 1, "subject": SUBJECT, "content": "here"})
    )
    await publisher.answers.settle()  # the engine's part runs as a task (core/answers.py)
    assert world.counters.messages_in_total == 1
    assert world.hub.take_tally()[SUBJECT][:2] == [1, 1]


async def test_tally_is_handed_over_early_when_full(world: World) -> None:
    handed: list[dict[str, list[int]]] = []
    world.hub.tally_limit = 3
    world.hub.on_tally_full = lambda: handed.append(world.hub.take_tally())
    for n in range(7):
        await world.publish("v", subject=f"/many/s{n}")
        world.hub.count_published(f"/many/s{n}")
    assert [sorted(part) for part in handed] == [
        ["/many/s0", "/many/s1", "/many/s2"],
        ["/many/s3", "/many/s4", "/many/s5"],
    ]
    assert sorted(world.hub.tally) == ["/many/s6"]
    world.hub.on_tally_full = None  # nobody folds: the tally is dropped, not grown
    for n in range(7):
        await world.publish("v", subject=f"/more/s{n}")
    assert len(world.hub.tally) <= 3


async def test_watched_session_records_its_last_frames_only(world: World) -> None:
    watched, watched_peer = world.session()
    other, other_peer = world.session()
    for session in (watched, other):
        await session.handle_text(subscribe({"subject": SUBJECT}))
    recorded = world.hub.watch(watched, keep=2)
    for n in range(3):
        await world.publish(str(n))
    assert [decode_ws(frame)["content"] for _, frame in recorded] == ["1", "2"]
    assert len(watched_peer.frames) == len(other_peer.frames)  # still delivered
    await watched.handle_text(subscribe({"subject": OTHER}, request_id=2))
    await world.publish("o", subject=OTHER)
    assert decode_ws(recorded[-1][1])["subject"] == OTHER  # new subscriptions are recorded too
    world.hub.remove_session(watched)
    assert watched not in world.hub.watched


# --- our own protocol rules -------------------------------------------------------------------


async def test_frames_before_the_welcome_are_a_local_protocol_error(world: World) -> None:
    peer = FakePeer()
    session = Session("early", world.hub, peer, POLICY, ALLOW_ALL, "127.0.0.1:1")
    with pytest.raises(LocalProtocolError, match="Pong frame before the welcome"):
        session.send(Pong(id=1))
    with pytest.raises(LocalProtocolError, match="before the welcome"):
        session.send_messages([OutFrame(b"{}")])
    assert peer.frames == []  # nothing reached the wire
    session.welcome()
    assert [frame["type"] for frame in peer.take()] == ["welcome"]
    with pytest.raises(LocalProtocolError, match="second welcome"):
        session.welcome()
    session.send(Pong(id=2))
    assert peer.take() == [{"type": "pong", "id": 2}]


# --- field deltas (server/core/deltas.py, issue 25) --------------------------------------------

RECORD = {"bid": "10.00", "ask": "10.02", "last": "10.01", "volume": "100"}


def _fields(frames: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [f["fields"] for f in frames if f["type"] == "message"]


async def test_a_delta_subscriber_gets_a_full_message_then_only_changes(world: World) -> None:
    await world.publish("a", **RECORD)
    delta, dpeer = world.session()
    plain, ppeer = world.session()
    await delta.handle_text(subscribe({"subject": SUBJECT, "delta": True}))
    await plain.handle_text(subscribe({"subject": SUBJECT}))
    assert _fields(dpeer.take()) == [RECORD]  # the snapshot, whole
    ppeer.take()
    await world.publish("b", **{**RECORD, "bid": "10.01", "volume": "200"})
    await world.publish("c", **{**RECORD, "bid": "10.01", "volume": "300"})
    await world.publish("d", **{**RECORD, "bid": "10.01", "volume": "300"})
    full = {**RECORD, "bid": "10.01", "volume": "200"}
    assert _fields(dpeer.take()) == [full, {"volume": "300"}, {}]
    # the plain subscriber gets what was published, whole
    assert _fields(ppeer.take()) == [full, {**full, "volume": "300"}, {**full, "volume": "300"}]
    assert world.hub.subscriber_count(SUBJECT) == 2


async def test_a_new_subscription_starts_with_a_full_message_again(world: World) -> None:
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT, "delta": True}))
    await world.publish("1", **RECORD)
    await world.publish("2", **{**RECORD, "ask": "10.03"})
    assert _fields(peer.take()) == [RECORD, {"ask": "10.03"}]
    # recovery after a reconnect: a new subscription, and its first live message is whole
    await session.handle_text(
        subscribe({"subject": SUBJECT, "delta": True, "recover": {"epoch": EPOCH, "seq": 2}})
    )
    peer.take()
    await world.publish("3", **{**RECORD, "ask": "10.03", "last": "10.02"})
    assert _fields(peer.take()) == [{**RECORD, "ask": "10.03", "last": "10.02"}]


async def test_conflated_subscriptions_never_get_deltas(world: World) -> None:
    session, peer = world.session()
    item = {"subject": SUBJECT, "delta": True, "conflation": 100}
    await session.handle_text(subscribe(item))
    await world.publish("1", **RECORD)
    await world.publish("2", **RECORD)
    for _ in range(40):
        if _fields(peer.decoded()):
            break
        await asyncio.sleep(0.05)
    assert _fields(peer.take()) == [RECORD]


async def test_applied_deltas_always_equal_the_merged_fields(world: World) -> None:
    """A client applying deltas holds every field at its latest value, through re-subscribes."""
    rng = random.Random(25)
    names = [f"f{i}" for i in range(10)]
    session, peer = world.session()
    merged: dict[str, str] = {}
    held: dict[str, str] = {}
    for step in range(300):
        if step % 50 == 0:
            await session.handle_text(subscribe({"subject": SUBJECT, "delta": True}))
        fields = {name: str(rng.randrange(3)) for name in rng.sample(names, rng.randint(1, 10))}
        merged.update(fields)
        await world.publish(str(step), **fields)
        for frame in peer.take():
            if frame["type"] == "message":
                if frame["kind"] == "snapshot":
                    held = {}
                held.update(frame["fields"])
        assert held == merged, step
    world.hub.remove_session(session)
    assert world.hub._deltas == {}


async def test_the_delta_table_is_bounded_like_a_snapshot(world: World) -> None:
    """Issue 34 (2.6): non-retained publishes with new field names grew a subject's delta table
    without bound (100 x 600 fields: a new delta subscriber's first message held 60,001
    fields). It keeps at most MaxFieldsPerSubject fields and MaxSnapshotSize bytes per subject
    and MaxRetainedBytes in all, forgetting the fields changed longest ago; a synced subscriber
    still holds every published value."""
    limits = world.hub.delta_limits = DeltaLimits(max_fields=100, max_bytes=4000, max_total=6000)
    early, early_peer = world.session()
    await early.handle_text(subscribe({"subject": SUBJECT, "delta": True}))
    merged: dict[str, str] = {}
    for batch in range(20):
        fields = {f"b{batch}f{i}": "v" * 10 for i in range(30)}
        merged.update(fields)
        await world.engine.publish(PublishRequest(SUBJECT, str(batch), fields, False, "standard"))
    held: dict[str, str] = {}
    for fields in _fields(early_peer.take()):
        held.update(fields)
    assert held == merged, "nothing lost for a synced subscriber"
    table = world.hub._deltas[SUBJECT]
    assert len(table.fields) <= 100
    assert table.nbytes == sum(len(k) + len(v) for k, v in table.fields.items()) <= 4000
    assert limits.total == table.nbytes
    late, late_peer = world.session()
    await late.handle_text(subscribe({"subject": SUBJECT, "delta": True}))
    last = {f"b19f{i}": "w" for i in range(30)}
    await world.engine.publish(PublishRequest(SUBJECT, "x", last, False, "standard"))
    (first,) = _fields(late_peer.take())
    assert 30 <= len(first) <= 100, len(first)
    assert first.items() >= last.items(), "the message's own fields are always there"
    other, _ = world.session()  # a second subject's table counts in the same total
    await other.handle_text(subscribe({"subject": "/other/subject", "delta": True}))
    big = {f"o{i}": "z" * 40 for i in range(60)}
    await world.engine.publish(PublishRequest("/other/subject", "o", big, False, "standard"))
    assert limits.total <= 6000 + 60 * 42, "over MaxRetainedBytes by one message at most"
    for session in (early, late, other):
        world.hub.remove_session(session)
    assert limits.total == 0, "a table's bytes leave with its last subscriber"


async def test_conflated_sends_are_counted_per_subject(world: World) -> None:
    """A conflated subscription's sends count in the subject's tally (hot and watched
    subjects), one per frame sent, with its bytes, like a live delivery."""
    session, peer = world.session()
    await session.handle_text(subscribe({"subject": SUBJECT, "conflation": 100}))
    world.hub.take_tally()
    for n in range(3):
        await world.publish(str(n))
    await asyncio.sleep(0.25)
    sent = [f for f in peer.take() if f.get("type") == "message" and f.get("conflated")]
    assert len(sent) == 1
    counts = world.hub.take_tally()[SUBJECT]
    assert counts[1] == 1
    assert counts[2] > 0
    assert world.counters.messages_out_total == 1


# --- a publish's size: computed once, carried from the frame to the counters ------------------


async def test_a_publish_computes_its_size_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """MaxMessageSize (the codec), the engine's memory bound and the counters' bytes in all read
    the one size computed for the frame (ADR 036; it was computed up to four times)."""
    import sys

    from pushgrid.protocol import sizes

    original = sizes.message_size
    calls: list[int] = []

    def counted(content: str, fields: Any) -> int:
        size = original(content, fields)
        calls.append(size)
        return size

    for module in list(sys.modules.values()):  # every module that imported it, by name
        if getattr(module, "message_size", None) is original:
            monkeypatch.setattr(module, "message_size", counted)
    world = await _world(
        MemoryEngine(EngineLimits(max_subjects=10, max_retained_bytes=10**6), epoch=EPOCH)
    )
    try:
        pub, pub_peer = world.session()
        frame = {"op": "publish", "id": 1, "subject": SUBJECT, "content": "héllo"}
        await pub.handle_text(json.dumps({**frame, "fields": {"k": "v"}}))
        await pub.answers.settle()
        [result] = pub_peer.take()
        assert result["result"] == "ok"
        assert calls == [6 + 2]  # "héllo" is 6 bytes of UTF-8, the field 2
        assert world.hub.take_tally()[SUBJECT][3] == 8  # bytes in: that size
    finally:
        await world.engine.close()


# --- subscribe outcomes (the subscribe-success objective, ADR 055) ------------------------------


class NoQuorumEngine(MemoryEngine):
    """An engine that cannot answer a snapshot (a cluster without quorum)."""

    async def snapshot(self, subject: str) -> Snapshot:
        raise EngineUnavailable("no quorum")


async def test_subscribes_count_opened_and_failed_not_denied(world: World) -> None:
    session, peer = world.session(Grant(subscribe=(SUBJECT,), publish=()))
    await session.handle_text(subscribe({"subject": SUBJECT}, {"subject": OTHER}))
    frames = peer.take()
    assert [(f["type"], f.get("status")) for f in frames if f["type"] == "subscribed"] == [
        ("subscribed", "allow"),
        ("subscribed", "deny"),  # the entitlement's answer: not a failure of the service
    ]
    assert (world.counters.subscribes_total, world.counters.subscribe_failures_total) == (1, 0)
    broken = await _world(NoQuorumEngine(epoch=EPOCH))
    try:
        session, peer = broken.session()
        await session.handle_text(subscribe({"subject": SUBJECT}))
        [frame] = peer.take()
        assert (frame["type"], frame["code"]) == ("error", "engine_unavailable")
        assert (broken.counters.subscribes_total, broken.counters.subscribe_failures_total) == (
            0,
            1,
        )
    finally:
        await broken.engine.close()
