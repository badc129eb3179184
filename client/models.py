"""Value objects the client hands to the application: messages, publish results, status events,
presence."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

QoS = Literal["standard", "guaranteed"]


class MessageType(StrEnum):
    """How a message reached the client."""

    SNAPSHOT = "snapshot"  # the subject's retained value, right after subscribing
    UPDATE = "update"  # a live message
    RECOVERED = "recovered"  # missed while disconnected, replayed from the server's cache
    HISTORICAL = "historical"  # one of the N last messages asked for with ``history=N``


@dataclass(frozen=True, slots=True)
class Message:
    """One delivered message. ``ts`` is the server's receive time, ms since the Unix epoch.

    For ``qos == "standard"`` ``seq`` is the seq of the last guaranteed message of the subject,
    not a sequence number of its own. ``conflated`` is True for a conflated delivery (one per
    conflation period: the latest content and the union of the period's fields).
    ``latency``: for a live update, seconds from the publisher's arrival at the server to this
    client's receipt, corrected by the client's clock offset (None when not measured: reports
    off, no offset yet, not a live update; docs/protocol.md 5.7).
    """

    subject: str
    content: str
    fields: dict[str, str]
    type: MessageType
    epoch: str
    seq: int
    qos: QoS
    retained: bool
    ts: int
    conflated: bool = False
    latency: float | None = None


class PublishStatus(StrEnum):
    """Outcome of a publish. Only ``OK`` means the server accepted the message."""

    OK = "ok"
    DENIED = "denied"  # the token may not publish on this subject
    FAILED = "failed"  # not connected in time, connection lost before the answer, or server error
    TOO_LARGE = "too_large"  # content + fields exceed the server's max_message_size


@dataclass(frozen=True, slots=True)
class PublishResult:
    """The answer to one publish. ``epoch`` / ``seq`` are set when ``result`` is OK.

    ``msg_id`` is the publish's idempotency key: publishing again with it within the server's
    ``PublishDedupWindow`` stores the message at most once, and an OK answer to such a repeat
    has ``duplicate`` set with the original's ``epoch`` / ``seq``. ``outcome_unknown``: the
    request was sent and no answer came (it may have been stored): retry with ``msg_id``.
    """

    result: PublishStatus
    subject: str
    epoch: str | None = None
    seq: int | None = None
    reason: str | None = None
    msg_id: str | None = None
    duplicate: bool = False
    outcome_unknown: bool = False

    @property
    def ok(self) -> bool:
        return self.result is PublishStatus.OK

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict: result, subject, epoch, seq, reason, msg_id (when known), and
        duplicate (only when true)."""
        out: dict[str, object] = {
            "result": self.result.value,
            "subject": self.subject,
            "epoch": self.epoch,
            "seq": self.seq,
            "reason": self.reason,
        }
        if self.msg_id is not None:
            out["msg_id"] = self.msg_id
        if self.duplicate:
            out["duplicate"] = True
        return out


class Status(StrEnum):
    """Kinds of status notifications (``on_status``)."""

    SERVER_UP = "server_up"  # connected, welcome received; ``server`` is set
    SERVER_DOWN = "server_down"  # connection lost or attempt failed; close code/reason, retry_in
    DATA_SYNC = "data_sync"  # per subject after a recovery: detail "recovered" or "up_to_date"
    DATA_RESYNC = "data_resync"  # per subject: new_epoch / failed / gap_resync; snapshot follows
    SUBSCRIBE_ALLOW = "subscribe_allow"  # per subject, a subscription without recovery is active
    SUBSCRIBE_DENY = "subscribe_deny"  # per subject; the subscription is dropped; reason in detail
    ERROR = "error"  # an error frame not tied to a publish or subscribe request
    CLOSED = "closed"  # the client stopped for good (close() or a do-not-retry close code)


@dataclass(frozen=True, slots=True)
class StatusEvent:
    """One status notification. Fields not relevant to ``status`` are None."""

    status: Status
    server: str | None = None
    subject: str | None = None
    detail: str | None = None
    close_code: int | None = None
    close_reason: str | None = None
    retry_in: float | None = None


@dataclass(frozen=True, slots=True)
class PresentClient:
    """A session following a presence subject: its id, the client id it declared ("" none)
    and the member it is connected to."""

    session: str
    client_id: str
    member: str


@dataclass(frozen=True, slots=True)
class Presence:
    """Who follows ``subject`` in the cluster (docs/occupancy.md, "Presence").

    ``subscribers`` counts every subscriber; ``clients`` lists them up to the server's
    ``Occupancy.PresenceMax`` per member; ``truncated`` says the list is shorter than the count.
    """

    subject: str
    subscribers: int
    clients: list[PresentClient]
    truncated: bool


@dataclass(frozen=True, slots=True)
class PresenceEvent:
    """A session joined or left a presence subject (a message of ``/pushgrid/presence``)."""

    event: Literal["join", "leave"]
    subject: str
    session: str
    client_id: str
    member: str  # the member the session is (or was) connected to
    subscribers: int  # the subject's cluster count when the event was sent
    id: str
    ts: int

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> PresenceEvent:
        """From the fields of a ``/pushgrid/presence`` message; ValueError when not one."""
        kind = fields.get("event")
        event: Literal["join", "leave"]
        if kind == "join":
            event = "join"
        elif kind == "leave":
            event = "leave"
        else:
            raise ValueError(f"not a presence event: {fields!r}")
        try:
            return cls(
                event,
                fields["subject"],
                fields["session"],
                fields.get("client_id", ""),
                fields["on"],
                int(fields["subscribers"]),
                fields["id"],
                int(fields["ts"]),
            )
        except (KeyError, ValueError) as exc:
            raise ValueError(f"not a presence event: {fields!r} ({exc})") from None
