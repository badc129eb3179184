"""The connection state table (server/transport/states.py, ADR 013): every (state, event) pair
is either the one listed transition or a TransportStateError, never an assert or a silent no-op."""

from __future__ import annotations

import itertools

import pytest

from pushgrid.protocol.errors import LocalProtocolError, PushgridError
from pushgrid.server.transport.states import (
    SENDING,
    TRANSITIONS,
    ConnEvent,
    ConnState,
    TransportStateError,
    next_state,
)

S, E = ConnState, ConnEvent

# The whole table written out once more, by hand: a change to states.py must change this too.
LEGAL = {
    (S.HTTP, E.REQUEST): S.RESPONDING,
    (S.HTTP, E.REFUSE): S.DRAINING,
    (S.HTTP, E.HAND_OVER): S.SWITCHED,
    (S.HTTP, E.CLOSE): S.CLOSING,
    (S.HTTP, E.LOST): S.CLOSED,
    (S.RESPONDING, E.RESPONDED): S.HTTP,
    (S.RESPONDING, E.HAND_OVER): S.SWITCHED,
    (S.RESPONDING, E.CLOSE): S.CLOSING,
    (S.RESPONDING, E.LOST): S.CLOSED,
    (S.DRAINING, E.CLOSE): S.CLOSING,
    (S.DRAINING, E.LOST): S.CLOSED,
    (S.OPEN, E.PAUSE): S.PAUSED,
    (S.OPEN, E.PEER_CLOSE): S.FINISHING,
    (S.OPEN, E.CLOSE): S.CLOSING,
    (S.OPEN, E.LOST): S.CLOSED,
    (S.PAUSED, E.RESUME): S.OPEN,
    (S.PAUSED, E.PEER_CLOSE): S.FINISHING,
    (S.PAUSED, E.CLOSE): S.CLOSING,
    (S.PAUSED, E.LOST): S.CLOSED,
    (S.FINISHING, E.CLOSE): S.CLOSING,
    (S.FINISHING, E.LOST): S.CLOSED,
    (S.STREAMING, E.CLOSE): S.CLOSING,
    (S.STREAMING, E.LOST): S.CLOSED,
    (S.CLOSING, E.LOST): S.CLOSED,
}
ALL_PAIRS = list(itertools.product(ConnState, ConnEvent))


def test_every_state_has_a_row() -> None:
    assert set(TRANSITIONS) == set(ConnState)


def test_the_table_is_the_documented_one() -> None:
    table = {(s, e): t for s, row in TRANSITIONS.items() for e, t in row.items()}
    assert table == LEGAL


@pytest.mark.parametrize(("state", "event"), [p for p in ALL_PAIRS if p in LEGAL])
def test_legal_transition(state: ConnState, event: ConnEvent) -> None:
    assert next_state(state, event) is LEGAL[(state, event)]


@pytest.mark.parametrize(("state", "event"), [p for p in ALL_PAIRS if p not in LEGAL])
def test_illegal_transition_raises(state: ConnState, event: ConnEvent) -> None:
    with pytest.raises(TransportStateError) as info:
        next_state(state, event)
    assert info.value.state is state
    assert info.value.event is event
    assert state.name in str(info.value)
    assert event.name in str(info.value)


def test_the_error_is_a_local_protocol_error() -> None:
    assert issubclass(TransportStateError, LocalProtocolError)
    assert issubclass(TransportStateError, PushgridError)


def test_closed_and_switched_are_final() -> None:
    assert TRANSITIONS[S.CLOSED] == {}
    assert TRANSITIONS[S.SWITCHED] == {}


def test_every_live_state_can_be_lost_and_closed() -> None:
    for state in ConnState:
        if state in (S.SWITCHED, S.CLOSED):
            continue
        assert next_state(state, E.LOST) is S.CLOSED
        if state is not S.CLOSING:
            assert next_state(state, E.CLOSE) is S.CLOSING


def test_sending_states_hold_a_session() -> None:
    # FINISHING: the client closed, the answers to what it sent before still leave
    assert {S.OPEN, S.PAUSED, S.FINISHING, S.STREAMING} == SENDING
