"""The client's sans-I/O state machine: events in, actions out. No asyncio, no sockets, no clock.

:class:`ClientProtocol` holds everything the client knows -- connection state, subscriptions,
stream positions, request ids, keepalive deadlines, the server pool and the backoff -- and
decides everything the client does. :class:`client.client.PushgridClient` (the *connection*)
only moves bytes, runs timers and executes the actions, as ``websockets`` splits its protocol
from its connection.

Events in (method calls): ``start()``, ``welcome_received()``, ``data_received()``,
``timer_fired()``, ``connection_lost()``, ``backoff_elapsed()``, ``close()`` and the
application's requests (``subscribe()``, ``unsubscribe()``, ``publish_request()``,
``token_request()``). ``now`` is always passed in (seconds, any monotonic origin); the wall
clock (latency measurement, :mod:`client.delivery`) is injected as ``wall_clock``.

Actions out (returned lists, executed in order): :class:`Send` a frame, :class:`Deliver` a
message, :class:`Notify` a status event, :class:`Answer` a publish or token request,
:class:`RetrySubscribe` after a delay, :class:`Reconnect` after a delay, :class:`Abort` the
connection (keepalive deadline missed), :class:`Stop` for good.

States (:class:`State`) change only through :data:`TRANSITIONS`; an event not allowed in the
current state raises :class:`StateError` (a bug in the caller, never a network condition).
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

import msgspec

from pushgrid.protocol.codec import publish_size
from pushgrid.protocol.errors import InvalidSubject
from pushgrid.protocol.exceptions import ClientError
from pushgrid.protocol.frames import (
    DeliveryReport,
    Error,
    Keepalive,
    MessageFrame,
    Ping,
    Pong,
    Position,
    PresenceAnswer,
    PresenceQuery,
    Publish,
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

from .backoff import Backoff
from .closecodes import OTHER_SERVER, ReconnectRule, rule_for_close
from .delivery import DeliveryReporter
from .models import Message, MessageType, PublishResult, PublishStatus, QoS, Status, StatusEvent
from .recovery import Action, RecoveryTracker
from .servers import ServerAddress, ServerPool

__all__ = [
    "DEAD_FACTOR",
    "SUBJECTS_PER_FRAME",
    "TRANSITIONS",
    "Abort",
    "Answer",
    "ClientAction",
    "ClientFrame",
    "ClientProtocol",
    "Deliver",
    "Ended",
    "Event",
    "Notify",
    "Reconnect",
    "RetrySubscribe",
    "Send",
    "State",
    "StateError",
    "Stop",
    "check_subject",
    "decode_welcome",
    "subject_list",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: A connection is dead after ``DEAD_FACTOR x keepalive`` without a frame from the server.
DEAD_FACTOR = 1.4
SUBJECTS_PER_FRAME = 500

# A frame is one server frame or, from a batching server, a JSON array of them.
_decoder: msgspec.json.Decoder[ServerFrame | list[ServerFrame]] = msgspec.json.Decoder(
    ServerFrame | list[ServerFrame]
)

ClientFrame = Subscribe | Unsubscribe | Publish | Ping | Token | PresenceQuery | DeliveryReport

#: seconds between delivery reports (docs/protocol.md 5.7)
REPORT_INTERVAL = 5.0
#: clock pings after a welcome: this many, a second apart, then one per report period
EARLY_CLOCK_PINGS = 4


class State(StrEnum):
    IDLE = "idle"  # created; connect() not called yet
    CONNECTING = "connecting"  # opening a connection, waiting for the welcome
    OPEN = "open"  # welcomed: frames flow both ways
    WAITING = "waiting"  # the connection ended; waiting the backoff delay
    CLOSED = "closed"  # stopped for good (close() or a do-not-retry close code)


class Event(StrEnum):
    START = "start"
    WELCOME = "welcome"
    LOST = "lost"  # the connection ended (or never opened); the rule says retry
    REFUSED = "refused"  # the connection ended with a do-not-retry close code
    RETRY = "retry"  # the backoff delay elapsed
    CLOSE = "close"  # the application closed the client


#: (state, event) -> next state. Anything else is a :class:`StateError`.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.IDLE, Event.START): State.CONNECTING,
    (State.IDLE, Event.CLOSE): State.CLOSED,
    (State.CONNECTING, Event.WELCOME): State.OPEN,
    (State.CONNECTING, Event.LOST): State.WAITING,
    (State.CONNECTING, Event.REFUSED): State.CLOSED,
    (State.CONNECTING, Event.CLOSE): State.CLOSED,
    (State.OPEN, Event.LOST): State.WAITING,
    (State.OPEN, Event.REFUSED): State.CLOSED,
    (State.OPEN, Event.CLOSE): State.CLOSED,
    (State.WAITING, Event.RETRY): State.CONNECTING,
    (State.WAITING, Event.CLOSE): State.CLOSED,
}


class StateError(ClientError, RuntimeError):
    """An event the current state does not allow (a bug in the caller)."""

    code = "client_state"


# --- actions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    frame: ClientFrame


@dataclass(frozen=True, slots=True)
class Deliver:
    message: Message


@dataclass(frozen=True, slots=True)
class Notify:
    event: StatusEvent


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome of the publish, token or presence request ``request_id`` (a presence
    request refused by the server answers its ``error`` frame)."""

    request_id: int
    result: PublishResult | TokenResult | PresenceAnswer | Error


@dataclass(frozen=True, slots=True)
class RetrySubscribe:
    """Call :meth:`ClientProtocol.retry_subscribe` with ``subjects`` after ``delay`` seconds."""

    delay: float
    subjects: frozenset[str]


@dataclass(frozen=True, slots=True)
class Reconnect:
    """Call :meth:`ClientProtocol.backoff_elapsed` after ``delay`` seconds."""

    delay: float


@dataclass(frozen=True, slots=True)
class Abort:
    """Drop the connection without a close handshake: ``detail`` says why."""

    detail: str


@dataclass(frozen=True, slots=True)
class Stop:
    """The client stopped for good; ``event`` is the final CLOSED status event."""

    event: StatusEvent


ClientAction = Send | Deliver | Notify | Answer | RetrySubscribe | Reconnect | Abort | Stop


@dataclass(frozen=True, slots=True)
class Ended:
    """How a connection ended. ``code`` / ``reason`` come from the close frame, if any."""

    detail: str
    up_for: float = 0.0
    code: int | None = None
    reason: str | None = None
    rule: ReconnectRule = OTHER_SERVER

    @classmethod
    def closed(cls, code: int, reason: str, up_for: float) -> Ended:
        """Closed by the server with ``code``: the close-code table decides what follows."""
        detail = f"closed by the server: {code} {reason}".rstrip()
        return cls(detail, up_for, code, reason, rule_for_close(code))


@dataclass(frozen=True, slots=True)
class _SubOptions:
    history: int
    conflation: int
    #: field deltas (docs/protocol.md 5.1.2): the client merges them into full field sets
    delta: bool = False


# --- the state machine ----------------------------------------------------------------------


class ClientProtocol:
    """Everything the client decides, as a pure state machine (see the module docstring)."""

    def __init__(
        self,
        pool: ServerPool,
        backoff: Backoff,
        rng: random.Random,
        token: str | None = None,
        max_recoveries: int = 2,
        client_id: str | None = None,
        *,
        reports: bool = True,
        report_interval: float = REPORT_INTERVAL,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < report_interval <= 3600:
            raise ValueError(f"report_interval must be in (0, 3600] seconds, got {report_interval}")
        self.state = State.IDLE
        self.token = token
        self.client_id = client_id  # sent with every subscription (presence lists it)
        self.server: ServerAddress | None = None
        self.welcome: Welcome | None = None
        self.last_failure: str | None = None
        self._pool, self._backoff, self._rng = pool, backoff, rng
        self._tracker = RecoveryTracker(max_recoveries)
        self._subscriptions: dict[str, _SubOptions] = {}
        # delta subscriptions: every field received so far with its latest value, per subject
        self._fields: dict[str, dict[str, str]] = {}
        self._resyncing: set[str] = set()
        self._sub_requests: dict[int, set[str]] = {}
        self._publishes: set[int] = set()
        self._tokens: dict[int, str] = {}
        self._presences: set[int] = set()
        self._ids: Iterator[int] = itertools.count(1)
        self._last_rx = self._last_tx = 0.0
        # delivery reports (client/delivery.py): clock pings in flight (id -> t0, wall us)
        self.reports = reports
        self.delivery = DeliveryReporter()
        self._report_interval = report_interval
        self._wall = wall_clock
        self._clock_pings: dict[int, float] = {}
        self._pings_sent = 0
        self._next_ping = self._next_report = self._period_start = math.inf

    # --- state ----------------------------------------------------------------------------------

    def _fire(self, event: Event) -> None:
        target = TRANSITIONS.get((self.state, event))
        if target is None:
            raise StateError(f"event {event} is not allowed in state {self.state}")
        self.state = target

    @property
    def subjects(self) -> list[str]:
        return list(self._subscriptions)

    def position(self, subject: str) -> Position | None:
        return self._tracker.position(subject)

    def url(self) -> str:
        """The URL to open for the current attempt (after ``start`` / ``backoff_elapsed``)."""
        if self.server is None or self.state is not State.CONNECTING:
            raise StateError(f"no connection attempt in state {self.state}")
        return self.server.url(self.token)

    # --- connection lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """The application called ``connect()``: choose a server to open."""
        self._fire(Event.START)
        self.server = self._pool.choose()

    def backoff_elapsed(self) -> None:
        """The :class:`Reconnect` delay is over: choose the next server to open."""
        self._fire(Event.RETRY)
        self.server = self._pool.choose()

    def welcome_received(self, welcome: Welcome, now: float) -> list[ClientAction]:
        """The connection is up: report it and renew every subscription."""
        self._fire(Event.WELCOME)
        self.welcome = welcome
        self._last_rx = self._last_tx = now
        self._pool.reset()
        self._tracker.cancel_recoveries()
        self._resyncing.clear()
        server = str(self.server)
        log.info(
            "pushgrid: connected to %s (%s, session %s)", server, welcome.server, welcome.session
        )
        items = [self._resubscribe_item(name, o) for name, o in self._subscriptions.items()]
        up = Notify(StatusEvent(Status.SERVER_UP, server=server, detail=welcome.server))
        return [up, *self._subscribe_frames(items), *self._start_reports(now)]

    def connection_lost(self, ended: Ended) -> list[ClientAction]:
        """The connection ended (or could not open): fail what waits, then retry or stop."""
        if self.state is State.CLOSED:
            return []
        server = self.server
        if server is None:
            raise StateError(f"connection_lost in state {self.state} without a server")
        actions = self._drop_requests("connection lost before the server answered")
        self.last_failure = f"{server}: {ended.detail}"
        if ended.rule.avoid_server:
            self._pool.mark_failed(server)
        if not ended.rule.retry:
            self._fire(Event.REFUSED)
            actions.append(Notify(_down_event(server, ended, None)))
            return [*actions, *self._stop_actions(_refused_event(server, ended))]
        self._fire(Event.LOST)
        if ended.up_for >= self._backoff.policy.stable_after:
            self._backoff.reset()
        delay = 0.0 if ended.rule.immediate else self._backoff.next_delay()
        log.info("pushgrid: %s down (%s); retry in %.2f s", server, ended.detail, delay)
        return [*actions, Notify(_down_event(server, ended, delay)), Reconnect(delay)]

    def close(self) -> list[ClientAction]:
        """The application closed the client. Idempotent."""
        if self.state is State.CLOSED:
            return []
        self._fire(Event.CLOSE)
        return self._stop_actions(StatusEvent(Status.CLOSED, detail="closed by the application"))

    def _stop_actions(self, event: StatusEvent) -> list[ClientAction]:
        return [*self._drop_requests("the client is closed"), Stop(event)]

    def _drop_requests(self, reason: str) -> list[ClientAction]:
        """Answer every open publish ``failed`` and every token request ``denied``."""
        failed: list[ClientAction] = [
            Answer(i, PublishResult(PublishStatus.FAILED, "", reason=reason, outcome_unknown=True))
            for i in sorted(self._publishes)
        ]
        failed += [
            Answer(i, TokenResult("denied", i, reason="no answer: the connection was lost"))
            for i in sorted(self._tokens)
        ]
        failed += [
            Answer(i, Error("not_connected", "no answer: the connection was lost", i))
            for i in sorted(self._presences)
        ]
        self._publishes.clear()
        self._tokens.clear()
        self._presences.clear()
        self._sub_requests.clear()
        return failed

    # --- keepalive ------------------------------------------------------------------------------

    def frame_sent(self, now: float) -> None:
        self._last_tx = now

    def deadline(self) -> float | None:
        """When :meth:`timer_fired` must run next (None: no keepalive nor report, or not open)."""
        if self.state is not State.OPEN:
            return None
        keepalive = self._keepalive()
        due = min(self._next_ping, self._next_report)
        if keepalive is not None:
            due = min(due, self._last_rx + DEAD_FACTOR * keepalive, self._last_tx + keepalive)
        return None if due == math.inf else due

    def timer_fired(self, now: float) -> list[ClientAction]:
        """Ping after ``keepalive`` seconds of our own silence; abort after the dead deadline;
        clock pings and delivery reports when they are due."""
        keepalive = self._keepalive()
        if keepalive is not None and now >= self._last_rx + DEAD_FACTOR * keepalive:
            return [Abort(f"no frame from the server for {DEAD_FACTOR * keepalive:g} s")]
        actions: list[ClientAction] = []
        if self.state is not State.OPEN:
            return actions
        if now >= self._next_report:
            actions += self._report(now)
        if now >= self._next_ping:
            actions.append(self._clock_ping(now))
        elif keepalive is not None and now >= self._last_tx + keepalive:
            self._last_tx = now
            actions.append(Send(Ping()))
        return actions

    # --- delivery reports (client/delivery.py, docs/protocol.md 5.7) ---------------------------

    def _start_reports(self, now: float) -> list[ClientAction]:
        """A new connection (maybe to another server, another clock): estimate the offset
        anew; the report period goes on (what was measured before is still reported)."""
        if not self.reports:
            return []
        self.delivery.clock.clear()
        self._clock_pings.clear()
        self._pings_sent = 0
        if self._next_report == math.inf:
            self._next_report = now + self._report_interval
            self._period_start = now
        return [self._clock_ping(now)]

    def _clock_ping(self, now: float) -> Send:
        request_id = next(self._ids)
        if len(self._clock_pings) >= 2 * EARLY_CLOCK_PINGS:  # unanswered ones: forget the oldest
            del self._clock_pings[next(iter(self._clock_pings))]
        self._clock_pings[request_id] = self._wall() * 1e6
        self._pings_sent += 1
        early = self._pings_sent < EARLY_CLOCK_PINGS
        self._next_ping = now + (1.0 if early else self._report_interval)
        self._last_tx = now
        return Send(Ping(id=request_id))

    def _report(self, now: float) -> list[ClientAction]:
        report = self.delivery.report(min(now - self._period_start, 3600.0))
        self._period_start = now
        self._next_report = now + self._report_interval
        return [Send(report)] if report is not None else []

    def _pong(self, frame: Pong) -> None:
        t0 = self._clock_pings.pop(frame.id, None) if frame.id is not None else None
        if t0 is not None and isinstance(frame.time, int):
            self.delivery.clock.add(t0, frame.time, self._wall() * 1e6)

    def _keepalive(self) -> float | None:
        if self.state is not State.OPEN or self.welcome is None or self.welcome.keepalive <= 0:
            return None
        return self.welcome.keepalive

    # --- application requests -------------------------------------------------------------------

    def subscribe(
        self, names: list[str], history: int, conflation_ms: int, delta: bool = False
    ) -> list[ClientAction]:
        """Record the subscriptions (kept across reconnects); the frames to send if open."""
        options = _SubOptions(history, conflation_ms, delta)
        for name in names:
            self._subscriptions[name] = options
            self._resyncing.discard(name)
            if not delta:
                self._fields.pop(name, None)
        items = [SubscribeItem(name, None, history, conflation_ms, delta) for name in names]
        return self._subscribe_frames(items)

    def unsubscribe(self, names: list[str]) -> list[ClientAction]:
        for name in names:
            self._subscriptions.pop(name, None)
            self._fields.pop(name, None)
            self._tracker.forget(name)
            self._resyncing.discard(name)
        if self.state is not State.OPEN:
            return []
        return [
            Send(Unsubscribe(subjects=chunk, id=next(self._ids)))
            for chunk in _chunks(names, SUBJECTS_PER_FRAME)
        ]

    def retry_subscribe(self, subjects: Iterable[str]) -> list[ClientAction]:
        """The :class:`RetrySubscribe` delay is over: subscribe again from the positions held."""
        items = [
            self._resubscribe_item(name, self._subscriptions[name])
            for name in sorted(subjects)
            if name in self._subscriptions
        ]
        return self._subscribe_frames(items)

    def publish_request(
        self,
        subject: str,
        content: str,
        fields: dict[str, str],
        retained: bool,
        qos: QoS,
        msg_id: str | None = None,
    ) -> tuple[int, Publish] | PublishResult:
        """A publish frame and its request id, or TOO_LARGE without sending. Only when OPEN.

        ``msg_id``: the idempotency key (the same on every retry of one publish)."""
        if self.state is not State.OPEN:
            raise StateError(f"cannot publish in state {self.state}")
        request_id = next(self._ids)
        key = msgspec.UNSET if msg_id is None else msg_id
        frame = Publish(subject, content, fields, retained, qos, request_id, key)
        limit = self.welcome.max_message_size if self.welcome is not None else None
        size = publish_size(frame)
        if limit is not None and size > limit:
            reason = f"message of {size} bytes exceeds the server's max_message_size {limit}"
            return PublishResult(PublishStatus.TOO_LARGE, subject, reason=reason)
        self._publishes.add(request_id)
        return request_id, frame

    def token_request(self, token: str) -> tuple[int, Token] | None:
        """A token frame and its id; None when not open (the next connection uses ``token``)."""
        if self.state is not State.OPEN:
            self.token = token
            return None
        request_id = next(self._ids)
        self._tokens[request_id] = token
        return request_id, Token(token, request_id)

    def presence_request(self, subject: str) -> tuple[int, PresenceQuery]:
        """A presence frame and its id (docs/protocol.md 5.6). Only when OPEN."""
        if self.state is not State.OPEN:
            raise StateError(f"cannot ask presence in state {self.state}")
        request_id = next(self._ids)
        self._presences.add(request_id)
        return request_id, PresenceQuery(subject, request_id)

    def forget_request(self, request_id: int) -> None:
        """The application stopped waiting for ``request_id``: a late answer is dropped."""
        self._publishes.discard(request_id)
        self._tokens.pop(request_id, None)
        self._presences.discard(request_id)

    # --- frames from the server -----------------------------------------------------------------

    def data_received(self, data: str | bytes, now: float) -> list[ClientAction]:
        """One WebSocket text frame: a server frame, or a batch (a JSON array of them)."""
        self._last_rx = now
        try:
            decoded = _decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("pushgrid: ignoring an unreadable frame: %s", exc)
            return []
        actions: list[ClientAction] = []
        for frame in decoded if isinstance(decoded, list) else (decoded,):
            actions += self._frame(frame)
        return actions

    def _frame(self, frame: ServerFrame) -> list[ClientAction]:
        if isinstance(frame, MessageFrame):
            return self._message(frame)
        if isinstance(frame, Subscribed):
            return self._subscribed(frame)
        if isinstance(frame, PublishResultFrame):
            return self._answer(frame.id, _publish_result(frame))
        if isinstance(frame, Error):
            return self._error(frame)
        if isinstance(frame, TokenResult):
            return self._token_result(frame)
        if isinstance(frame, PresenceAnswer):
            return self._presence_answer(frame.id, frame)
        if isinstance(frame, Pong):
            self._pong(frame)
        elif isinstance(frame, Welcome):
            self.welcome = frame
        elif not isinstance(frame, Keepalive | Unsubscribed):  # pragma: no cover
            log.debug("pushgrid: ignoring %s", type(frame).__name__)
        return []

    def _message(self, frame: MessageFrame) -> list[ClientAction]:
        if frame.subject not in self._subscriptions:
            return []  # unsubscribed while in flight
        decision = self._tracker.on_message(frame)
        micros = self._measure(frame, decision.action, decision.reason) if self.reports else None
        if decision.action is Action.DELIVER:
            latency = micros / 1e6 if micros is not None else None
            if self._subscriptions[frame.subject].delta:
                return [Deliver(_message(frame, self._merged(frame), latency))]
            return [Deliver(_message(frame, latency=latency))]
        if decision.action is Action.DROP:
            log.debug("pushgrid: %s seq %d dropped (%s)", frame.subject, frame.seq, decision.reason)
            return []
        options = self._subscriptions[frame.subject]
        log.info("pushgrid: %s: %s -> %s", frame.subject, decision.reason, decision.action)
        if decision.action is Action.RECOVER:
            item = SubscribeItem(
                frame.subject, decision.recover, 0, options.conflation, options.delta
            )
        else:
            self._resyncing.add(frame.subject)
            item = SubscribeItem(frame.subject, None, 0, options.conflation, options.delta)
        return self._subscribe_frames([item])

    def _measure(self, frame: MessageFrame, action: Action, reason: str) -> float | None:
        """What one message says of the delivery: its latency (returned, microseconds), a
        duplicate, a gap, a resync."""
        subject = frame.subject
        micros = None
        if action is Action.DELIVER:
            if frame.kind == "update" and frame.ingress:
                micros = self.delivery.latency(subject, frame.ingress, self._wall() * 1e6)
            if reason == "new epoch adopted":
                self.delivery.count(subject, "resyncs")
        elif action is Action.DROP:
            if reason.startswith("duplicate"):
                self.delivery.count(subject, "duplicates")
        else:  # a gap: recover it, or resync when recovering failed repeatedly
            self.delivery.count(subject, "gaps")
            if action is Action.RESYNC:
                self.delivery.count(subject, "resyncs")
        return micros

    def _count_recovery(self, frame: Subscribed) -> None:
        if not self.reports or frame.status != "allow":
            return
        if frame.recovery in ("recovered", "up_to_date"):
            self.delivery.count(frame.subject, "recovered")
        elif frame.recovery in ("new_epoch", "failed"):
            self.delivery.count(frame.subject, "recovery_failed")
            self.delivery.count(frame.subject, "resyncs")

    def _subscribed(self, frame: Subscribed) -> list[ClientAction]:
        if frame.id is not None and frame.id in self._sub_requests:
            waiting = self._sub_requests[frame.id]
            waiting.discard(frame.subject)
            if not waiting:
                del self._sub_requests[frame.id]
        if frame.subject not in self._subscriptions:
            return []
        self._tracker.on_subscribed(frame)
        self._count_recovery(frame)
        if frame.status != "allow":
            self._subscriptions.pop(frame.subject, None)
            status, detail = Status.SUBSCRIBE_DENY, frame.reason or "denied"
        elif frame.recovery in ("recovered", "up_to_date"):
            status, detail = Status.DATA_SYNC, frame.recovery
        elif frame.recovery in ("new_epoch", "failed"):
            status, detail = Status.DATA_RESYNC, frame.recovery
        elif frame.subject in self._resyncing:
            status, detail = Status.DATA_RESYNC, "gap_resync"
        else:
            status, detail = Status.SUBSCRIBE_ALLOW, None
        self._resyncing.discard(frame.subject)
        return [self._subject_event(status, frame.subject, detail)]

    def _error(self, frame: Error) -> list[ClientAction]:
        text = f"{frame.code}: {frame.message}"
        if frame.id is not None and frame.id in self._publishes:
            return self._answer(frame.id, _error_result(frame))
        if frame.id is not None and frame.id in self._presences:
            return self._presence_answer(frame.id, frame)
        if frame.id is None or frame.id not in self._sub_requests:
            log.warning("pushgrid: server error %s", text)
            return [Notify(StatusEvent(Status.ERROR, detail=text))]
        subjects = self._sub_requests.pop(frame.id)
        if frame.code == "engine_unavailable":  # a cluster without quorum: try again
            # the subscription is kept while the cluster cannot serve it (docs/protocol.md 8.1)
            events = [self._subject_event(Status.ERROR, s, text) for s in sorted(subjects)]
            return [RetrySubscribe(self._rng.uniform(0.5, 1.5), frozenset(subjects)), *events]
        return [self._refused(subject, frame.code, text) for subject in sorted(subjects)]

    def _refused(self, subject: str, code: str, text: str) -> ClientAction:
        """A subscribe request refused: a gap recovery keeps the subscription (the next gap
        retries), anything else drops it."""
        if self._tracker.recovering(subject) and code != "denied":
            self._tracker.cancel_recoveries([subject])
            return self._subject_event(Status.ERROR, subject, text)
        self._subscriptions.pop(subject, None)
        self._tracker.forget(subject)
        self._resyncing.discard(subject)
        return self._subject_event(Status.SUBSCRIBE_DENY, subject, text)

    def _token_result(self, frame: TokenResult) -> list[ClientAction]:
        actions: list[ClientAction] = []
        for subject in frame.revoked or []:
            if self._subscriptions.pop(subject, None) is not None:
                self._tracker.forget(subject)
                actions.append(self._subject_event(Status.SUBSCRIBE_DENY, subject, "revoked"))
        if frame.id is not None and frame.id in self._tokens:
            token = self._tokens.pop(frame.id)
            if frame.result == "ok":  # a refused token leaves the current one in force
                self.token = token
            actions.append(Answer(frame.id, frame))
        return actions

    def _presence_answer(
        self, request_id: int | None, result: PresenceAnswer | Error
    ) -> list[ClientAction]:
        if request_id is None or request_id not in self._presences:
            return []
        self._presences.discard(request_id)
        return [Answer(request_id, result)]

    def _answer(self, request_id: int | None, result: PublishResult) -> list[ClientAction]:
        if request_id is None or request_id not in self._publishes:
            return []
        self._publishes.discard(request_id)
        return [Answer(request_id, result)]

    # --- helpers --------------------------------------------------------------------------------

    def _merged(self, frame: MessageFrame) -> dict[str, str]:
        """A delta subscription's full field set after ``frame``: a snapshot replaces what was
        held, anything else (a delta, a whole update, recovered history) is merged into it."""
        held = self._fields.get(frame.subject)
        if held is None or frame.kind == "snapshot":
            held = self._fields[frame.subject] = {}
        held.update(frame.fields)
        return dict(held)  # the application's copy

    def _subject_event(self, status: Status, subject: str, detail: str | None) -> Notify:
        server = str(self.server) if self.server is not None else None
        return Notify(StatusEvent(status, server=server, subject=subject, detail=detail))

    def _resubscribe_item(self, subject: str, options: _SubOptions) -> SubscribeItem:
        position = self._tracker.position(subject)
        if position is not None:
            return SubscribeItem(subject, position, 0, options.conflation, options.delta)
        return SubscribeItem(subject, None, options.history, options.conflation, options.delta)

    def _subscribe_frames(self, items: list[SubscribeItem]) -> list[ClientAction]:
        """Subscribe frames of at most SUBJECTS_PER_FRAME items; none unless open (the
        subscriptions are renewed by the next welcome)."""
        if self.state is not State.OPEN:
            return []
        if self.client_id is not None:
            items = [msgspec.structs.replace(item, client_id=self.client_id) for item in items]
        frames: list[ClientAction] = []
        for chunk in _chunks(items, SUBJECTS_PER_FRAME):
            request_id = next(self._ids)
            self._sub_requests[request_id] = {item.subject for item in chunk}
            frames.append(Send(Subscribe(subjects=chunk, id=request_id)))
        return frames


def decode_welcome(data: str | bytes) -> Welcome:
    """The first frame of a connection, which must be a welcome (ValueError otherwise)."""
    try:
        frame = _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"invalid first frame: {exc}") from None
    if not isinstance(frame, Welcome):
        raise ValueError(f"expected a welcome frame, got {type(frame).__name__}")
    return frame


def check_subject(subject: str) -> None:
    try:
        validate_subject(subject)
    except InvalidSubject as invalid:
        raise ValueError(invalid.message) from None


def subject_list(subjects: list[str] | str) -> list[str]:
    """Validated, de-duplicated subject names (ValueError for an empty list or a bad name)."""
    names = [subjects] if isinstance(subjects, str) else list(subjects)
    if not names:
        raise ValueError("at least one subject is required")
    for name in names:
        check_subject(name)
    return list(dict.fromkeys(names))


def _chunks(items: list[_T], size: int) -> Iterable[list[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _message(
    frame: MessageFrame, fields: dict[str, str] | None = None, latency: float | None = None
) -> Message:
    return Message(
        subject=frame.subject,
        content=frame.content,
        fields=frame.fields if fields is None else fields,
        type=MessageType(frame.kind),
        epoch=frame.epoch,
        seq=frame.seq,
        qos=frame.qos,
        retained=frame.retained,
        ts=frame.ts,
        conflated=bool(getattr(frame, "conflated", False)),
        latency=latency,
    )


def _down_event(server: ServerAddress, ended: Ended, retry_in: float | None) -> StatusEvent:
    return StatusEvent(
        Status.SERVER_DOWN,
        server=str(server),
        detail=ended.detail,
        close_code=ended.code,
        close_reason=ended.reason,
        retry_in=retry_in,
    )


def _refused_event(server: ServerAddress, ended: Ended) -> StatusEvent:
    return StatusEvent(
        Status.CLOSED,
        server=str(server),
        detail="the server asked the client not to retry",
        close_code=ended.code,
        close_reason=ended.reason,
    )


def _publish_result(frame: PublishResultFrame) -> PublishResult:
    return PublishResult(
        PublishStatus(frame.result),
        frame.subject,
        frame.epoch,
        frame.seq,
        frame.reason,
        duplicate=frame.duplicate is True,
    )


def _error_result(frame: Error) -> PublishResult:
    status = {
        "message_too_large": PublishStatus.TOO_LARGE,
        "denied": PublishStatus.DENIED,
    }.get(frame.code, PublishStatus.FAILED)
    return PublishResult(status, "", reason=f"{frame.code}: {frame.message}")
