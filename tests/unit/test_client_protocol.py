"""The client's sans-I/O state machine: transitions, frames in / actions out, reconnect rules.

No sockets and no event loop: every test feeds events (frames as bytes, timer expiries,
connection ends) to :class:`client.protocol.ClientProtocol` and checks the actions it returns.
"""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.client.backoff import Backoff, BackoffPolicy
from pushgrid.client.closecodes import rule_for_close
from pushgrid.client.models import PublishResult as Answered
from pushgrid.client.models import PublishStatus, Status
from pushgrid.client.protocol import (
    DEAD_FACTOR,
    SUBJECTS_PER_FRAME,
    TRANSITIONS,
    Abort,
    Answer,
    ClientAction,
    ClientProtocol,
    Deliver,
    Ended,
    Event,
    Notify,
    Reconnect,
    RetrySubscribe,
    Send,
    State,
    StateError,
    Stop,
)
from pushgrid.client.servers import ServerPool, parse_servers
from pushgrid.protocol.errors import CloseCode
from pushgrid.protocol.frames import (
    Error,
    MessageFrame,
    Ping,
    Position,
    Publish,
    PublishResultFrame,
    Subscribe,
    Subscribed,
    Token,
    TokenResult,
    Unsubscribe,
    Welcome,
)

S = "/a/b"
POLICY = BackoffPolicy(base=1.0, quick_retries=1, jitter=0.0, cap=8.0, stable_after=10.0)
WELCOME = Welcome("srv", "1.1", "sess", keepalive=10.0, max_message_size=1000, max_subscriptions=9)


def protocol(servers: tuple[str, ...] = ("127.0.0.1:1", "127.0.0.1:2")) -> ClientProtocol:
    """Delivery reports off: their pings and reports are tested in test_delivery_reports.py."""
    rng = random.Random(1)
    pool = ServerPool(parse_servers(list(servers)), rng)
    return ClientProtocol(pool, Backoff(POLICY, rng), rng, token="t0", reports=False)


def opened(subjects: tuple[str, ...] = ()) -> ClientProtocol:
    p = protocol()
    p.start()
    p.welcome_received(WELCOME, now=0.0)
    if subjects:
        p.subscribe(list(subjects), 0, 0)
    return p


def wire(*frames: msgspec.Struct) -> bytes:
    return msgspec.json.encode(frames[0] if len(frames) == 1 else list(frames))


def msg(seq: int, epoch: str = "e1", subject: str = S) -> MessageFrame:
    return MessageFrame("update", subject, f"c{seq}", {}, epoch, seq, "guaranteed", True, 0)


def sent(actions: list[ClientAction]) -> list[msgspec.Struct]:
    return [a.frame for a in actions if isinstance(a, Send)]


def statuses(actions: list[ClientAction]) -> list[tuple[Status, str | None]]:
    return [(a.event.status, a.event.detail) for a in actions if isinstance(a, Notify)]


def subscribe_ids(p: ClientProtocol, actions: list[ClientAction]) -> list[int]:
    return [f.id for f in sent(actions) if isinstance(f, Subscribe) and f.id is not None]


# --- states ---------------------------------------------------------------------------------


@settings(deadline=None)
@given(st.lists(st.sampled_from(list(Event)), max_size=12))
def test_states_change_only_through_the_transition_table(events: list[Event]) -> None:
    p = protocol()
    for event in events:
        allowed = TRANSITIONS.get((p.state, event))
        before = p.state
        try:
            if event is Event.START:
                p.start()
            elif event is Event.WELCOME:
                p.welcome_received(WELCOME, 0.0)
            elif event is Event.LOST:
                p.connection_lost(Ended("lost"))
            elif event is Event.REFUSED:
                p.connection_lost(Ended.closed(CloseCode.PROTOCOL_ERROR, "bad", 0.0))
            elif event is Event.RETRY:
                p.backoff_elapsed()
            else:
                p.close()
        except StateError:
            assert allowed is None
            assert p.state is before
            continue
        if before is State.CLOSED and event in (Event.LOST, Event.REFUSED, Event.CLOSE):
            assert p.state is State.CLOSED  # a closed client ignores late ends and closes
        else:
            assert p.state is allowed


def test_closed_is_final_and_close_is_idempotent() -> None:
    p = opened()
    assert isinstance(p.close()[-1], Stop)
    assert p.close() == []
    assert p.connection_lost(Ended("late")) == []
    with pytest.raises(StateError):
        p.backoff_elapsed()
    with pytest.raises(StateError):
        p.url()


# --- welcome, subscriptions, recovery -------------------------------------------------------


def test_welcome_reports_up_and_renews_subscriptions_from_their_positions() -> None:
    p = protocol()
    assert p.subscribe([S, "/x"], history=3, conflation_ms=0) == []  # not open: kept for later
    p.start()
    assert p.url().startswith("ws://127.0.0.1:")
    assert "token=t0" in p.url()
    first = p.welcome_received(WELCOME, 0.0)
    assert statuses(first) == [(Status.SERVER_UP, "srv")]
    (frame,) = sent(first)
    assert isinstance(frame, Subscribe)
    assert [(i.subject, i.recover, i.history) for i in frame.subjects] == [
        (S, None, 3),
        ("/x", None, 3),
    ]
    p.data_received(wire(Subscribed(S, "allow", "none", "e1", 4, frame.id)), 1.0)
    p.data_received(wire(msg(5)), 1.0)
    p.connection_lost(Ended("lost", up_for=1.0))
    p.backoff_elapsed()
    (again,) = sent(p.welcome_received(WELCOME, 2.0))
    assert isinstance(again, Subscribe)
    assert [(i.subject, i.recover, i.history) for i in again.subjects] == [
        (S, Position("e1", 5), 0),
        ("/x", None, 3),
    ]


def test_subscribe_frames_are_chunked() -> None:
    p = opened()
    names = [f"/s/{i}" for i in range(SUBJECTS_PER_FRAME + 1)]
    frames = sent(p.subscribe(names, 0, 0))
    assert [len(f.subjects) for f in frames if isinstance(f, Subscribe)] == [SUBJECTS_PER_FRAME, 1]
    unsubscribes = sent(p.unsubscribe(names))
    assert [len(f.subjects) for f in unsubscribes if isinstance(f, Unsubscribe)] == [
        SUBJECTS_PER_FRAME,
        1,
    ]
    assert p.subjects == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=60))
def test_delivered_guaranteed_messages_are_in_order_without_duplicates(seqs: list[int]) -> None:
    """Whatever order the server's frames arrive in, the application sees strictly increasing
    seqs; every gap asks for a recovery from the last delivered position."""
    p = opened((S,))
    p.data_received(wire(Subscribed(S, "allow", "none", "e1", 0)), 0.0)
    delivered: list[int] = []
    for seq in seqs:
        actions = p.data_received(wire(msg(seq)), 0.0)
        delivered += [a.message.seq for a in actions if isinstance(a, Deliver)]
        for frame in sent(actions):
            assert isinstance(frame, Subscribe)
            (item,) = frame.subjects
            if item.recover is not None:  # RECOVER: from the last position held
                assert item.recover == Position("e1", delivered[-1] if delivered else 0)
            # a later "recovered" subscribed frame ends the recovery, as the server would
            p.data_received(wire(Subscribed(S, "allow", "recovered", "e1", seq, frame.id)), 0.0)
    assert delivered == sorted(set(delivered))
    assert all(b == a + 1 for a, b in zip([0, *delivered], delivered, strict=False))


def test_a_gap_asks_for_recovery_then_resyncs_after_max_recoveries() -> None:
    p = opened((S,))
    p.data_received(wire(Subscribed(S, "allow", "none", "e1", 1)), 0.0)
    (recover,) = sent(p.data_received(wire(msg(3)), 0.0))
    assert isinstance(recover, Subscribe)
    assert recover.subjects[0].recover == Position("e1", 1)
    assert sent(p.data_received(wire(msg(5)), 0.0)) == []  # recovery pending: dropped
    answer = Subscribed(S, "allow", "recovered", "e1", 1, recover.id)
    assert statuses(p.data_received(wire(answer), 0.0)) == [(Status.DATA_SYNC, "recovered")]
    (second,) = sent(p.data_received(wire(msg(7)), 0.0))
    assert isinstance(second, Subscribe)
    assert second.subjects[0].recover == Position("e1", 1)  # the second gap still recovers
    p.data_received(wire(Subscribed(S, "allow", "recovered", "e1", 1, second.id)), 0.0)
    (resync,) = sent(p.data_received(wire(msg(9)), 0.0))
    assert isinstance(resync, Subscribe)
    assert resync.subjects[0].recover is None  # the third gap in a row: take a new snapshot
    reply = Subscribed(S, "allow", "none", "e1", 20, resync.id)
    assert statuses(p.data_received(wire(reply), 0.0)) == [(Status.DATA_RESYNC, "gap_resync")]


def test_subscribe_errors_deny_or_retry_later() -> None:
    p = opened()
    (denied_frame,) = sent(p.subscribe(["/d"], 0, 0))
    (busy_frame,) = sent(p.subscribe(["/u"], 0, 0))
    assert isinstance(denied_frame, Subscribe)
    assert isinstance(busy_frame, Subscribe)
    denied = p.data_received(wire(Error("denied", "no", denied_frame.id)), 0.0)
    assert statuses(denied) == [(Status.SUBSCRIBE_DENY, "denied: no")]
    busy = p.data_received(wire(Error("engine_unavailable", "no quorum", busy_frame.id)), 0.0)
    retry = busy[0]
    assert isinstance(retry, RetrySubscribe)
    assert retry.subjects == frozenset({"/u"})
    assert 0.5 <= retry.delay <= 1.5
    assert statuses(busy) == [(Status.ERROR, "engine_unavailable: no quorum")]
    assert p.subjects == ["/u"]  # kept while the cluster cannot serve it
    (again,) = sent(p.retry_subscribe(retry.subjects))
    assert isinstance(again, Subscribe)
    assert [i.subject for i in again.subjects] == ["/u"]
    assert statuses(p.data_received(wire(Error("oops", "x")), 0.0)) == [(Status.ERROR, "oops: x")]


def test_unreadable_frames_are_ignored_and_unsubscribed_messages_dropped() -> None:
    p = opened((S,))
    assert p.data_received(b"{not json", 0.0) == []
    assert p.data_received(wire(msg(1, subject="/other")), 0.0) == []


# --- publish and token requests -------------------------------------------------------------


def test_publish_answers_too_large_and_lost_connections() -> None:
    p = opened()
    request = p.publish_request(S, "x", {}, True, "guaranteed")
    assert isinstance(request, tuple)
    request_id, frame = request
    assert isinstance(frame, Publish)
    (answer,) = p.data_received(wire(PublishResultFrame("ok", S, request_id, "e1", 7)), 0.0)
    assert isinstance(answer, Answer)
    assert isinstance(answer.result, Answered)
    assert answer.result.result is PublishStatus.OK
    assert p.data_received(wire(PublishResultFrame("ok", S, request_id, "e1", 7)), 0.0) == []
    too_large = p.publish_request(S, "x" * 2000, {}, True, "guaranteed")
    assert not isinstance(too_large, tuple)
    assert too_large.result is PublishStatus.TOO_LARGE
    pending = p.publish_request(S, "y", {}, True, "standard")
    assert isinstance(pending, tuple)
    lost = p.connection_lost(Ended("lost"))
    (failed,) = [a for a in lost if isinstance(a, Answer)]
    assert failed.request_id == pending[0]
    assert isinstance(failed.result, Answered)
    assert failed.result.result is PublishStatus.FAILED
    with pytest.raises(StateError):
        p.publish_request(S, "z", {}, True, "guaranteed")


def test_publish_carries_its_msg_id_and_a_repeat_is_answered_duplicate() -> None:
    p = opened()
    request = p.publish_request(S, "x", {}, True, "guaranteed", "order-17")
    assert isinstance(request, tuple)
    request_id, frame = request
    assert frame.message_id == "order-17"
    assert b'"msg_id":"order-17"' in msgspec.json.encode(frame)
    reply = PublishResultFrame("ok", S, request_id, "e1", 7, duplicate=True)
    (answer,) = p.data_received(wire(reply), 0.0)
    assert isinstance(answer, Answer)
    assert isinstance(answer.result, Answered)
    assert (answer.result.seq, answer.result.duplicate) == (7, True)
    plain = p.publish_request(S, "y", {}, True, "guaranteed")
    assert isinstance(plain, tuple)
    assert b"msg_id" not in msgspec.json.encode(plain[1])


def test_a_publish_lost_with_its_connection_has_an_unknown_outcome() -> None:
    p = opened()
    pending = p.publish_request(S, "y", {}, True, "guaranteed", "k")
    assert isinstance(pending, tuple)
    (failed,) = [a for a in p.connection_lost(Ended("lost")) if isinstance(a, Answer)]
    assert isinstance(failed.result, Answered)
    assert failed.result.result is PublishStatus.FAILED
    assert failed.result.outcome_unknown


def test_token_update_adopts_only_an_accepted_token_and_drops_revoked_subjects() -> None:
    p = opened((S, "/keep"))
    request = p.token_request("t1")
    assert request is not None
    request_id, frame = request
    assert frame == Token("t1", request_id)
    reply = TokenResult("ok", request_id, revoked=[S])
    actions = p.data_received(wire(reply), 0.0)
    assert statuses(actions) == [(Status.SUBSCRIBE_DENY, "revoked")]
    assert isinstance(actions[-1], Answer)
    assert (p.token, p.subjects) == ("t1", ["/keep"])
    refused = p.token_request("t2")
    assert refused is not None
    p.data_received(wire(TokenResult("denied", refused[0])), 0.0)
    assert p.token == "t1"
    p.connection_lost(Ended("lost"))
    assert p.token_request("t3") is None  # not open: the next connection uses it
    assert p.token == "t3"


# --- keepalive ------------------------------------------------------------------------------


def test_keepalive_pings_after_own_silence_and_aborts_after_the_dead_deadline() -> None:
    p = opened()
    keepalive = WELCOME.keepalive
    assert p.deadline() == keepalive
    assert p.timer_fired(keepalive - 1) == []
    assert sent(p.timer_fired(keepalive)) == [Ping()]
    p.data_received(wire(msg(1, subject="/none")), keepalive + 1)  # any frame is a sign of life
    dead_at = keepalive + 1 + DEAD_FACTOR * keepalive
    p.frame_sent(dead_at - 0.5)
    assert p.deadline() == dead_at
    (abort,) = p.timer_fired(dead_at)
    assert isinstance(abort, Abort)
    p.connection_lost(Ended(abort.detail))
    assert p.deadline() is None  # no keepalive while not open


# --- reconnect rules (client/closecodes.py) -------------------------------------------------


@settings(deadline=None)
@given(
    code=st.one_of(
        st.none(), st.sampled_from([int(c) for c in CloseCode]), st.integers(1000, 4999)
    ),
    up_for=st.floats(min_value=0, max_value=60),
)
def test_connection_ends_follow_the_close_code_table(code: int | None, up_for: float) -> None:
    p = opened()
    first = p.server
    ended = Ended("lost", up_for) if code is None else Ended.closed(code, "why", up_for)
    rule = rule_for_close(code)
    actions = p.connection_lost(ended)
    downs = [a.event for a in actions if isinstance(a, Notify)]
    assert [e.status for e in downs] == [Status.SERVER_DOWN]
    assert downs[0].close_code == code
    if not rule.retry:
        assert p.state is State.CLOSED
        stop = actions[-1]
        assert isinstance(stop, Stop)
        assert stop.event.status is Status.CLOSED
        return
    (reconnect,) = [a for a in actions if isinstance(a, Reconnect)]
    assert p.state is State.WAITING
    assert downs[0].retry_in == reconnect.delay
    if rule.immediate:
        assert reconnect.delay == 0.0
    else:
        assert 0.0 <= reconnect.delay <= POLICY.cap
    p.backoff_elapsed()
    if rule.avoid_server:  # two servers: the failed one is avoided (otherwise: by weight)
        assert p.server != first


def test_backoff_grows_until_a_connection_stays_up() -> None:
    p = protocol(("127.0.0.1:1",))
    p.start()
    delays = []
    for _ in range(4):
        (reconnect,) = [a for a in p.connection_lost(Ended("refused")) if isinstance(a, Reconnect)]
        delays.append(reconnect.delay)
        p.backoff_elapsed()
    assert delays[0] == POLICY.base  # quick retry (no jitter), then exponential upper bounds
    assert all(d <= POLICY.upper_bound(i) for i, d in enumerate(delays))
    p.welcome_received(WELCOME, 0.0)
    stable = p.connection_lost(Ended("lost", up_for=POLICY.stable_after))
    (reconnect,) = [a for a in stable if isinstance(a, Reconnect)]
    assert reconnect.delay == POLICY.base  # attempt 0 again
