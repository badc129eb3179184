"""The member's slow-consumer log: every session closed with 4001, newest last, bounded.

A slow consumer is closed the moment its outbound buffer passes MaxOutboundBufferSize
(server/transport/connection.py); the counter says how many, this log says who: the session,
its address and client id, what it followed and how much was waiting for it (ADR 050). The
admin API reads it through the Sessions MBean's ``slowConsumers()`` operation.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pushgrid.kernel.throttle import host_of

if TYPE_CHECKING:
    from .session import Session

MAX_SUBJECTS: int = 50  # per record: a session may follow thousands
MAX_QUEUED_SUBJECTS: int = 10  # subjects of the queued deliveries a record names
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
    compressed: bool
    queued_by_subject: dict[str, int]
    backlog_seconds: float | None
    send_rate: float
    connected_seconds: float
    rtt_ms: float | None
    offenses: int


class SlowConsumerLog:
    """The last :data:`SLOW_CONSUMER_LOG_SIZE` slow-consumer closes of this member."""

    def __init__(self, size: int = SLOW_CONSUMER_LOG_SIZE) -> None:
        self.records: deque[ClosedSlowConsumer] = deque(maxlen=size)
        # told of every record (server/app.py: the event on /pushgrid/<node>/slow-consumers)
        self.on_record: Callable[[ClosedSlowConsumer], None] | None = None

    def record(
        self,
        session: Session,
        queued_bytes: int,
        limit: int,
        wire: WireState | None = None,
    ) -> ClosedSlowConsumer:
        """Record ``session``'s close; ``wire``: what its connection knew (ADR 054)."""
        subjects = list(session.subjects)
        now = time.time()
        wire = wire or WireState()
        connected = max(0.0, now - session.connected_at)
        rtt = session.delivery.rtt_us
        record = ClosedSlowConsumer(
            at=int(now * 1000),
            session=session.id,
            remote=session.remote,
            client_id=session.client_id,
            transport=transport_of(session),
            subjects=subjects[:MAX_SUBJECTS],
            subject_count=len(subjects),
            queued_bytes=queued_bytes,
            limit=limit,
            compressed=wire.compressed,
            queued_by_subject=dict(Counter(dict(wire.queued)).most_common(MAX_QUEUED_SUBJECTS)),
            backlog_seconds=wire.backlog_seconds,
            send_rate=wire.bytes_out / connected if connected > 0 else 0.0,
            connected_seconds=round(connected, 3),
            rtt_ms=rtt / 1000 if rtt else None,
            offenses=1 + sum(1 for r in self.records if _same_offender(r, session)),
        )
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
        return record


def _same_offender(record: ClosedSlowConsumer, session: Session) -> bool:
    """The same client: its client id when it has one, else its address (host)."""
    if session.client_id:
        return record.client_id == session.client_id
    return not record.client_id and host_of(record.remote) == host_of(session.remote)


@dataclass(frozen=True, slots=True)
class WireState:
    """What the closing connection knows: compression, the subjects of the live deliveries it
    still queued, how long its send buffer has been non-empty, the bytes it wrote."""

    compressed: bool = False
    queued: tuple[tuple[str, int], ...] = ()  # (subject, live deliveries still queued)
    backlog_seconds: float | None = None
    bytes_out: int = 0


def transport_of(session: Session) -> str:
    """ "websocket" or "sse": what the session's connection says it is."""
    return "sse" if getattr(session.peer, "transport_kind", "websocket") == "sse" else "websocket"
