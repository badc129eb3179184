"""The one admission path of a publish, whichever transport it came in on.

A WebSocket ``publish`` frame (core/session.py) and ``POST /publish`` (transport/http.py; SSE
clients publish there) both call :meth:`Admission.publish`: the same rules in the same order,
then the engine, then the same counting. The transports only parse their input and frame the
answer (a ``publish_result`` or an HTTP status).

- ``PublishAllow``: the client's address may publish at all.
- Meta-subjects (``/pushgrid/...``) are server-owned: no client publishes there, in any
  entitlement mode (they would fake the server's own statistics).
- Entitlement: the publisher's grant allows the subject.
- Rate: a token bucket per connection (PublishRatePerConnection) and one per client address
  (PublishRatePerAddress), both with PublishBurst; a publish beyond them is refused
  ``rate_limited`` and loses nothing else. One fast publisher then cannot crowd the others'
  fan-out out of the event loop.
- Snapshot bounds (MaxFieldsPerSubject, MaxSnapshotSize) are not checked here: the engine
  checks them inside its own merge (engine guarantee 8), where concurrent publishes cannot
  overshoot them; its refusal comes back as a :class:`Refusal` like the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pushgrid.kernel.throttle import AddressBuckets, Clock, TokenBucket
from pushgrid.protocol.errors import ErrorCode
from pushgrid.protocol.frames import Publish

from ..engine.base import META_PREFIX, EngineRefusal, Published, PublishRequest
from .entitlement import Entitlement, Grant
from .hub import Hub


def arrived(op: Publish) -> PublishRequest:
    """A decoded publish (WebSocket frame or ``POST /publish`` body) as it enters the engine,
    stamped with its ingress time: now, on this member (the start of the end-to-end latency
    clients measure, ADR 048)."""
    return PublishRequest(
        op.subject,
        op.content,
        op.fields,
        op.retained,
        op.qos,
        op.message_id,
        op.size,
        ingress=time.time_ns() // 1000,
    )




@dataclass(frozen=True, slots=True)
class PublishLimits:
    rate_per_connection: float = 0.0  # publishes a second; 0 = unlimited
    rate_per_address: float = 0.0
    burst: int = 1000


@dataclass(frozen=True, slots=True)
class Refusal:
    code: ErrorCode
    reason: str


@dataclass(frozen=True, slots=True)
class Publisher:
    """Who publishes, as the rules see them."""

    remote: str  # host:port
    host: str  # the address PublishAllow and PublishRatePerAddress look at
    grant: Grant
    may_publish: bool  # the address is in PublishAllow
    bucket: TokenBucket | None = None  # the connection's rate; None: one HTTP request


class PublishGuard:
    """The rules that need no engine: meta-subjects and rates (shared by every transport)."""

    def __init__(self, limits: PublishLimits, clock: Clock = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.addresses = AddressBuckets(limits.rate_per_address, limits.burst, clock)

    def connection_bucket(self) -> TokenBucket:
        return TokenBucket(self.limits.rate_per_connection, self.limits.burst, self.clock())

    def reserved(self, subject: str) -> Refusal | None:
        if subject.startswith(META_PREFIX):
            return Refusal(
                ErrorCode.RESERVED_SUBJECT,
                f"subjects under {META_PREFIX} are published by the server only",
            )
        return None

    def rate(self, host: str, bucket: TokenBucket | None) -> Refusal | None:
        """Take a token from the connection's bucket (if any) and the address's."""
        if bucket is not None and not bucket.take(self.clock()):
            return Refusal(
                ErrorCode.RATE_LIMITED,
                f"above PublishRatePerConnection ({self.limits.rate_per_connection:g}/s)",
            )
        if not self.addresses.take(host):
            return Refusal(
                ErrorCode.RATE_LIMITED,
                f"above PublishRatePerAddress ({self.limits.rate_per_address:g}/s)",
            )
        return None


class Admission:
    """Admit one publish: the rules (cheap ones first), the engine, the counting."""

    def __init__(self, guard: PublishGuard, entitlement: Entitlement, hub: Hub) -> None:
        self.guard = guard
        self.entitlement = entitlement
        self.hub = hub

    async def publish(self, publisher: Publisher, request: PublishRequest) -> Published | Refusal:
        """The accepted message, or the first rule it breaks (counted as rejected)."""
        refusal = await self.refusal(publisher, request.subject)
        if refusal is not None:
            self.count_refused()
            return refusal
        return await self.accept(request)

    async def accept(self, request: PublishRequest) -> Published | Refusal:
        """The engine's part of a publish that passed :meth:`refusal`. The engine takes the
        message's place in its subject's order before this first suspends (a session runs it
        as a task, in request order: core/answers.py)."""
        try:
            published = await self.hub.engine.publish(request)
        except EngineRefusal as exc:  # a bound, a memory bound, no quorum (guarantee 8)
            refusal = Refusal(exc.code, exc.reason)
        else:
            if not published.duplicate:  # a retry's original was counted when it came in
                self.hub.count_published(request.subject, request.size)
                if request.ingress:  # ingress to the engine's acknowledgement (ADR 048)
                    self.hub.delivery.leg("publish_ack", time.time_ns() / 1000 - request.ingress)
            return published
        self.count_refused()
        return refusal

    def count_refused(self) -> None:
        self.hub.counters.publish_rejected_total += 1

    async def refusal(self, publisher: Publisher, subject: str) -> Refusal | None:
        """The first rule the publish breaks before the engine: address, meta-subject,
        entitlement, rate (a refused publish takes no rate token unless the rate refused it)."""
        if not publisher.may_publish:
            return Refusal(ErrorCode.DENIED, "this address may not publish (PublishAllow)")
        refusal = self.guard.reserved(subject)
        if refusal is not None:
            return refusal
        denial = await self.entitlement.publish_denial(publisher.grant, publisher.remote, subject)
        if denial is not None:
            self.hub.count_refused(subject)  # per subject: delivery accounting's "refused"
            return Refusal(ErrorCode.DENIED, denial)
        return self.guard.rate(publisher.host, publisher.bucket)
