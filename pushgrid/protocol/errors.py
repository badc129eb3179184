"""The protocol branch of the exception tree (``pushgrid/protocol/exceptions.py``), with its codes.

Every error a client can cause maps to a machine-readable ``code`` (sent in an ``error`` frame or
a ``publish_result``) or to a WebSocket close code (``CloseCode``). ``docs/protocol.md`` documents
both, with retry rules. The split follows h11: ``RemoteProtocolError`` is the peer's fault and is
answered on the wire; ``LocalProtocolError`` is our own misuse and is a bug.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

from .exceptions import ProtocolError, PushgridError


class ErrorCode(StrEnum):
    """Codes of ``{"type": "error"}`` frames. The connection stays usable after each of them."""

    INVALID_JSON = "invalid_json"
    INVALID_FRAME = "invalid_frame"
    UNKNOWN_OP = "unknown_op"
    INVALID_SUBJECT = "invalid_subject"
    MESSAGE_TOO_LARGE = "message_too_large"
    TOO_MANY_SUBSCRIPTIONS = "too_many_subscriptions"
    NOT_SUBSCRIBED = "not_subscribed"
    DENIED = "denied"
    BINARY_NOT_SUPPORTED = "binary_not_supported"
    RATE_LIMITED = "rate_limited"  # publish above PublishRate*: slow down, retry later
    TOO_MANY_FIELDS = "too_many_fields"  # the snapshot would hold above MaxFieldsPerSubject
    SNAPSHOT_TOO_LARGE = "snapshot_too_large"  # the snapshot would exceed MaxSnapshotSize
    RESERVED_SUBJECT = "reserved_subject"  # /pushgrid/... meta-subjects are server-owned
    INTERNAL = "internal"
    ENGINE_UNAVAILABLE = "engine_unavailable"  # cluster without quorum: retry with backoff
    TOO_MANY_SUBJECTS = "too_many_subjects"  # the node holds MaxSubjects: retry much later
    RETAINED_BYTES_EXCEEDED = "retained_bytes_exceeded"  # the node holds MaxRetainedBytes
    PRESENCE_DISABLED = "presence_disabled"  # the subject matches no Occupancy.PresencePatterns
    # the node holds PublishDedupMaxKeys live msg_ids: a new msg_id is refused, retry later
    DEDUP_TABLE_FULL = "dedup_table_full"
    # a delivery report that breaks its rules (docs/protocol.md 5.7): nothing of it is counted
    INVALID_REPORT = "invalid_report"


class CloseCode(IntEnum):
    """WebSocket close codes the server sends. Retry rules are in docs/protocol.md."""

    NORMAL = 1000
    GOING_AWAY = 1001  # server shutting down: reconnect to another server at once
    PROTOCOL_ERROR = 1002  # broken WebSocket framing: fix the client
    INVALID_PAYLOAD = 1007  # a text message that is not valid UTF-8: fix the client
    # a compressed fragment past the server's bound on unfinished compressed messages (per
    # address or in all): reconnect with backoff (docs/security.md)
    POLICY_VIOLATION = 1008
    FRAME_TOO_LARGE = 1009  # a frame above the hard frame limit: fix the client
    INTERNAL_ERROR = 1011  # server bug: reconnect with backoff
    SLOW_CONSUMER = 4001  # outbound buffer overflow: reconnect with backoff and recover
    KEEPALIVE_TIMEOUT = 4002  # no data from the client within the keepalive timeout
    DISCONNECTED_BY_OPERATOR = 4003  # an operator closed the session: reconnect with backoff
    CONNECTION_LIMIT = 4004  # server at MaxConnections: reconnect to another server, backoff
    TOO_MANY_ERRORS = 4005  # the client kept sending invalid frames: fix the client
    TOKEN_EXPIRED = 4006  # the token's exp passed without a refresh: get a new token, reconnect
    # the member lost its cluster for ClusterIsolationTimeout (a partition): its subscriptions
    # get nothing; reconnect to another server at once, then recover (docs/protocol.md 8.2)
    CLUSTER_ISOLATED = 4007


class Reaction(StrEnum):
    """What a client does after a connection ends (the "client should" of docs/protocol.md
    section 8.2), in the words that column uses."""

    BACKOFF = "reconnect with backoff"
    OTHER_SERVER = "another server, with backoff"
    IMMEDIATE_OTHER = "reconnect at once, to another server"
    STOP = "stop: do not retry"


#: The one close-code table: each code a client may see -> its reaction. client/closecodes.py
#: builds its rules from it; the browser client's CLOSE_RULES (client/js/pushgrid.js) and
#: docs/protocol.md section 8.2 are checked against it (tests/unit/test_close_code_tables.py).
CLOSE_REACTIONS: dict[int, Reaction] = {
    CloseCode.NORMAL: Reaction.BACKOFF,
    CloseCode.GOING_AWAY: Reaction.IMMEDIATE_OTHER,
    CloseCode.PROTOCOL_ERROR: Reaction.STOP,
    CloseCode.INVALID_PAYLOAD: Reaction.STOP,
    CloseCode.POLICY_VIOLATION: Reaction.BACKOFF,
    CloseCode.FRAME_TOO_LARGE: Reaction.BACKOFF,
    CloseCode.INTERNAL_ERROR: Reaction.OTHER_SERVER,
    CloseCode.SLOW_CONSUMER: Reaction.BACKOFF,  # and recover
    CloseCode.KEEPALIVE_TIMEOUT: Reaction.BACKOFF,
    CloseCode.DISCONNECTED_BY_OPERATOR: Reaction.OTHER_SERVER,
    CloseCode.CONNECTION_LIMIT: Reaction.OTHER_SERVER,
    CloseCode.TOO_MANY_ERRORS: Reaction.STOP,
    CloseCode.TOKEN_EXPIRED: Reaction.BACKOFF,  # with a fresh token
    CloseCode.CLUSTER_ISOLATED: Reaction.IMMEDIATE_OTHER,  # and recover
    1006: Reaction.OTHER_SERVER,  # abnormal closure: never on the wire, reported by the library
}
#: a connection that ended without any close frame (a network failure)
NO_CLOSE_REACTION = Reaction.OTHER_SERVER
#: a code the table does not know
UNKNOWN_CLOSE_REACTION = Reaction.BACKOFF


__all__ = [
    "CLOSE_REACTIONS",
    "CloseCode",
    "ErrorCode",
    "InvalidSubject",
    "LocalProtocolError",
    "ProtocolError",
    "PushgridError",
    "Reaction",
    "RemoteProtocolError",
]

# Error frames a client may answer by sending the same request again after a backoff.
RETRYABLE_CODES = frozenset(
    {
        ErrorCode.RATE_LIMITED,
        ErrorCode.ENGINE_UNAVAILABLE,
        ErrorCode.INTERNAL,
        ErrorCode.TOO_MANY_SUBJECTS,
        ErrorCode.RETAINED_BYTES_EXCEEDED,
        ErrorCode.DEDUP_TABLE_FULL,
    }
)


class LocalProtocolError(ProtocolError):
    """We tried to do something the protocol forbids (a bug in pushgrid itself).

    Inside a client's request it ends the connection with 1011, which the client retries."""

    code = ErrorCode.INTERNAL.value
    retryable = True
    close_code = CloseCode.INTERNAL_ERROR


class RemoteProtocolError(ProtocolError):
    """The peer sent something invalid. ``code`` goes on the wire, ``message`` explains it."""

    code: ErrorCode

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        request_id: int | None = None,
        subject: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.retryable = code in RETRYABLE_CODES
        self.message = message
        self.request_id = request_id
        self.subject = subject
        self.op: str | None = None  # the op being decoded, set by the codec when known


def invalid_subject_message(subject: object, reason: str) -> str:
    """The one wording of an invalid-subject error, whoever reports it (frame, HTTP, CLI, API)."""
    return f"invalid subject {subject!r}: {reason}"


class InvalidSubject(RemoteProtocolError):
    code = ErrorCode.INVALID_SUBJECT

    def __init__(self, subject: object, reason: str, request_id: int | None = None) -> None:
        super().__init__(
            ErrorCode.INVALID_SUBJECT,
            invalid_subject_message(subject, reason),
            request_id,
            str(subject),
        )
        self.reason = reason
