"""Canaries (issue 33 item 3, ADR 049): a member's own proof that delivery works.

Every ``CANARY_INTERVAL`` the member publishes a canary on the meta-subject ``CANARY_SUBJECT``
through its engine's publish path (the path of every publish after admission: the memory
engine's numbering and fan-out, Standard's core NATS, Guaranteed's stream and republish), and
follows that subject through the hub like a subscriber: :meth:`Hub.follow` hands it the very
frame the hub builds for the subject's subscribers. Each canary carries its member's name, a
number and the publisher's clock; the follower keeps, per publisher, the last arrival and its
latency (``metrics.canary.CanaryRow``). A pair silent for ``STALE_AFTER`` whose publisher is up
makes this member "degraded: delivery" (``delivery_stalled``) in the one health model.

Canaries are not users' traffic: they never pass the admission (so they are not in
``messages_in_total``), the follower is not a session (not in ``messages_out_total``, the
hot or watched subjects, occupancy). A client entitled to ``/pushgrid/canary`` may subscribe
and sees them like any message; no client may publish there (meta-subject).

The admin API's probe (admin_api/canary_probe.py) is a real WebSocket client of the client port:
its token is this member's ``probe_key`` (handed out by the Canary MBean's ``probeKey``
operation, so only who holds the monitoring credentials), which makes its session *internal*
(``Session.internal``: not a user in any count, listed with ``internal: true``) and entitled to
``CANARY_SUBJECT`` only, whatever the entitlement mode.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import secrets
import time
from collections.abc import Callable
from typing import Protocol

import msgspec

from pushgrid.metrics.canary import CANARY_INTERVAL, CanaryRow, CanaryState, pair_name
from pushgrid.protocol.exceptions import EngineError

from .cluster.status import ClusterStatus
from .core.entitlement import Entitlement, Grant
from .core.hub import Hub
from .engine.base import Published, PublishRequest
from .framing.outframe import OutFrame

log = logging.getLogger(__name__)

CANARY_SUBJECT = "/pushgrid/canary"


class CanaryPublisher(Protocol):
    async def publish(self, request: PublishRequest) -> Published: ...


PROBE_PREFIX = "probe."
PROBE_GRANT = Grant(subscribe=(CANARY_SUBJECT,), publish=())
STALE_PROBE = Grant((), (), valid=False, reason="unknown probe key (the member restarted)")


class ProbeEntitlement(Entitlement):
    """The probe's entitlement: the canaries only, whatever token it sends later."""

    def grant(self, token: str | None) -> Grant:
        return PROBE_GRANT


PROBE_ENTITLEMENT = ProbeEntitlement()


class _Update(msgspec.Struct):
    """The part of a ``message`` frame the follower reads (docs/protocol.md)."""

    fields: dict[str, str] = {}


_decode = msgspec.json.Decoder(_Update).decode


def canary_request(member: str, number: int, sent: float) -> PublishRequest:
    """One canary: not retained (no snapshot to replay), qos standard (never cached)."""
    fields = {"member": member, "n": str(number), "sent": f"{sent:.6f}"}
    return PublishRequest(CANARY_SUBJECT, member, fields, False, "standard")


class CanaryService:
    """Publishes this member's canaries and follows everybody's through the hub."""

    def __init__(
        self,
        name: str,
        hub: Hub,
        publisher: CanaryPublisher,
        cluster: Callable[[], ClusterStatus],
        enabled: bool = True,
    ) -> None:
        self.name, self._hub, self._publisher, self._cluster = name, hub, publisher, cluster
        self.enabled = enabled
        self.row = CanaryRow(name)
        self.published = 0
        self.publish_failures = 0
        # the last publish of this member's own canary was accepted: only then is a silence
        # a delivery stall (a member that cannot publish says so with its own reasons:
        # no_quorum, nats_disconnected; and at start nothing is judged before the first)
        self.publishing = False
        self.malformed = 0  # frames on the subject that are not canaries (never expected)
        self._numbers = itertools.count(1)
        self._in_flight: asyncio.Task[None] | None = None
        # The admin API's probe connects to the client port with this key as its token (read
        # through the Canary MBean's ``probeKey`` operation, i.e. with the monitoring port's
        # credentials): its session is internal and may only subscribe to the canaries.
        self.probe_key = PROBE_PREFIX + secrets.token_urlsafe(24)

    async def run(self) -> None:
        """Follow, then publish one canary a second until cancelled."""
        if not self.enabled:
            return
        self._hub.follow(CANARY_SUBJECT, self, self._on_frame)
        self.row.expect(self.name, time.time())
        try:
            while True:
                self._expect_members(time.time())
                self._publish_one()
                await asyncio.sleep(CANARY_INTERVAL)
        finally:
            self._hub.stop_following(CANARY_SUBJECT, self)
            if self._in_flight is not None:
                self._in_flight.cancel()

    def _expect_members(self, now: float) -> None:
        """Expect every member that is up; forget the ones no longer in the cluster."""
        members = self._cluster().members
        for member in members:
            if member.state == "up":
                self.row.expect(member.name, now)
        self.row.forget([m.name for m in members] + [self.name])

    def _publish_one(self) -> None:
        """At most one canary in flight: a publish that hangs (no quorum) skips the next ones
        instead of piling them up; the silence is what the receivers measure."""
        if self._in_flight is not None and not self._in_flight.done():
            self.publish_failures += 1
            return
        request = canary_request(self.name, next(self._numbers), time.time())
        self._in_flight = asyncio.get_running_loop().create_task(self._publish(request))

    async def _publish(self, request: PublishRequest) -> None:
        try:
            await self._publisher.publish(request)
        except EngineError as exc:  # no quorum, engine full: the receivers see the silence
            self.publish_failures += 1
            self.publishing = False
            log.debug("canary not published: %s", exc)
        except Exception:  # a canary must never take the member down: logged, counted
            self.publish_failures += 1
            self.publishing = False
            log.warning("canary not published", exc_info=True)
        else:
            self.published += 1
            self.publishing = True

    def _on_frame(self, frame: OutFrame) -> None:
        """A canary as the subject's subscribers get it (the hub's frame, decoded)."""
        arrived = time.time()
        try:
            fields = _decode(frame.payload).fields
            publisher, sent = fields["member"], float(fields["sent"])
        except (msgspec.DecodeError, KeyError, ValueError):
            self.malformed += 1
            return
        self.row.record(publisher, sent, arrived)

    def probe_grant(self, token: str | None) -> Grant | None:
        """The grant of the admin API's probe when ``token`` is its key, else None."""
        if token is None or not token.startswith(PROBE_PREFIX):
            return None
        if not hmac.compare_digest(token.encode(), self.probe_key.encode()):
            return STALE_PROBE  # a key of this member's previous start: a user, entitled to nothing
        return PROBE_GRANT

    # -- what the views read ------------------------------------------------------------------

    def state(self, now: float | None = None) -> CanaryState:
        at = time.time() if now is None else now
        pairs = tuple(self.row.pairs(at)) if self.enabled else ()
        return CanaryState(self.name, self.enabled, self.published, self.publish_failures, pairs)

    def stalled_pairs(self, status: ClusterStatus, now: float) -> tuple[str, ...]:
        """``publisher->receiver`` of every stale pair whose publisher is alive (health,
        ``CanaryRow.stalled``), while this member's own canaries are accepted: it takes
        publishes and does not deliver them."""
        if not self.enabled or not self.publishing:
            return ()
        heard = {
            m.name: m.last_seen_seconds or 0.0
            for m in status.members
            if m.state == "up" and not m.is_self
        }
        heard[self.name] = 0.0  # this member publishes its own canaries: alive
        return tuple(pair_name(p, self.name) for p in self.row.stalled(now, heard))
