"""What the client does after a connection ends, by WebSocket close code. Pure.

Follows the close-code table of docs/protocol.md:

=======  ==============================  =========================================
code     meaning                         client reaction
=======  ==============================  =========================================
1000     normal (server side)            reconnect with backoff
1001     server shutting down            reconnect at once, to another server
1002     WebSocket protocol error        stop: do not retry
1007     invalid UTF-8 payload           stop: do not retry
1008     inflating bound reached         reconnect with backoff
1009     frame too large                 reconnect with backoff
1011     server internal error           another server, with backoff
4001     slow consumer                   reconnect with backoff, recover
4002     keepalive timeout               reconnect with backoff
4003     disconnected by operator        another server, with backoff
4004     connection limit reached        another server, with backoff
4005     too many invalid frames         stop: do not retry
4006     token expired                   reconnect with backoff (with a fresh token)
4007     member cut off from its cluster reconnect at once, to another server, recover
none     network failure / no close      another server, with backoff
other    unknown code                    reconnect with backoff
=======  ==============================  =========================================

"Another server" means the server is marked failed in the pool, so a different one is chosen
while one that has not failed remains.
"""

from __future__ import annotations

from dataclasses import dataclass

from pushgrid.protocol.errors import CloseCode


@dataclass(frozen=True, slots=True)
class ReconnectRule:
    """``retry``: reconnect at all; ``immediate``: without delay; ``avoid_server``: mark the
    server failed so the pool prefers another one."""

    retry: bool
    immediate: bool = False
    avoid_server: bool = False


BACKOFF = ReconnectRule(retry=True)
OTHER_SERVER = ReconnectRule(retry=True, avoid_server=True)
IMMEDIATE_OTHER = ReconnectRule(retry=True, immediate=True, avoid_server=True)
STOP = ReconnectRule(retry=False)

_RULES: dict[int, ReconnectRule] = {
    CloseCode.NORMAL: BACKOFF,
    CloseCode.GOING_AWAY: IMMEDIATE_OTHER,
    CloseCode.PROTOCOL_ERROR: STOP,
    CloseCode.INVALID_PAYLOAD: STOP,
    CloseCode.POLICY_VIOLATION: BACKOFF,
    CloseCode.FRAME_TOO_LARGE: BACKOFF,
    CloseCode.INTERNAL_ERROR: OTHER_SERVER,
    CloseCode.SLOW_CONSUMER: BACKOFF,
    CloseCode.KEEPALIVE_TIMEOUT: BACKOFF,
    CloseCode.DISCONNECTED_BY_OPERATOR: OTHER_SERVER,
    CloseCode.CONNECTION_LIMIT: OTHER_SERVER,
    CloseCode.TOO_MANY_ERRORS: STOP,
    CloseCode.TOKEN_EXPIRED: BACKOFF,
    CloseCode.CLUSTER_ISOLATED: IMMEDIATE_OTHER,
    1006: OTHER_SERVER,  # abnormal closure: never on the wire, reported by the library
}


def rule_for_close(code: int | None) -> ReconnectRule:
    """The reaction to a connection that ended with ``code`` (None: no close frame at all)."""
    if code is None:
        return OTHER_SERVER
    return _RULES.get(code, BACKOFF)
