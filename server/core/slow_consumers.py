"""The member's slow-consumer log: every session closed with 4001, newest last, bounded.

A slow consumer is closed the moment its outbound buffer passes MaxOutboundBufferSize
(server/transport/connection.py); the counter says how many, this log says who: the session,
its address and client id, what it followed and how much was waiting for it (ADR 050). The
admin API reads it through the Sessions MBean's ``slowConsumers()`` operation.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Session

MAX_SUBJECTS: int = 50  # per record: a session may follow thousands
#: slow-consumer closes a member remembers (the oldest are forgotten first)
SLOW_CONSUMER_LOG_SIZE: int = 200


@dataclass(frozen=True, slots=True)
class ClosedSlowConsumer:
    """One session closed with 4001 (pushgrid.ops.sessions.SlowConsumerClose on the wire)."""

    at: int  # ms since the Unix epoch
    session: str
    remote: str
    client_id: str
    transport: str  # websocket | sse
    subjects: list[str]  # the first MAX_SUBJECTS
    subject_count: int
    queued_bytes: int
    limit: int


class SlowConsumerLog:
    """The last :data:`SLOW_CONSUMER_LOG_SIZE` slow-consumer closes of this member."""

    def __init__(self, size: int = SLOW_CONSUMER_LOG_SIZE) -> None:
        self.records: deque[ClosedSlowConsumer] = deque(maxlen=size)

    def record(self, session: Session, queued_bytes: int, limit: int) -> None:
        subjects = list(session.subjects)
        self.records.append(
            ClosedSlowConsumer(
                at=int(time.time() * 1000),
                session=session.id,
                remote=session.remote,
                client_id=session.client_id,
                transport=transport_of(session),
                subjects=subjects[:MAX_SUBJECTS],
                subject_count=len(subjects),
                queued_bytes=queued_bytes,
                limit=limit,
            )
        )


def transport_of(session: Session) -> str:
    """ "websocket" or "sse": what the session's connection says it is."""
    return "sse" if getattr(session.peer, "transport_kind", "websocket") == "sse" else "websocket"
