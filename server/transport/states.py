"""The states of a client connection and the events that move it, as data (ADR 013).

One enum covers every protocol object of a connection (server/transport/): an HTTP connection
starts in ``HTTP``; a WebSocket starts in ``OPEN``, an event stream in ``STREAMING``, each created
when the HTTP connection hands its transport over (``SWITCHED``, the HTTP object is then dropped).
:func:`next_state` is the only way a state changes: an event the table does not list for the
current state is a bug in pushgrid and raises :class:`TransportStateError`, as h11 does.

Orthogonal to the state and kept apart on purpose: whether the connection is marked for the next
flush (the flusher's bookkeeping) and the ``deadline`` after which the ticker cuts it.
"""

from __future__ import annotations

import enum
from typing import Final

from pushgrid.protocol.errors import LocalProtocolError


class ConnState(enum.Enum):
    HTTP = "http"  # reading a request, or idle between keep-alive requests
    RESPONDING = "responding"  # a handler produces the response; further input waits
    DRAINING = "draining"  # answered early (413, 431, 503...): input is dropped until the end
    SWITCHED = "switched"  # the transport went to a WebSocket or event-stream object
    OPEN = "open"  # WebSocket with a session, reading
    PAUSED = "paused"  # WebSocket, reading paused: the session's inbox is full
    STREAMING = "streaming"  # event stream (SSE): a session that only writes
    # WebSocket: the client's close frame (or end of input) arrived. Nothing more is read; the
    # requests received before it are still handled and answered in order, then the close
    # answer leaves (RFC 6455 5.5.1 lets an endpoint finish its messages first).
    FINISHING = "finishing"
    CLOSING = "closing"  # closing: nothing more is sent but a close frame / final chunk
    CLOSED = "closed"  # the transport is gone


class ConnEvent(enum.Enum):
    REQUEST = "request"  # a whole request goes to its handler
    RESPONDED = "responded"  # the response left and the connection stays open (keep-alive)
    REFUSE = "refuse"  # an early answer (the request or the connection is refused)
    HAND_OVER = "hand_over"  # upgrade to WebSocket, or the handler started an event stream
    PAUSE = "pause"  # inbound backlog above the high-water mark
    RESUME = "resume"  # inbound backlog below the low-water mark
    PEER_CLOSE = "peer_close"  # the client's close frame or end of input (WebSocket)
    CLOSE = "close"  # we close (close frame, last chunk, or transport.close())
    LOST = "lost"  # connection_lost: the transport is gone


S, E = ConnState, ConnEvent

TRANSITIONS: Final[dict[ConnState, dict[ConnEvent, ConnState]]] = {
    S.HTTP: {
        E.REQUEST: S.RESPONDING,
        E.REFUSE: S.DRAINING,
        E.HAND_OVER: S.SWITCHED,  # a WebSocket upgrade (not given to a handler)
        E.CLOSE: S.CLOSING,
        E.LOST: S.CLOSED,
    },
    S.RESPONDING: {
        E.RESPONDED: S.HTTP,
        E.HAND_OVER: S.SWITCHED,  # the handler answered with an event stream
        E.CLOSE: S.CLOSING,
        E.LOST: S.CLOSED,
    },
    S.DRAINING: {E.CLOSE: S.CLOSING, E.LOST: S.CLOSED},
    S.SWITCHED: {},  # the object is out of use: its transport belongs to another one
    S.OPEN: {E.PAUSE: S.PAUSED, E.PEER_CLOSE: S.FINISHING, E.CLOSE: S.CLOSING, E.LOST: S.CLOSED},
    S.PAUSED: {
        E.RESUME: S.OPEN,
        E.PEER_CLOSE: S.FINISHING,
        E.CLOSE: S.CLOSING,
        E.LOST: S.CLOSED,
    },
    S.FINISHING: {E.CLOSE: S.CLOSING, E.LOST: S.CLOSED},
    S.STREAMING: {E.CLOSE: S.CLOSING, E.LOST: S.CLOSED},
    S.CLOSING: {E.LOST: S.CLOSED},
    S.CLOSED: {},
}

# States in which a session exists and frames may still be queued for the client.
SENDING: Final = frozenset({S.OPEN, S.PAUSED, S.FINISHING, S.STREAMING})


class TransportStateError(LocalProtocolError):
    """pushgrid tried a transition its table forbids (a bug in the transport)."""

    def __init__(self, state: ConnState, event: ConnEvent) -> None:
        super().__init__(f"connection in state {state.name} cannot take event {event.name}")
        self.state = state
        self.event = event


def next_state(state: ConnState, event: ConnEvent) -> ConnState:
    """The state after ``event``; TransportStateError when ``event`` is illegal in ``state``."""
    target = TRANSITIONS[state].get(event)
    if target is None:
        raise TransportStateError(state, event)
    return target
