"""The connection timers' policy (server/transport/timers.py): each rule, then carried out."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushgrid.metrics.counters import Counters
from pushgrid.protocol.errors import CloseCode
from pushgrid.protocol.frames import Keepalive
from pushgrid.server.framing.outframe import OutFrame
from pushgrid.server.transport.states import ConnState
from pushgrid.server.transport.timers import Due, KeepalivePolicy, check, due, next_check
from pushgrid.server.transport.wheel import ConnectionSet

POLICY = KeepalivePolicy(interval=10.0, timeout=25.0)
NOW = 1000.0


@dataclass(eq=False)  # hashed by identity, as connections are
class Peer:
    """A connection's timers and what was done to it (the Timed protocol)."""

    state: ConnState = ConnState.OPEN
    deadline: float | None = None
    last_in: float = NOW
    last_out: float = NOW
    last_ping: float = NOW
    done: list[str] = field(default_factory=list)

    def abort(self) -> None:
        self.done.append("abort")

    def close(self, code: int, reason: str) -> None:
        self.done.append(f"close {code}")

    def ping(self) -> None:
        self.done.append("ping")

    def send(self, frame: OutFrame) -> None:
        self.done.append("keepalive")


@pytest.mark.parametrize(
    ("peer", "expected"),
    [
        # a deadline rules, whatever the state and the silence
        (Peer(deadline=NOW), Due.ABORT),
        (Peer(deadline=NOW + 1, last_in=0, last_out=0), Due.NOTHING),
        # an event stream only writes: keepalive when nothing went out for an interval
        (Peer(ConnState.STREAMING, last_out=NOW - 10), Due.KEEPALIVE),
        (Peer(ConnState.STREAMING, last_out=NOW - 9.9, last_in=0), Due.NOTHING),
        # HTTP (or closing) peers: aborted once silent beyond the timeout, never pinged
        (Peer(ConnState.HTTP, last_in=NOW - 25.1), Due.ABORT),
        (Peer(ConnState.HTTP, last_in=NOW - 25, last_out=0, last_ping=0), Due.NOTHING),
        # a request being answered: the client waits for us (a publish waiting for its cluster
        # may take ClusterPublishTimeout, longer than KeepaliveTimeout)
        (Peer(ConnState.RESPONDING, last_in=NOW - 60, last_out=0, last_ping=0), Due.NOTHING),
        # WebSocket peers
        (Peer(last_in=NOW - 25.1), Due.CLOSE_SILENT),
        (Peer(ConnState.PAUSED, last_in=NOW - 25.1), Due.CLOSE_SILENT),
        (Peer(last_out=NOW - 10), Due.KEEPALIVE),
        (Peer(last_in=NOW - 10, last_ping=NOW - 10), Due.PING),
        (Peer(last_in=NOW - 10, last_ping=NOW - 5), Due.NOTHING),  # one ping per interval
        (Peer(last_in=NOW - 12, last_out=NOW - 11, last_ping=NOW - 12), Due.PING | Due.KEEPALIVE),
        (Peer(), Due.NOTHING),
    ],
)
def test_due(peer: Peer, expected: Due) -> None:
    assert due(peer, NOW, POLICY) == expected


def test_check_pings_before_the_keepalive_decided_before_it() -> None:
    """The ping counts as output: the keepalive was decided first, so both go."""
    peer = Peer(last_in=NOW - 12, last_out=NOW - 11, last_ping=NOW - 12)
    check(peer, NOW, POLICY, OutFrame.of(Keepalive()), Counters())
    assert peer.done == ["ping", "keepalive"]


def test_check_closes_a_silent_websocket_and_counts_it() -> None:
    peer, counters = Peer(last_in=NOW - 30), Counters()
    check(peer, NOW, POLICY, OutFrame.of(Keepalive()), counters)
    assert peer.done == [f"close {CloseCode.KEEPALIVE_TIMEOUT}"]
    assert counters.keepalive_timeouts_total == 1


def test_check_aborts_past_a_deadline_without_counting() -> None:
    peer, counters = Peer(deadline=NOW - 1), Counters()
    check(peer, NOW, POLICY, OutFrame.of(Keepalive()), counters)
    assert peer.done == ["abort"]
    assert counters.keepalive_timeouts_total == 0


async def test_a_real_connection_silent_past_the_timeout_is_aborted() -> None:
    """The same policy on a real HttpConnection over the fake transport: no request within the
    keepalive timeout, so the tick aborts it (the transport is closed)."""
    from test_transport_protocols import FakeContext, connect

    context = FakeContext()
    conn, transport = connect(context)
    policy = KeepalivePolicy(interval=10.0, timeout=25.0)
    conn.deadline = None  # past the header timer: only the silence rule applies
    check(conn, context.tick + 25.0, policy, OutFrame.of(Keepalive()), context.counters)
    assert not transport.closed
    check(conn, context.tick + 25.1, policy, OutFrame.of(Keepalive()), context.counters)
    assert transport.closed


# --- next_check: when the ticker must look again (ADR 063) ------------------------------------

TIMES = st.floats(min_value=900.0, max_value=1100.0, allow_nan=False)


@settings(max_examples=400)
@given(
    st.sampled_from(list(ConnState)),
    st.one_of(st.none(), TIMES),
    TIMES,
    TIMES,
    TIMES,
    TIMES,
    st.floats(min_value=0.0, max_value=1.0),
)
def test_nothing_is_due_before_the_next_check(
    state: ConnState,
    deadline: float | None,
    last_in: float,
    last_out: float,
    last_ping: float,
    now: float,
    share: float,
) -> None:
    """Whatever the state and timestamps, ``due`` asks nothing between now and the planned
    check: the ticker that looks only then misses nothing."""
    peer = Peer(state, deadline, last_in, last_out, last_ping)
    planned = next_check(peer, now, POLICY)
    for moment in (now, now + share * max(0.0, planned - now)):
        if moment < planned:
            assert due(peer, moment, POLICY) is Due.NOTHING, (moment, planned)


def test_an_idle_connection_is_next_looked_at_when_its_ping_or_keepalive_is_due() -> None:
    peer = Peer(last_in=NOW, last_out=NOW - 4.0, last_ping=NOW)
    assert next_check(peer, NOW, POLICY) == NOW - 4.0 + POLICY.interval  # the keepalive
    assert due(peer, NOW + 6.0, POLICY) is Due.KEEPALIVE
    silent = Peer(state=ConnState.HTTP, last_in=NOW - 5.0)
    assert next_check(silent, NOW, POLICY) == NOW - 5.0 + POLICY.timeout
    assert next_check(Peer(deadline=NOW + 3.0), NOW, POLICY) == NOW + 3.0


# --- the wheel ----------------------------------------------------------------------------------


def test_the_wheel_gives_each_connection_once_when_its_second_comes() -> None:
    table: ConnectionSet[Peer] = ConnectionSet()
    a, b = Peer(last_in=NOW), Peer(last_in=NOW)
    table.add(a)
    table.add(b)
    assert table.due(NOW - 1.0) == []
    assert {id(p) for p in table.due(NOW + 0.5)} == {id(a), id(b)}
    assert table.due(NOW + 0.5) == []  # taken out of the plan until planned again
    table.wake(a, NOW + 10.2)
    table.wake(b, NOW + 30.0)
    assert table.planned == 2
    assert table.due(NOW + 9.9) == []
    assert table.due(NOW + 10.0) == [a]
    table.wake(b, NOW + 5.0)  # a wake brings the plan forward ...
    table.wake(b, NOW + 40.0)  # ... and never back
    assert table.due(NOW + 5.0) == [b]


def test_a_connection_that_left_is_never_given_again() -> None:
    table: ConnectionSet[Peer] = ConnectionSet()
    gone = Peer(last_in=NOW)
    table.add(gone)
    table.discard(gone)
    table.wake(gone, NOW)  # a late wake (a deadline set while closing) plans nothing
    assert (len(table), table.planned, table.due(NOW + 100.0)) == (0, 0, [])
