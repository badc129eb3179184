"""The Sessions MBean's documents (``pushgrid:type=Sessions``): what ``list()``, ``detail(id)``
and ``slowConsumers()`` answer, typed once for the server that builds them and the admin API
that decodes them (ADR 035, ADR 050).

Fields added after the first release carry defaults, so an admin API reads an older member's
answer (a rolling upgrade) and shows what that member does not report as its default.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from .attributes import ContractError

Transport = Literal["websocket", "sse"]
T = TypeVar("T")


class SessionDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One session as ``list()`` answers it."""

    id: str
    remote: str  # host:port
    connected_since: int  # ms since the Unix epoch
    subjects: list[str]
    messages_in: int  # publishes accepted from the client
    bytes_in: int
    bytes_out: int
    #: the token's ``sub`` when the token names one, else the ``client_id`` the client
    #: declared with its subscriptions (the first one), else "" (the client declared none)
    client_id: str = ""
    transport: Transport = "websocket"
    compression: bool = False  # permessage-deflate agreed on this connection
    messages_out: int = 0  # message frames queued for the client (answers not counted)
    outbound_buffer_bytes: int = 0  # queued and not yet written to the socket
    internal: bool = False  # the admin API's probe (ADR 049), not a user
    #: what the client reported of its deliveries (issue 33, the delivery-truth reports):
    #: None while the session has reported nothing, never a number the server made up
    delivery_latency_ms: float | None = None
    lost_messages: int | None = None


class RecordedFrame(msgspec.Struct, frozen=True):
    """One frame sent to a watched session: time (ms), payload size, text (cut at 2 KiB)."""

    at: int
    size: int
    text: str


class SessionDetailDocument(SessionDocument, frozen=True, kw_only=True):
    """``detail(id)``: the session and the last frames sent to it since it was first looked at."""

    last_frames: list[RecordedFrame] = msgspec.field(default_factory=list)


class SlowConsumerClose(msgspec.Struct, frozen=True, kw_only=True):
    """One session closed with 4001 (its outbound buffer passed MaxOutboundBufferSize)."""

    at: int  # ms since the Unix epoch
    session: str
    remote: str
    client_id: str
    transport: Transport
    subjects: list[str]  # the first 50 (subject_count has them all)
    subject_count: int
    queued_bytes: int  # what was waiting for the client when it was closed
    limit: int  # MaxOutboundBufferSize
    # issue 33 item 5 (ADR 054); defaults: an older member's record still decodes
    compressed: bool = False  # permessage-deflate agreed
    queued_by_subject: dict[str, int] = {}  # live deliveries queued at the close, top 10
    backlog_seconds: float | None = None  # since the socket's send buffer was last empty
    send_rate: float = 0.0  # bytes/s written to it, averaged over its session
    connected_seconds: float = 0.0
    rtt_ms: float | None = None  # the round trip its client last reported (None: never)
    offenses: int = (
        1  # closes of this client id (else address) in the member's log, this one included
    )


class TraceEventDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One event of a member's trace (server/core/tracing.py)."""

    index: int
    at: int  # ms since the Unix epoch
    direction: Literal["in", "out"]
    session: str  # "" for a subject trace's fan-out
    client_id: str
    subject: str
    size: int
    text: str


class TraceDocument(msgspec.Struct, frozen=True, kw_only=True):
    """``traceRead(id, after, limit)``: a member's trace and its events after ``after``."""

    id: str
    kind: Literal["client", "subject"]
    value: str
    created: int  # ms since the Unix epoch
    next_index: int
    dropped: int
    events: list[TraceEventDocument]


def to_builtins(document: msgspec.Struct) -> Any:
    """A document as Jolokia serves it (plain JSON values)."""
    return msgspec.to_builtins(document)


def decode_answer(value: Any, document: type[T], what: str) -> T:
    """An operation's answer as ``document`` (``list[SessionDocument]``, ...); a
    :class:`ContractError` saying what does not fit otherwise."""
    try:
        return msgspec.convert(value, document, strict=False)
    except msgspec.ValidationError as exc:
        raise ContractError(f"{what} does not fit the ops contract: {exc}") from None
