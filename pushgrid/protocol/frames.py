"""Wire frames, as typed structs. ``docs/protocol.md`` is the prose form of this module.

Client -> server frames are JSON objects tagged by ``op``; server -> client frames by ``type``.
Unknown keys are ignored (forward compatibility); missing or mistyped keys are errors.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

import msgspec

from .latency import MAX_COUNT
from .sizes import message_size

QoS = Literal["standard", "guaranteed"]
MessageKind = Literal["snapshot", "update", "recovered", "historical"]
RecoveryStatus = Literal["none", "recovered", "up_to_date", "new_epoch", "failed"]
PublishResultCode = Literal["ok", "denied", "failed", "too_large", "rate_limited"]

# Request ids are echoed back; JavaScript numbers hold integers exactly only up to 2^53 - 1.
MAX_SAFE_INTEGER = 2**53 - 1
RequestId = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]

# A publish's idempotency key (``msg_id``): chosen by the client, 1 to MSG_ID_MAX_LENGTH visible
# ASCII characters (0x21-0x7E). The server stores a message once per (subject, msg_id) within
# PublishDedupWindow seconds and answers a repeat with the original (epoch, seq).
MSG_ID_MAX_LENGTH = 128
MSG_ID_CHARACTERS = "visible ASCII characters (0x21-0x7E)"


def msg_id_error(value: str) -> str | None:
    """Why ``value`` is not a valid ``msg_id``, or None when it is."""
    if not 1 <= len(value) <= MSG_ID_MAX_LENGTH:
        return f"'msg_id' must hold 1 to {MSG_ID_MAX_LENGTH} characters, got {len(value)}"
    if not all("!" <= char <= "~" for char in value):
        return f"'msg_id' may hold only {MSG_ID_CHARACTERS}"
    return None


# A subscriber's client id (presence, docs/occupancy.md): 1 to CLIENT_ID_MAX_LENGTH characters
# from ASCII letters, digits and CLIENT_ID_EXTRA, so it goes into logs, URLs and JSON unescaped.
CLIENT_ID_MAX_LENGTH = 64
CLIENT_ID_EXTRA = "._:@-+="


def client_id_error(value: str) -> str | None:
    """Why ``value`` is not a valid client id, or None when it is."""
    if not 1 <= len(value) <= CLIENT_ID_MAX_LENGTH:
        return f"'client_id' must hold 1 to {CLIENT_ID_MAX_LENGTH} characters, got {len(value)}"
    if not all((c.isascii() and c.isalnum()) or c in CLIENT_ID_EXTRA for c in value):
        return f"'client_id' may hold only ASCII letters, digits and {CLIENT_ID_EXTRA}"
    return None


# --- client -> server -------------------------------------------------------------------------


class Position(msgspec.Struct, frozen=True):
    """A point in a subject's stream: the epoch and the last sequence number the client holds."""

    epoch: str
    seq: int


class SubscribeItem(msgspec.Struct, frozen=True):
    subject: str
    recover: Position | None = None
    history: int = 0
    conflation: int = 0
    #: live updates carry only the fields that changed (docs/protocol.md 5.1.1)
    delta: bool = False
    #: who subscribes, as presence lists it (docs/protocol.md 5.7); with a token, its ``sub``
    client_id: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def declared_client(self) -> str | None:
        return None if isinstance(self.client_id, msgspec.UnsetType) else self.client_id

    @property
    def conflation_period(self) -> int:
        """The conflation period in ms: ``conflation`` cut down to a multiple of 100 ms, as the
        spec's examples do (78 -> 0 = no conflation, 547 -> 500, 887 -> 800)."""
        return conflation_period(self.conflation)


def conflation_period(milliseconds: int) -> int:
    return max(0, milliseconds) // 100 * 100


class Subscribe(msgspec.Struct, tag_field="op", tag="subscribe", frozen=True):
    subjects: list[SubscribeItem]
    id: RequestId | None = None


class Unsubscribe(msgspec.Struct, tag_field="op", tag="unsubscribe", frozen=True):
    subjects: list[str]
    id: RequestId | None = None


class Publish(msgspec.Struct, tag_field="op", tag="publish", frozen=True, dict=True):
    # dict=True: room for the cached ``size`` (never encoded: only fields are)
    subject: str
    content: str
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    retained: bool = True
    qos: QoS = "guaranteed"
    id: RequestId | None = None
    # the idempotency key; absent (UNSET) is not encoded, so frames without it keep their bytes
    msg_id: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def message_id(self) -> str | None:
        return None if isinstance(self.msg_id, msgspec.UnsetType) else self.msg_id

    @functools.cached_property
    def size(self) -> int:
        """The message's size as MaxMessageSize counts it (:func:`message_size`), computed once
        per publish: the codec's limit, the engine's bounds and the counters read this one."""
        return message_size(self.content, self.fields)


class Ping(msgspec.Struct, tag_field="op", tag="ping", frozen=True):
    id: RequestId | None = None


class Token(msgspec.Struct, tag_field="op", tag="token", frozen=True):
    """Replace the connection's token (before it expires); answered by ``token_result``."""

    token: str
    id: RequestId | None = None


class PresenceQuery(msgspec.Struct, tag_field="op", tag="presence", frozen=True):
    """Who follows ``subject`` in the cluster; answered by ``presence`` (docs/protocol.md 5.7)."""

    subject: str
    id: RequestId | None = None


# A report's numbers: counts of one report period (docs/protocol.md 5.7)
ReportCount = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
#: subjects one report may name (the client folds the rest into the unattributed entry)
MAX_REPORT_SUBJECTS = 64


class ReportEntry(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a client saw of one subject (``subject`` absent: of subjects it did not name)
    during one report period: the latency histogram's non-empty buckets as ``[index, count]``
    pairs (protocol/latency.py) and its loss counters."""

    subject: str | None = None
    latency: list[tuple[int, int]] = msgspec.field(default_factory=list)
    gaps: ReportCount = 0  # a seq jumped: messages missing (the client recovers)
    duplicates: ReportCount = 0  # a seq at or below the position: dropped
    resyncs: ReportCount = 0  # the numbering restarted (new epoch) or a recovery gave up
    recovered: ReportCount = 0  # resubscriptions with recovery that got every missed message
    recovery_failed: ReportCount = 0  # ... that did not (new_epoch, failed)


class DeliveryReport(msgspec.Struct, tag_field="op", tag="report", frozen=True, omit_defaults=True):
    """A client's delivery report (docs/protocol.md 5.7): latency and loss since its last one.

    ``offset`` and ``rtt``: the client's clock offset to the server and the round trip of the
    ping it was estimated from, in microseconds (the server keeps them on the session)."""

    entries: list[ReportEntry]
    interval: Annotated[float, msgspec.Meta(gt=0, le=3600)]
    offset: int = 0
    rtt: Annotated[int, msgspec.Meta(ge=0)] = 0
    id: RequestId | None = None


ClientOp = Subscribe | Unsubscribe | Publish | Ping | Token | PresenceQuery | DeliveryReport
CLIENT_OPS: tuple[str, ...] = (
    "subscribe",
    "unsubscribe",
    "publish",
    "ping",
    "token",
    "presence",
    "report",
)


# --- server -> client -------------------------------------------------------------------------


class Welcome(msgspec.Struct, tag_field="type", tag="welcome"):
    server: str
    version: str
    session: str
    keepalive: float
    max_message_size: int
    max_subscriptions: int


class MessageFrame(msgspec.Struct, tag_field="type", tag="message", omit_defaults=True):
    """A delivered message. ``conflated`` appears (true) only on conflated deliveries."""

    kind: MessageKind
    subject: str
    content: str
    fields: dict[str, str]
    epoch: str
    seq: int
    qos: QoS
    retained: bool
    ts: int
    conflated: bool = False
    #: microseconds since the Unix epoch when the publish reached its ingress member (live
    #: updates only; absent on snapshots, recovered and historical messages, docs/protocol.md 4)
    ingress: int = 0


class Subscribed(msgspec.Struct, tag_field="type", tag="subscribed"):
    subject: str
    status: Literal["allow", "deny"]
    recovery: RecoveryStatus
    epoch: str | None
    seq: int | None
    id: int | None = None
    reason: str | None = None


class Unsubscribed(msgspec.Struct, tag_field="type", tag="unsubscribed"):
    subject: str
    id: int | None = None


class PublishResultFrame(msgspec.Struct, tag_field="type", tag="publish_result"):
    result: PublishResultCode
    subject: str
    id: int | None = None
    epoch: str | None = None
    seq: int | None = None
    code: str | None = None
    reason: str | None = None
    # true on the answer to a repeated msg_id (the original's epoch and seq); absent otherwise
    duplicate: bool | msgspec.UnsetType = msgspec.UNSET


class TokenResult(msgspec.Struct, tag_field="type", tag="token_result"):
    """The answer to a ``token`` op. ``expires``: the new token's ``exp`` (Unix seconds)."""

    result: Literal["ok", "denied"]
    id: int | None = None
    expires: int | None = None
    reason: str | None = None
    revoked: list[str] | None = None


class PresentClientFrame(msgspec.Struct):
    session: str
    client_id: str  # "" when the subscriber declared none
    member: str


class PresenceAnswer(msgspec.Struct, tag_field="type", tag="presence"):
    """The answer to a ``presence`` op: ``subscribers`` counts every subscriber of the cluster,
    ``clients`` lists them up to Occupancy.PresenceMax per member (``truncated`` when not all)."""

    subject: str
    subscribers: int
    clients: list[PresentClientFrame]
    truncated: bool
    id: int | None = None


class Pong(msgspec.Struct, tag_field="type", tag="pong"):
    id: int | None = None
    #: the server's clock when it answered, microseconds since the Unix epoch: the client's
    #: clock-offset estimate (docs/protocol.md 5.4)
    time: int | msgspec.UnsetType = msgspec.UNSET


class Keepalive(msgspec.Struct, tag_field="type", tag="keepalive"):
    pass


class Closing(msgspec.Struct, tag_field="type", tag="closing"):
    """SSE only: the server is about to close the stream (WebSocket uses close frames)."""

    code: int
    reason: str


class Error(msgspec.Struct, tag_field="type", tag="error"):
    code: str
    message: str
    id: int | None = None
    subject: str | None = None


ServerFrame = (
    Welcome
    | MessageFrame
    | Subscribed
    | Unsubscribed
    | PublishResultFrame
    | TokenResult
    | PresenceAnswer
    | Pong
    | Keepalive
    | Closing
    | Error
)
