"""Subscriptions and fan-out.

The hub keeps, per subject, the sessions subscribed to it. The engine calls :meth:`Hub.deliver`
for every message in per-subject order; the hub builds the message's one :class:`OutFrame` (JSON
encoded once from the engine's value, WebSocket frame built once on first use; ADR 024) and hands
it to every subscriber's connection, which frames it for its protocol (ADR 018). A subscription
being set up (snapshot or recovery still being read from the engine) is *pending*: the same live
frames are buffered for it and replayed after the recovered ones, without duplicates, so nothing
falls between the two.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pushgrid.metrics.counters import Counters

from ..engine.base import Engine, Published
from ..framing.outframe import OutFrame
from .accounting import CLOSED, CONFLATED, DELTAS, DUE, REFUSED, new_tally
from .conflation import ConflatedSubscription, Conflator
from .delivery import DeliveryBook
from .deltas import DeltaLimits, SubjectDeltas
from .outgoing import update_frame
from .slow_consumers import SlowConsumerLog
from .tracing import Tracer

if TYPE_CHECKING:
    from .session import Session


class Peer(Protocol):
    """What the hub and a session need from a connection: queue pre-encoded frames, close it."""

    def send(self, frame: OutFrame) -> None: ...

    def deliver(self, frame: OutFrame) -> None:
        """``send`` for a live delivery: counted as written when it reaches the socket, or as
        dropped or closed when the connection discards it (core/accounting.py)."""

    def send_all(self, frames: Sequence[OutFrame]) -> None:
        """One request's replies, in order; more than the connection may hold for one request
        closes it as a slow consumer."""

    def deliver_all(self, frames: Sequence[OutFrame]) -> None:
        """``send_all`` for live deliveries (a subscription's buffered updates)."""

    def close(self, code: int, reason: str) -> None: ...


class _Subscribers(Protocol):
    """One subject's subscribers in one table (a dict keyed by session, or SubjectDeltas)."""

    def __contains__(self, session: object, /) -> bool: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Session]: ...

    def pop(self, session: Session, /) -> object: ...


class Hub:
    def __init__(self, engine: Engine, counters: Counters) -> None:
        self.engine = engine
        self.counters = counters
        # subject -> session -> that session's peer.send (bound once: the fan-out loop is hot)
        self._live: dict[str, dict[Session, Callable[[OutFrame], None]]] = {}
        # subject -> session -> the live updates buffered while its subscription opens
        self._pending: dict[str, dict[Session, list[OutFrame]]] = {}
        self._conflated: dict[str, dict[Session, ConflatedSubscription]] = {}
        # subscriptions that asked for field deltas (server/core/deltas.py), per subject
        self._deltas: dict[str, SubjectDeltas] = {}
        self.delta_limits = DeltaLimits()  # the snapshot bounds' settings (server/app.py)
        # the clients' delivery reports and the server's legs (core/delivery.py, ADR 048)
        self.delivery = DeliveryBook()
        # The one list of the subscription tables: subject -> that table's subscribers (each a
        # collection of sessions that ``pop`` one). Whatever asks "who follows a subject" goes
        # through it, so a new table cannot be forgotten by one method (issue 34: the engine's
        # "in use" predicate forgot the delta table). ``deliver`` reads each by name: it treats
        # each kind differently and is the hot path.
        self._tables: tuple[dict[str, Any], ...] = (
            self._live,
            self._pending,
            self._conflated,
            self._deltas,
        )
        self.conflator = Conflator(self._count_conflated, self.count_outcome)
        self.sessions: dict[str, Session] = {}
        # Hot and watched subjects (metrics/hotsubjects.py, server/core/watch.py): per-subject
        # [messages in, messages out, bytes out, bytes in] since the sampler last took them,
        # then the delivery accounting's columns (core/accounting.py: due, written, ...). A
        # few integer ops per message; the sketch and pattern work happen once a second.
        # ``tally_limit`` subjects at most: past it the hub hands the deltas over early
        # through ``on_tally_full``.
        self.tally: dict[str, list[int]] = {}
        self.tally_limit = 1000
        self.on_tally_full: Callable[[], None] | None = None
        # Sessions an operator watches (live trace): their last frames (as WebSocket frames),
        # newest last. Recording wraps only these sessions' send, so the others pay nothing.
        self.watched: dict[Session, deque[tuple[float, bytes]]] = {}
        # Subjects whose subscriptions changed since the occupancy service last looked
        # (server/occupancy.py): one set add per subscribe or unsubscribe, never per message.
        self.touched: set[str] = set()
        # Internal followers (server/canary.py: the member's canary follower; sessions marked
        # internal, such as the admin API's probe): subject -> their sends. They get the very
        # frame subscribers get, from the same ``deliver``, but are not users: no counter, no
        # tally, no occupancy (ADR 049).
        self._internal: dict[str, dict[object, Callable[[OutFrame], None]]] = {}
        # who was closed as a slow consumer (4001), bounded (server/core/slow_consumers.py)
        self.slow_consumers = SlowConsumerLog()
        # traces by client id or subject (server/core/tracing.py): taps, never subscribers
        self.tracer = Tracer()

    # -- sessions ---------------------------------------------------------------------------

    def add_session(self, session: Session) -> None:
        self.sessions[session.id] = session
        if session.internal:  # a probe is not a user (ADR 049)
            return
        self.counters.sessions += 1
        self.counters.connections_total += 1

    def remove_session(self, session: Session) -> None:
        if self.sessions.pop(session.id, None) is None:
            return
        for subject in list(session.subjects):
            self.unsubscribe(session, subject)
        self.watched.pop(session, None)
        if session.internal:
            return
        self.counters.sessions -= 1
        self.counters.disconnections_total += 1

    def watch(self, session: Session, keep: int = 20) -> deque[tuple[float, bytes]]:
        """Start (or keep) recording the last ``keep`` frames fanned out to ``session``."""
        recorded = self.watched.get(session)
        if recorded is None:
            recorded = self.watched[session] = deque(maxlen=keep)
            self.rebind(session)
        return recorded

    def rebind(self, session: Session) -> None:
        """Give ``session``'s live subscriptions the sender they need now (recording when the
        session is watched or traced by its client id, the plain one otherwise)."""
        for subscribers in self._live.values():
            if session in subscribers:
                subscribers[session] = self._sender(session)
        for deltas in self._deltas.values():
            subscriber = deltas.subscribers.get(session)
            if subscriber is not None:
                subscriber.send = self._sender(session)

    def _sender(self, session: Session) -> Callable[[OutFrame], None]:
        recorded = self.watched.get(session)
        # a user's live deliveries are accounted (written, dropped); a probe's are not (ADR 049)
        send = session.peer.send if session.internal else session.peer.deliver
        tracer = self.tracer
        if recorded is None and session.client_id not in tracer.by_client:
            return send

        def record_and_send(frame: OutFrame) -> None:
            if recorded is not None:
                recorded.append((time.time(), frame.ws()))
            if tracer.by_client:
                tracer.sent(session, (frame,))
            send(frame)

        return record_and_send

    # -- subscriptions ----------------------------------------------------------------------

    def begin_subscribe(self, session: Session, subject: str) -> None:
        """Start buffering live messages of ``subject`` for ``session``."""
        followed = self._interested(subject)
        self._drop(session, subject)
        self._pending.setdefault(subject, {})[session] = []
        if not followed:  # before the engine is asked for the snapshot (server/workers)
            self.engine.interest_changed(subject, True)
        if subject not in session.subjects:
            session.subjects[subject] = None
            if not session.internal:
                self.counters.subscriptions += 1
        if not session.internal:
            self.touched.add(subject)

    def finish_subscribe(
        self, session: Session, subject: str, conflation_ms: int = 0, delta: bool = False
    ) -> list[OutFrame]:
        """Make the subscription live; return what was buffered meanwhile, in order.

        With ``conflation_ms`` > 0 live messages go through the conflator instead; otherwise,
        with ``delta``, they carry only the fields that changed (after a first full one).
        """
        pending = self._pending.get(subject)
        buffered = pending.pop(session, []) if pending is not None else []
        if pending is not None and not pending:
            del self._pending[subject]
        if subject not in session.subjects:
            return buffered
        if session.internal:  # the frames subscribers get, uncounted (ADR 049)
            self.follow(subject, session, self._sender(session))
        elif conflation_ms > 0:
            anchor = asyncio.get_running_loop().time()
            subscription = ConflatedSubscription(session.peer.deliver, conflation_ms, anchor)
            self._conflated.setdefault(subject, {})[session] = subscription
        elif delta:
            deltas = self._deltas.get(subject)
            if deltas is None:
                deltas = self._deltas[subject] = SubjectDeltas(self.delta_limits)
            deltas.add(session, self._sender(session))
        else:
            self._live.setdefault(subject, {})[session] = self._sender(session)
        return buffered

    def unsubscribe(self, session: Session, subject: str) -> bool:
        """Remove one subscription; False when there was none."""
        if subject not in session.subjects:
            return False
        del session.subjects[subject]
        session.client_ids.pop(subject, None)
        self._drop(session, subject)
        if not session.internal:
            self.touched.add(subject)
            self.counters.subscriptions -= 1
        if not self._interested(subject):
            self.engine.interest_changed(subject, False)
        return True

    def follow(self, subject: str, follower: object, send: Callable[[OutFrame], None]) -> None:
        """Deliver ``subject``'s live messages to an internal ``follower`` (not a user)."""
        if not self._interested(subject):  # the subject's owner forwards it here (server/workers)
            self.engine.interest_changed(subject, True)
        self._internal.setdefault(subject, {})[follower] = send

    def unfollow(self, subject: str, follower: object) -> None:
        followers = self._internal.get(subject)
        if followers is not None and followers.pop(follower, None) is not None and not followers:
            del self._internal[subject]

    def stop_following(self, subject: str, follower: object) -> None:
        """:meth:`unfollow`, and the engine told when nobody here follows ``subject`` any more."""
        self.unfollow(subject, follower)
        if not self._interested(subject):
            self.engine.interest_changed(subject, False)

    def _interested(self, subject: str) -> bool:
        """Does anything here receive ``subject``: a subscriber or an internal follower?"""
        return self.has_subscribers(subject) or subject in self._internal

    def _drop(self, session: Session, subject: str) -> None:
        pending = self._pending.get(subject)
        if pending and not session.internal and pending.get(session):
            # a subscription that never opened: its buffered updates are never sent
            self.count_outcome(subject, CLOSED, len(pending[session]))
        conflated = self._conflated.get(subject)
        if conflated is not None and session in conflated:
            conflated[session].active = False  # a pending timer skips it
        for table in self._tables:
            subscribers: _Subscribers | None = table.get(subject)
            if subscribers is not None and session in subscribers:
                subscribers.pop(session)
                if not subscribers:
                    del table[subject]  # a delta table's field values go with it
        if session.internal:
            self.unfollow(subject, session)

    def _subscribers(self, subject: str) -> Iterator[_Subscribers]:
        """``subject``'s subscribers in every table that has some."""
        for table in self._tables:
            subscribers: _Subscribers | None = table.get(subject)
            if subscribers is not None:
                yield subscribers

    def subscriber_count(self, subject: str) -> int:
        return sum(len(subscribers) for subscribers in self._subscribers(subject))

    def present(self, subject: str) -> dict[str, str]:
        """The sessions of this node subscribed to ``subject``: session id -> client id
        (presence, server/presence.py; "" when the client declared none)."""
        return {
            session.id: session.client_ids.get(subject, "")
            for subscribers in self._subscribers(subject)
            for session in subscribers
        }

    def has_subscribers(self, subject: str) -> bool:
        """Does a session of this node subscribe to ``subject`` (or is it subscribing)? The
        engine's "in use" predicate (guarantee 9): a subscribed subject is never evicted."""
        # a table drops a subject with its last subscriber
        return any(subject in table for table in self._tables)

    def subjects(self) -> Iterator[str]:
        return iter(set[str]().union(*self._tables))

    def subscriber_counts(self) -> Iterator[tuple[str, int]]:
        """(subject, local subscribers) of every subscribed subject."""
        for subject in self.subjects():
            yield subject, self.subscriber_count(subject)

    def take_touched(self) -> set[str]:
        """The subjects whose subscriptions changed since the last call (a new set starts)."""
        touched, self.touched = self.touched, set()
        return touched

    def take_tally(self) -> dict[str, list[int]]:
        """The per-subject deltas counted since the last call (the hub starts a new dict)."""
        tally, self.tally = self.tally, {}
        return tally

    def add_tally(self, rows: dict[str, list[int]]) -> None:
        """Another worker's per-subject deltas, counted as if here (worker 0 of a multi-process
        server folds the server's traffic: server/workers/tally_share.py)."""
        for subject, row in rows.items():
            counts = self.tally.get(subject) or self._new_tally(subject)
            counts[:] = map(operator.add, counts, row)  # same columns: the same version

    def _new_tally(self, subject: str) -> list[int]:
        if len(self.tally) >= self.tally_limit:
            if self.on_tally_full is not None:
                self.on_tally_full()  # takes the deltas so far
            self.tally = {}  # (hot subjects off: nobody takes them; the memory stays bounded)
        counts = self.tally[subject] = new_tally()
        return counts

    def count_outcome(self, subject: str, column: int, n: int = 1) -> None:
        """``n`` deliveries of ``subject`` ended as ``column`` (core/accounting.py)."""
        counts = self.tally.get(subject) or self._new_tally(subject)
        counts[column] += n

    def count_refused(self, subject: str) -> None:
        """A publish of ``subject`` refused by entitlement (never published, never due)."""
        self.count_outcome(subject, REFUSED)

    # -- delivery ---------------------------------------------------------------------------

    def count_published(self, subject: str, size: int = 0) -> None:
        """A publisher's message was accepted *here* (WebSocket or HTTP ``POST /publish``).

        Incoming traffic is counted where it entered, once in the cluster: every member fans
        a message out (``deliver``), but only the member that accepted it counts it in, so the
        cluster's incoming rate and hot-subject ranking are the sum of the members' (issue 21).
        ``size``: the message's size (UTF-8 content and fields), a watched pattern's bytes in.
        """
        self.counters.messages_in_total += 1
        counts = self.tally.get(subject) or self._new_tally(subject)
        counts[0] += 1
        counts[3] += size

    def deliver(self, message: Published) -> None:
        """Engine callback: fan ``message`` out to the subject's subscribers; measures the
        engine leg (ingress to here) and the fan-out's own time (ADR 048)."""
        if not message.ingress:
            self._deliver_now(message)
            return
        started = time.time_ns()
        self.delivery.leg("engine", started / 1000 - message.ingress)
        self._deliver_now(message)
        self.delivery.leg("fanout", (time.time_ns() - started) / 1000)

    def _deliver_now(self, message: Published) -> None:
        subject = message.subject
        counts = self.tally.get(subject) or self._new_tally(subject)
        # the live update: encoded once, here, when someone reads it (a subject trace too)
        frame = self._traced(message) if self.tracer.by_subject else None
        pending = self._pending.get(subject)
        if pending:
            frame = frame or update_frame(message)
            for session, buffered in pending.items():
                buffered.append(frame)
                if not session.internal:  # a probe's subscription is not due anything
                    counts[DUE] += 1
        conflated = self._conflated.get(subject)
        if conflated:
            counts[DUE] += len(conflated)
            for subscription in conflated.values():
                self.conflator.absorb(subscription, message)
        deltas = self._deltas.get(subject)
        if deltas is not None:
            sent, size, frame = deltas.deliver(message, frame)
            self.counters.messages_out_total += sent
            counts[1] += sent
            counts[2] += size
            counts[DUE] += sent
            counts[DELTAS] += deltas.elided
        self._fan_out(message, frame, counts)

    def _fan_out(self, message: Published, frame: OutFrame | None, counts: list[int]) -> None:
        """The live subscribers (counted) and the internal followers (not), one frame."""
        subject = message.subject
        internal = self._internal.get(subject)
        if internal:
            if frame is None:
                frame = update_frame(message)
            for follow in internal.values():
                follow(frame)
        live = self._live.get(subject)
        if not live:
            return
        if frame is None:
            frame = update_frame(message)
        for send in live.values():
            send(frame)
        sent = len(live)
        self.counters.messages_out_total += sent
        counts[1] += sent
        counts[DUE] += sent
        counts[2] += sent * frame.ws_size()

    def _traced(self, message: Published) -> OutFrame | None:
        """The message's frame, recorded by the subject's traces (None: no trace follows it)."""
        if message.subject not in self.tracer.by_subject:
            return None
        frame = update_frame(message)
        self.tracer.delivered(message.subject, frame)
        return frame

    def _count_conflated(self, subject: str, frame: OutFrame, absorbed: int) -> None:
        """One conflated message sent (per subject, like a live delivery): it carries the last
        of the ``absorbed`` messages, the others were conflated away."""
        self.counters.messages_out_total += 1
        counts = self.tally.get(subject) or self._new_tally(subject)
        counts[1] += 1
        counts[2] += frame.ws_size()
        counts[CONFLATED] += absorbed - 1
