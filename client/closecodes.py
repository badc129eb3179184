"""What the client does after a connection ends, by WebSocket close code. Pure.

The table itself is ``CLOSE_REACTIONS`` in pushgrid/protocol/errors.py (the codes, and each
one's reaction in the words of docs/protocol.md section 8.2): this module turns each reaction
into a :class:`ReconnectRule`; nothing here lists codes.

"Another server" means the server is marked failed in the pool, so a different one is chosen
while one that has not failed remains.
"""

from __future__ import annotations

from dataclasses import dataclass

from pushgrid.protocol.errors import (
    CLOSE_REACTIONS,
    NO_CLOSE_REACTION,
    UNKNOWN_CLOSE_REACTION,
    Reaction,
)


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

RULE_OF: dict[Reaction, ReconnectRule] = {
    Reaction.BACKOFF: BACKOFF,
    Reaction.OTHER_SERVER: OTHER_SERVER,
    Reaction.IMMEDIATE_OTHER: IMMEDIATE_OTHER,
    Reaction.STOP: STOP,
}
_RULES: dict[int, ReconnectRule] = {
    code: RULE_OF[reaction] for code, reaction in CLOSE_REACTIONS.items()
}


def rule_for_close(code: int | None) -> ReconnectRule:
    """The reaction to a connection that ended with ``code`` (None: no close frame at all)."""
    if code is None:
        return RULE_OF[NO_CLOSE_REACTION]
    return _RULES.get(code, RULE_OF[UNKNOWN_CLOSE_REACTION])
