"""One client session: decodes its frames, applies entitlement and limits, talks to hub and engine.

Sans-socket: the transport feeds complete text messages to :meth:`Session.handle_text` (one at
a time, in order) and gives the session a :class:`~server.core.hub.Peer` to send frames through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Protocol

import msgspec

from pushgrid.kernel.throttle import host_of
from pushgrid.protocol.codec import Limits, decode_client_frame
from pushgrid.protocol.errors import (
    CloseCode,
    ErrorCode,
    InvalidSubject,
    LocalProtocolError,
    RemoteProtocolError,
)
from pushgrid.protocol.frames import (
    DeliveryReport,
    Error,
    Ping,
    Pong,
    PresenceAnswer,
    PresenceQuery,
    Publish,
    PublishResultCode,
    PublishResultFrame,
    ServerFrame,
    Subscribe,
    Subscribed,
    SubscribeItem,
    Token,
    TokenResult,
    Unsubscribe,
    Unsubscribed,
    Welcome,
)
from pushgrid.protocol.subjects import validate_subject

from ..engine.base import EngineUnavailable, PublishRequest
from ..framing.outframe import SETS, OutFrame
from .accounting import COVERED
from .answers import InOrder
from .delivery import SessionDelivery
from .entitlement import AllowAll, Entitlement, Grant, events_denial
from .hub import Hub, Peer
from .outgoing import message_frame, snapshot_frame
from .publishing import Admission, Publisher, PublishGuard, PublishLimits, Refusal, arrived

log = logging.getLogger(__name__)

MAX_CONSECUTIVE_ERRORS = 100
_RESULTS: dict[ErrorCode, PublishResultCode] = {
    ErrorCode.DENIED: "denied",
    ErrorCode.RESERVED_SUBJECT: "denied",
    ErrorCode.RATE_LIMITED: "rate_limited",
    ErrorCode.TOO_MANY_FIELDS: "too_large",
    ErrorCode.SNAPSHOT_TOO_LARGE: "too_large",
}
# codes a publish_result does not carry: a failed publish says only why (docs/protocol.md 5.3)
_UNCODED = frozenset({ErrorCode.ENGINE_UNAVAILABLE})


class PresenceLookup(Protocol):
    """What a session asks presence (server/presence.py) to answer a ``presence`` op."""

    patterns: tuple[str, ...]  # Occupancy.PresencePatterns

    def enabled(self, subject: str) -> bool: ...
    def answer(self, subject: str, request_id: int | None) -> PresenceAnswer: ...


@dataclass(frozen=True, slots=True)
class SessionPolicy:
    """Server-wide settings a session applies."""

    server_name: str
    version: str
    keepalive: float
    limits: Limits
    max_subscriptions: int
    publish_snapshot: bool


class Session:
    def __init__(
        self,
        session_id: str,
        hub: Hub,
        peer: Peer,
        policy: SessionPolicy,
        grant: Grant,
        remote: str,
        may_publish: bool = True,
        entitlement: Entitlement | None = None,
        admission: Admission | None = None,
        presence: PresenceLookup | None = None,
        internal: bool = False,
    ) -> None:
        self.id = session_id
        # an internal probe (the admin API's canary subscriber, ADR 049): served like any
        # session, counted as none (no user, no subscription, no delivery in the indicators)
        self.internal = internal
        self.hub = hub
        self.peer = peer
        self.policy = policy
        self.grant = grant
        self.remote = remote
        self.host = host_of(remote)
        self.may_publish = may_publish
        self.entitlement = entitlement or AllowAll()
        self.admission = admission or Admission(
            PublishGuard(PublishLimits()), self.entitlement, hub
        )
        self._bucket = self.admission.guard.connection_bucket()
        self.connected_at = time.time()
        self.subjects: dict[str, None] = {}
        # subject -> the client id presence lists for this subscription (the token's sub first)
        self.client_ids: dict[str, str] = {}
        self._declared: dict[str, str | None] = {}  # subject -> the id the client declared
        self.presence = presence
        self.messages_in = 0
        self.replies_out = 0  # frames other than messages (answers, errors): not messages out
        self._errors_in_a_row = 0
        self._expiry: asyncio.TimerHandle | None = None
        self._welcomed = False  # the protocol's first frame is always the welcome
        self.answers = InOrder(self.send)  # publishes in flight, answered in request order
        # what this session's client reported of its deliveries (core/delivery.py)
        self.delivery = SessionDelivery()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    # -- output -----------------------------------------------------------------------------

    def send(self, frame: ServerFrame) -> None:
        if not self._welcomed and not isinstance(frame, Welcome):
            raise LocalProtocolError(f"{type(frame).__name__} frame before the welcome")
        self.replies_out += 1
        out = OutFrame.of(frame)
        if self.hub.tracer.by_client:
            self.hub.tracer.sent(self, (out,))
        self.peer.send(out)

    def send_messages(self, frames: list[OutFrame], live: bool = False) -> None:
        """Queue message frames; ``live``: updates due to a subscription (accounted)."""
        if frames and not self._welcomed:
            raise LocalProtocolError("message frames before the welcome")
        if self.hub.tracer.by_client:
            self.hub.tracer.sent(self, frames)
        if live:
            self.peer.deliver_all(frames)
        else:
            self.peer.send_all(frames)
        self.hub.counters.messages_out_total += len(frames)

    def welcome(self) -> None:
        if self._welcomed:
            raise LocalProtocolError(f"a second welcome for session {self.id}")
        self.send(
            Welcome(
                server=self.policy.server_name,
                version=self.policy.version,
                session=self.id,
                keepalive=self.policy.keepalive,
                max_message_size=self.policy.limits.max_message_size,
                max_subscriptions=self.policy.max_subscriptions,
            )
        )
        self._welcomed = True
        self._arm_expiry()

    @property
    def client_id(self) -> str:
        """Who the client is: the token's ``sub`` when it names one, else the ``client_id`` it
        declared with its first subscription that declared one, else ""."""
        if self.grant.client:
            return self.grant.client
        return next((c for c in self._declared.values() if c), "")

    def close(self) -> None:
        """The connection ended: drop the expiry timer."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    # -- token expiry and refresh -------------------------------------------------------------

    def _arm_expiry(self) -> None:
        """Close the connection with 4006 when the token's ``exp`` passes unrefreshed."""
        self.close()
        expires = self.grant.expires if self.grant.valid else None
        if expires is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (pure unit use): nothing to schedule
            return
        self._expiry = loop.call_later(max(0.0, expires - time.time()), self._expired)

    def _expired(self) -> None:
        self._expiry = None
        self.peer.close(CloseCode.TOKEN_EXPIRED, "token expired: refresh it with a token op")

    async def _refresh_token(self, op: Token) -> None:
        grant = self.entitlement.grant(op.token)
        if not grant.valid:
            self.send(TokenResult(result="denied", id=op.id, reason=grant.reason))
            return  # the current token stays in force until its own exp
        self.grant = grant
        self._arm_expiry()
        subjects = list(self.subjects)
        denials = await self.entitlement.subscribe_denials(grant, self.remote, subjects)
        revoked = [
            s
            for s, denial in zip(subjects, denials, strict=True)
            if denial is not None or self._events_denial(grant, s) is not None
        ]
        for subject in revoked:
            self.hub.unsubscribe(self, subject)
        for subject in self.subjects:  # a new ``sub``: presence lists the new identity
            self._list_as(subject)
        expires = int(grant.expires) if grant.expires is not None else None
        self.send(TokenResult(result="ok", id=op.id, expires=expires, revoked=revoked or None))

    def _events_denial(self, grant: Grant, subject: str) -> str | None:
        patterns = self.presence.patterns if self.presence is not None else ()
        return events_denial(grant, subject, patterns)

    def _list_as(self, subject: str) -> None:
        """The client id presence lists for ``subject``: the token's (JWT: its ``sub``, ""
        without one), the client's declaration only when the mode identifies nobody."""
        declared = self._declared.get(subject)
        client_id = declared if self.grant.client is None else self.grant.client
        if client_id == self.client_ids.get(subject, ""):
            return
        if client_id:
            self.client_ids[subject] = client_id
        else:
            self.client_ids.pop(subject, None)
        self.hub.touched.add(subject)

    # -- input ------------------------------------------------------------------------------

    async def handle_text(self, data: bytes | str) -> None:
        """Handle one complete text message from the client."""
        self.hub.tracer.received(self, data)  # returns at once while no client is traced
        try:
            op = decode_client_frame(data, self.policy.limits)
        except RemoteProtocolError as error:
            if not _answered_as_publish(error):
                await self.answers.settle()
            self._reject(error)
            return
        self._errors_in_a_row = 0
        if isinstance(op, Publish):
            await self._publish(op)
            return
        await self.answers.settle()  # the publishes before it are answered first
        if isinstance(op, Subscribe):
            await self.subscribe(op.subjects, op.id)
        elif isinstance(op, Unsubscribe):
            self._unsubscribe(op)
        elif isinstance(op, Ping):
            self.send(Pong(id=op.id, time=time.time_ns() // 1000))
        elif isinstance(op, Token):
            await self._refresh_token(op)
        elif isinstance(op, PresenceQuery):
            await self._presence(op)
        elif isinstance(op, DeliveryReport):
            self.hub.delivery.add_report(op, self.delivery)

    def handle_binary(self) -> None:
        self._reject(
            RemoteProtocolError(ErrorCode.BINARY_NOT_SUPPORTED, "send JSON in text frames")
        )

    def _reject(self, error: RemoteProtocolError) -> None:
        if _answered_as_publish(error):
            self.hub.counters.publish_rejected_total += 1
            result: PublishResultCode = (
                "too_large" if error.code == ErrorCode.MESSAGE_TOO_LARGE else "failed"
            )
            self.answers.add(  # after the publishes in flight before it, costing them nothing
                PublishResultFrame(
                    result=result,
                    subject=error.subject or "",
                    id=error.request_id,
                    code=error.code.value,
                    reason=error.message,
                )
            )
        else:
            if error.code is ErrorCode.INVALID_REPORT:
                self.hub.delivery.rejected_reports += 1
            self.send(
                Error(
                    code=error.code.value,
                    message=error.message,
                    id=error.request_id,
                    subject=error.subject,
                )
            )
        self._errors_in_a_row += 1
        if self._errors_in_a_row >= MAX_CONSECUTIVE_ERRORS:
            self.peer.close(
                CloseCode.TOO_MANY_ERRORS, f"{MAX_CONSECUTIVE_ERRORS} invalid frames in a row"
            )

    # -- publish ----------------------------------------------------------------------------

    async def _publish(self, op: Publish) -> None:
        """Through the one admission path (core/publishing.py); answer a publish_result.

        The rules are checked here, in request order; the engine's part runs as a task, so
        the next frame is read while this one waits for its acknowledgement (answers.py)."""
        request = arrived(op)
        publisher = Publisher(self.remote, self.host, self.grant, self.may_publish, self._bucket)
        refusal = await self.admission.refusal(publisher, request.subject)
        if refusal is not None:
            self.admission.count_refused()
            self.answers.add(_refused(op, refusal))
            return
        await self.answers.room()
        task = asyncio.get_running_loop().create_task(self._accept(op, request))
        self.answers.add(task)

    async def _accept(self, op: Publish, request: PublishRequest) -> PublishResultFrame:
        try:
            outcome = await self.admission.accept(request)
        except Exception:  # every publish gets its answer
            log.exception("publish to %s failed", op.subject)
            outcome = Refusal(ErrorCode.ENGINE_UNAVAILABLE, "internal error")
        if isinstance(outcome, Refusal):
            return _refused(op, outcome)
        self.messages_in += 1
        return PublishResultFrame(
            result="ok",
            subject=op.subject,
            id=op.id,
            epoch=outcome.epoch,
            seq=outcome.seq,
            duplicate=True if outcome.duplicate else msgspec.UNSET,
        )

    # -- subscribe --------------------------------------------------------------------------

    async def subscribe(self, items: list[SubscribeItem], request_id: int | None = None) -> None:
        """Subscribe to each item in turn (used by WebSocket frames and SSE requests)."""
        for item in items:
            await self._subscribe(item, request_id)

    async def _subscribe(self, item: SubscribeItem, request_id: int | None) -> None:
        subject = item.subject
        try:
            validate_subject(subject, request_id)
        except InvalidSubject as invalid:
            self._reject(invalid)
            return
        (denial,) = await self.entitlement.subscribe_denials(self.grant, self.remote, [subject])
        denial = denial or self._events_denial(self.grant, subject)
        if denial is not None:
            self.send(
                Subscribed(
                    subject=subject,
                    status="deny",
                    recovery="none",
                    epoch=None,
                    seq=None,
                    id=request_id,
                    reason=denial,
                )
            )
            return
        if subject not in self.subjects and len(self.subjects) >= self.policy.max_subscriptions:
            self._reject(
                RemoteProtocolError(
                    ErrorCode.TOO_MANY_SUBSCRIPTIONS,
                    f"at most {self.policy.max_subscriptions} subscriptions per connection",
                    request_id,
                    subject,
                )
            )
            return
        self.hub.begin_subscribe(self, subject)
        if len(self._declared) > 2 * len(self.subjects) + 8:  # forget unsubscribed subjects
            self._declared = {s: d for s, d in self._declared.items() if s in self.subjects}
        self._declared[subject] = item.declared_client
        self._list_as(subject)
        try:
            status, frames, epoch, last_seq = await self._initial(item, request_id)
        except EngineUnavailable as exc:  # a cluster without quorum: the client retries later
            self.hub.counters.subscribe_failures_total += 1
            self.hub.unsubscribe(self, subject)
            self._reject(
                RemoteProtocolError(ErrorCode.ENGINE_UNAVAILABLE, str(exc), request_id, subject)
            )
            return
        except Exception:
            log.exception("subscribe %s failed", subject)
            self.hub.counters.subscribe_failures_total += 1
            self.hub.unsubscribe(self, subject)
            self._reject(
                RemoteProtocolError(ErrorCode.INTERNAL, "subscribe failed", request_id, subject)
            )
            return
        if subject not in self.subjects:  # unsubscribed (or disconnected) meanwhile
            return
        self.hub.counters.subscribes_total += 1
        self.send(status)
        self.send_messages(frames)
        buffered = self.hub.finish_subscribe(self, subject, item.conflation_period, item.delta)
        fresh = [f for f in buffered if not _already_sent(f, epoch, last_seq)]
        if self.internal:  # a probe's deliveries are not accounted (ADR 049)
            self.send_messages(fresh)
            return
        if len(fresh) < len(buffered):  # the opening frames held them (core/accounting.py)
            self.hub.count_outcome(subject, COVERED, len(buffered) - len(fresh))
        self.send_messages(fresh, live=True)

    async def _initial(
        self, item: SubscribeItem, request_id: int | None
    ) -> tuple[Subscribed, list[OutFrame], str, int]:
        """The status frame and the messages that open a subscription, and its position."""
        engine = self.hub.engine
        subject = item.subject
        if item.recover is not None:
            recovery = await engine.recover(subject, item.recover)
            if recovery.outcome in ("recovered", "up_to_date"):
                self.hub.counters.recovery_successes_total += 1
                frames = [message_frame(m, "recovered") for m in recovery.messages]
                last = recovery.messages[-1].seq if recovery.messages else item.recover.seq
                status = Subscribed(
                    subject, "allow", recovery.outcome, recovery.epoch, last, request_id
                )
                return status, frames, recovery.epoch, last
            self.hub.counters.recovery_failures_total += 1
            frames, epoch, seq = await self._snapshot(subject)
            status = Subscribed(subject, "allow", recovery.outcome, epoch, seq, request_id)
            return status, frames, epoch, seq
        if item.history > 0:
            epoch, seq = await engine.position(subject)
            history = await engine.history(subject, item.history)
            frames = [message_frame(m, "historical") for m in history]
            if history:
                epoch, seq = history[-1].epoch, history[-1].seq
            return Subscribed(subject, "allow", "none", epoch, seq, request_id), frames, epoch, seq
        frames, epoch, seq = await self._snapshot(subject)
        return Subscribed(subject, "allow", "none", epoch, seq, request_id), frames, epoch, seq

    async def _snapshot(self, subject: str) -> tuple[list[OutFrame], str, int]:
        engine = self.hub.engine
        # The position is read first: a message accepted between the two reads is then newer
        # than the position and is replayed from the pending buffer instead of being lost.
        epoch, seq = await engine.position(subject)
        if self.policy.publish_snapshot:
            snapshot = await engine.snapshot(subject)
            if snapshot is not None:
                return [snapshot_frame(snapshot)], snapshot.epoch, snapshot.seq
        return [], epoch, seq

    # -- unsubscribe ------------------------------------------------------------------------

    # -- presence ---------------------------------------------------------------------------

    async def _presence(self, op: PresenceQuery) -> None:
        """Who follows ``op.subject``: for a presence subject this session may subscribe to."""
        if self.presence is None or not self.presence.enabled(op.subject):
            self._reject(
                RemoteProtocolError(
                    ErrorCode.PRESENCE_DISABLED,
                    "presence is not enabled for this subject (Occupancy.PresencePatterns)",
                    op.id,
                    op.subject,
                )
            )
            return
        (denial,) = await self.entitlement.subscribe_denials(self.grant, self.remote, [op.subject])
        if denial is not None:
            self._reject(RemoteProtocolError(ErrorCode.DENIED, denial, op.id, op.subject))
            return
        self.send(self.presence.answer(op.subject, op.id))

    def _unsubscribe(self, op: Unsubscribe) -> None:
        for subject in op.subjects:
            self.hub.unsubscribe(self, subject)
            self.send(Unsubscribed(subject=subject, id=op.id))


def _already_sent(update: OutFrame, epoch: str, last_seq: int) -> bool:
    """A buffered live update the opening frames already covered (a guaranteed one: it moves
    the position; a standard one takes no seq of its own and is always sent)."""
    return bool(update.move & SETS) and update.epoch == epoch and update.seq <= last_seq


def _answered_as_publish(error: RemoteProtocolError) -> bool:
    """A publish refused while decoding gets a publish_result (docs/protocol.md 5.3)."""
    return error.op == "publish" and error.code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.INVALID_SUBJECT,
    )


def _refused(op: Publish, refusal: Refusal) -> PublishResultFrame:
    return PublishResultFrame(
        result=_RESULTS.get(refusal.code, "failed"),
        subject=op.subject,
        id=op.id,
        code=None if refusal.code in _UNCODED else refusal.code.value,
        reason=refusal.reason,
    )
