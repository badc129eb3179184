"""The asyncio pushgrid client: one WebSocket connection, kept alive across failures.

Guarantees:

- Reconnects automatically after any failure, choosing servers by weight and skipping failed ones
  (:mod:`client.servers`), waiting as :mod:`client.backoff` says, and reacting to close codes as
  :mod:`client.closecodes` says (1002 and 4005 stop the client for good).
- A connection is declared dead after ``1.4 x keepalive`` (the welcome's interval) without any
  frame from the server. The client sends a ``ping`` after ``keepalive`` seconds of silence of its
  own so the server does not time it out.
- After a reconnect every subscription is renewed; subjects with a known position ask for
  recovery from their last ``(epoch, seq)``. Duplicates are dropped and gaps trigger a resubscribe
  with recovery (:mod:`client.recovery`), so guaranteed messages reach the application at most
  once and in ``seq`` order within an epoch.
- Messages go to ``on_message`` (sync or async callable) or, without a callback, to the
  :meth:`PushgridClient.messages` iterator, both through a bounded queue: a slow consumer slows
  the reading of the socket (the server may then close with 4001 and the client recovers).
- Callbacks run on a dispatcher task of their own, one at a time, in event order (a status event
  such as DATA_RESYNC comes before the snapshot that follows it); an exception in a callback is
  logged and ignored. Callbacks may await client methods (``publish`` included). Messages and
  events queue up to ``queue_size`` items ahead of a slow callback, then the socket is read no
  faster than the callbacks run.
- The client is two layers: :class:`client.protocol.ClientProtocol` (sans-I/O: every decision,
  states as an enum with a transition table) and this module, the *connection*, which only moves
  bytes, runs timers and executes the protocol's actions (docs/adr/017-client-state-machine.md).
- ``publish`` never raises for network reasons: it returns a :class:`PublishResult`. A publish whose
  connection is lost before the server's answer returns ``failed`` (it may or may not have been
  applied); it is not sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Literal, TypeVar

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from pushgrid.protocol.exceptions import ClientError
from pushgrid.protocol.frames import (
    Error,
    Position,
    PresenceAnswer,
    TokenResult,
    Welcome,
    client_id_error,
    msg_id_error,
)

from .backoff import Backoff, BackoffPolicy
from .closecodes import BACKOFF
from .models import (
    Message,
    Presence,
    PresenceEvent,
    PresentClient,
    PublishResult,
    PublishStatus,
    QoS,
    StatusEvent,
)
from .protocol import (
    REPORT_INTERVAL,
    Abort,
    Answer,
    ClientAction,
    ClientFrame,
    ClientProtocol,
    Deliver,
    Ended,
    Notify,
    Reconnect,
    RetrySubscribe,
    Send,
    State,
    Stop,
    check_subject,
    decode_welcome,
    subject_list,
)
from .servers import ServerAddress, ServerPool, parse_servers

__all__ = [
    "ConnectFailed",
    "MessageCallback",
    "PresenceCallback",
    "PresenceRefused",
    "PushgridClient",
    "StatusCallback",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

MessageCallback = Callable[[Message], Awaitable[None] | None]
StatusCallback = Callable[[StatusEvent], Awaitable[None] | None]
PresenceCallback = Callable[[PresenceEvent], Awaitable[None] | None]

PRESENCE_SUBJECT = "/pushgrid/presence"

DEFAULT_MAX_FRAME = 16 * 1024 * 1024

_encoder = msgspec.json.Encoder()


class ConnectFailed(ClientError, ConnectionError):
    """The client stopped for good before it could connect (a do-not-retry close code)."""

    code = "connect_failed"


class PresenceRefused(ClientError):
    """The server refused a presence request; ``reason_code`` is its error code
    (``presence_disabled``, ``denied``, ``invalid_subject``) or ``not_connected``."""

    code = "presence_refused"

    def __init__(self, reason_code: str, message: str) -> None:
        super().__init__(f"{reason_code}: {message}")
        self.reason_code = reason_code


class _Stop:
    """Marks the end of the :meth:`PushgridClient.messages` stream."""


_STOP = _Stop()
_Dispatched = Message | StatusEvent | PresenceEvent | _Stop


class _Dead(Exception):
    """No frame from the server within the keepalive deadline."""


class _BadWelcome(Exception):
    """The server did not start the session with a valid welcome frame."""


class PushgridClient:
    """Asyncio client of a pushgrid server cluster. Create, ``await connect()``, use, ``close()``.

    ``servers``: a list of ``"[weight ]host[:port]"`` entries (or ``ws://`` / ``wss://`` URLs), or
    one comma-separated string of them. ``token`` is sent as the ``token`` query parameter.
    ``compression``: offer permessage-deflate (the server agrees unless it is configured off;
    docs/protocol.md 1.1). Raises ValueError for an invalid server list.
    ``reports``: measure delivery latency and loss and report them to the server every
    ``report_interval`` seconds (docs/protocol.md 5.7; on by default); ``wall_clock`` is the
    clock the latencies are read on (seconds since the Unix epoch; its offset to the server's
    is estimated from pings, so a wrong clock is corrected).
    """

    def __init__(
        self,
        servers: list[str] | str,
        token: str | None = None,
        on_message: MessageCallback | None = None,
        on_status: StatusCallback | None = None,
        *,
        backoff: BackoffPolicy | None = None,
        rng: random.Random | None = None,
        open_timeout: float = 10.0,
        close_timeout: float = 5.0,
        max_frame_size: int | None = DEFAULT_MAX_FRAME,
        queue_size: int = 10_000,
        max_recoveries: int = 2,
        proxy: str | Literal[True] | None = True,
        compression: bool = True,
        client_id: str | None = None,
        on_presence: PresenceCallback | None = None,
        reports: bool = True,
        report_interval: float = REPORT_INTERVAL,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        invalid = client_id_error(client_id) if client_id is not None else None
        if invalid is not None:
            raise ValueError(invalid)
        rng = rng if rng is not None else random.Random()
        self._protocol = ClientProtocol(
            ServerPool(parse_servers(servers), rng),
            Backoff(backoff if backoff is not None else BackoffPolicy(), rng),
            rng,
            token,
            max_recoveries,
            client_id,
            reports=reports,
            report_interval=report_interval,
            wall_clock=wall_clock,
        )
        self._on_presence = on_presence
        self._on_message = on_message
        self._on_status = on_status
        self._open_timeout = open_timeout
        self._close_timeout = close_timeout
        self._max_frame_size = max_frame_size
        self._proxy = proxy
        self._compression: Literal["deflate"] | None = "deflate" if compression else None
        self._pending: dict[int, asyncio.Future[PublishResult]] = {}
        self._token_answers: dict[int, asyncio.Future[TokenResult]] = {}
        self._presence_answers: dict[int, asyncio.Future[PresenceAnswer | Error]] = {}
        self._queue: asyncio.Queue[Message | _Stop] = asyncio.Queue(maxsize=queue_size)
        self._dispatch: asyncio.Queue[_Dispatched] = asyncio.Queue(maxsize=queue_size)
        self._ws: ClientConnection | None = None
        self._ready = asyncio.Event()  # set while connected, and for good once stopped
        self._run_task: asyncio.Task[None] | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._dispatch_closed = False
        self._closing = False
        self._stopped = False
        self._stop_event: StatusEvent | None = None
        self._retries: set[asyncio.Task[None]] = set()

    # --- public API ---------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while a welcomed connection is open."""
        return self._ws is not None and self._protocol.state is State.OPEN

    @property
    def server(self) -> ServerAddress | None:
        """The server of the current connection, or None."""
        return self._protocol.server if self.connected else None

    @property
    def welcome(self) -> Welcome | None:
        """The welcome frame of the current (or last) connection."""
        return self._protocol.welcome

    @property
    def subjects(self) -> list[str]:
        """Subjects currently subscribed (renewed on each reconnect)."""
        return self._protocol.subjects

    @property
    def state(self) -> State:
        """The connection state (:class:`client.protocol.State`)."""
        return self._protocol.state

    def position(self, subject: str) -> Position | None:
        """The last ``(epoch, seq)`` received for ``subject``, or None."""
        return self._protocol.position(subject)

    @property
    def clock_offset(self) -> float | None:
        """The estimated offset of the server's clock to ``wall_clock`` in seconds (server
        minus client), or None before the first pong (or with reports off)."""
        offset = self._protocol.delivery.clock.offset
        return offset / 1e6 if offset is not None else None

    async def connect(
        self,
        wait: bool = True,
        timeout: float | None = None,  # noqa: ASYNC109 - documented API, see below
    ) -> None:
        """Start the connection loop; with ``wait``, return once connected.

        Raises ConnectFailed if the client stops for good first (close code 1002 / 4005),
        TimeoutError after ``timeout`` seconds (the client keeps trying in the background until
        :meth:`close`), RuntimeError if the client was closed. Calling it again is harmless.
        """
        self._check_open()
        if self._run_task is None:
            if any(c is not None for c in (self._on_message, self._on_status, self._on_presence)):
                self._dispatcher = asyncio.create_task(
                    self._dispatch_loop(), name="pushgrid-callbacks"
                )
            self._protocol.start()
            self._run_task = asyncio.create_task(self._run(), name="pushgrid-client")
        if not wait:
            return
        async with asyncio.timeout(timeout):
            await self._ready.wait()
        if self._stopped:
            event = self._stop_event
            detail = f": {event.close_code} {event.close_reason}" if event is not None else ""
            raise ConnectFailed(f"the client stopped before connecting{detail}")

    async def close(self) -> None:
        """Close the connection (code 1000) and stop for good. Idempotent.

        Pending publishes return ``failed``, the :meth:`messages` iterator ends after the
        messages already received, and ``on_status`` gets a CLOSED event (unless the client had
        already stopped) after the events already queued. May be called from a callback; then
        events still queued behind that callback are discarded.
        """
        for retry in list(self._retries):
            retry.cancel()
        if self._closing:
            return
        self._closing = True
        actions = self._protocol.close()  # CLOSED at once: the reader stops deciding
        task = self._run_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        await self._apply(actions)
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher is not asyncio.current_task():
            done, _ = await asyncio.wait([dispatcher], timeout=self._close_timeout)
            if not done:
                dispatcher.cancel()

    async def __aenter__(self) -> PushgridClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def subscribe(
        self,
        subjects: list[str] | str,
        history: int = 0,
        conflation_ms: int = 0,
        *,
        delta: bool = False,
    ) -> None:
        """Subscribe to ``subjects`` (kept across reconnects until :meth:`unsubscribe`).

        Returns once the request is sent, or at once while disconnected (it is sent on connect).
        The outcome arrives per subject as a status event: SUBSCRIBE_ALLOW or SUBSCRIBE_DENY.
        ``history`` = N asks for the N last cached messages (type historical) instead of the
        snapshot; ``conflation_ms`` asks the server to conflate updates. ``delta`` asks the server
        for the changed fields only (docs/protocol.md 5.1.2): the client merges them, and every
        message handed to the application still holds the subject's full field set. Raises
        ValueError for an invalid subject or option, RuntimeError if the client is closed.
        """
        names = subject_list(subjects)
        if history < 0:
            raise ValueError(f"history must be >= 0, got {history}")
        if conflation_ms < 0:
            raise ValueError(f"conflation_ms must be >= 0, got {conflation_ms}")
        self._check_open()
        await self._apply(self._protocol.subscribe(names, history, conflation_ms, delta))

    async def unsubscribe(self, subjects: list[str] | str) -> None:
        """Stop receiving ``subjects``; messages of them still in flight are dropped."""
        names = subject_list(subjects)
        self._check_open()
        await self._apply(self._protocol.unsubscribe(names))

    async def update_token(self, token: str, wait: float = 10.0) -> TokenResult:
        """Replace the entitlement token on the live connection, before the current one
        expires (docs/protocol.md 5.5); reconnections use the new token from now on.

        Subscriptions the new token no longer allows are dropped (SUBSCRIBE_DENY, detail
        ``revoked``). A refused token (``denied``) changes nothing. Without a connection the
        token simply waits for the next one.
        """
        self._check_open()
        request = self._protocol.token_request(token)
        if request is None:
            return TokenResult("ok", reason="not connected: the next connection uses the token")
        request_id, frame = request
        answer: asyncio.Future[TokenResult] = asyncio.get_running_loop().create_future()
        self._token_answers[request_id] = answer
        try:
            await self._send(frame)  # a lost connection answers through the protocol
            return await asyncio.wait_for(answer, wait)
        except TimeoutError:
            return TokenResult("denied", request_id, reason="no answer: the connection was lost")
        finally:
            self._token_answers.pop(request_id, None)
            self._protocol.forget_request(request_id)

    async def presence(self, subject: str, wait: float = 10.0) -> Presence:
        """Who follows ``subject`` in the whole cluster (docs/occupancy.md, "Presence").

        Raises PresenceRefused with the server's code: ``presence_disabled`` (the subject
        matches no ``Occupancy.PresencePatterns``), ``denied`` (not entitled to subscribe to
        it), ``invalid_subject``, ``not_connected``; TimeoutError after ``wait`` seconds.
        """
        self._check_open()
        if not self.connected:
            raise PresenceRefused("not_connected", "the client is not connected")
        request_id, frame = self._protocol.presence_request(subject)
        answer: asyncio.Future[PresenceAnswer | Error] = asyncio.get_running_loop().create_future()
        self._presence_answers[request_id] = answer
        try:
            await self._send(frame)
            result = await asyncio.wait_for(answer, wait)
        finally:
            self._presence_answers.pop(request_id, None)
            self._protocol.forget_request(request_id)
        if isinstance(result, Error):
            raise PresenceRefused(result.code, result.message)
        clients = [PresentClient(c.session, c.client_id, c.member) for c in result.clients]
        return Presence(result.subject, result.subscribers, clients, result.truncated)

    async def follow_presence(self) -> None:
        """Receive the cluster's join/leave events (the meta-subject ``/pushgrid/presence``)
        through ``on_presence``; without it they arrive as messages of that subject."""
        await self.subscribe(PRESENCE_SUBJECT)

    async def publish(
        self,
        subject: str,
        content: str,
        fields: dict[str, str] | None = None,
        retained: bool = True,
        qos: QoS = "guaranteed",
        timeout: float = 10.0,  # noqa: ASYNC109 - also bounds waiting for a connection
        msg_id: str | None = None,
    ) -> PublishResult:
        """Publish one message and return the server's answer within ``timeout`` seconds.

        While disconnected, waits for a connection until the timeout. Every publish carries an
        idempotency key, ``msg_id`` (generated when not given; 1 to 128 visible ASCII
        characters): when the connection is lost after the publish was sent, it is sent again
        with the same ``msg_id`` on the next connection, and the server stores it at most once
        (an OK answer to a repeat has ``duplicate`` set and the original's epoch and seq). To
        retry yourself after FAILED, publish again with ``result.msg_id``.

        Returns TOO_LARGE without sending when content + fields exceed the server's
        ``max_message_size``; FAILED on timeout or once the client is closed. Raises
        ValueError for an invalid subject, qos, fields or msg_id.
        """
        frame_fields = _publish_fields(subject, qos, fields)
        key = _publish_msg_id(msg_id)
        sent: list[int] = []  # the request ids of the tries that reached the socket
        try:
            async with asyncio.timeout(timeout):
                result = None
                while result is None:
                    result = await self._publish_once(
                        sent, subject, content, frame_fields, retained, qos, key
                    )
                return replace(result, subject=result.subject or subject, msg_id=key)
        except TimeoutError:
            if not sent:
                failure = self._protocol.last_failure
                last = f" (last failure: {failure})" if failure else ""
                return _failed(subject, f"not connected within {timeout:g} s{last}", key)
            unknown = _failed(subject, f"no answer within {timeout:g} s", key)
            return replace(unknown, outcome_unknown=True)
        finally:
            for request_id in sent:
                self._pending.pop(request_id, None)
                self._protocol.forget_request(request_id)

    async def messages(self) -> AsyncIterator[Message]:
        """Iterate over delivered messages until the client stops.

        Only for clients created without ``on_message`` (RuntimeError otherwise). Several
        iterators share one stream: each message goes to exactly one of them.
        """
        if self._on_message is not None:
            raise RuntimeError("messages() is not available when on_message is set")
        while True:
            if self._stopped and self._queue.empty():
                return
            item = await self._queue.get()
            if isinstance(item, _Stop):
                return
            yield item

    # --- publishing -----------------------------------------------------------------------------

    async def _publish_once(
        self,
        sent: list[int],
        subject: str,
        content: str,
        fields: dict[str, str],
        retained: bool,
        qos: QoS,
        msg_id: str,
    ) -> PublishResult | None:
        """One try: wait for a connection, send, wait for the answer. None: retry (not sent,
        or sent and the connection was lost before the answer: the same msg_id goes again)."""
        await self._ready.wait()
        if self._stopped or self._closing:
            return _failed(subject, "the client is closed")
        ws = self._ws
        if ws is None or self._protocol.state is not State.OPEN:  # between a loss and a welcome
            self._ready.clear()
            return None
        request = self._protocol.publish_request(subject, content, fields, retained, qos, msg_id)
        if isinstance(request, PublishResult):
            return request
        request_id, frame = request
        future: asyncio.Future[PublishResult] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send_on(ws, frame)
        except ConnectionClosed:  # not sent: wait for the next connection
            self._pending.pop(request_id, None)
            self._protocol.forget_request(request_id)
            if self._ws is ws and not self._stopped:
                self._ready.clear()
            return None
        sent.append(request_id)
        result = await future
        if result.outcome_unknown and not (self._stopped or self._closing):
            return None  # the connection was lost: resend with the same msg_id
        return result

    # --- connection loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        """Open connections one after another until the protocol says stop."""
        while True:
            actions = self._protocol.connection_lost(await self._session())
            await self._apply(actions)
            delays = [action.delay for action in actions if isinstance(action, Reconnect)]
            if not delays:
                return
            await asyncio.sleep(delays[0])  # close() cancels the task, sleep included
            self._protocol.backoff_elapsed()

    async def _session(self) -> Ended:
        """One connection: open, welcome, read until it ends; how it ended."""
        try:
            ws = await connect(
                self._protocol.url(),
                compression=self._compression,
                max_size=self._max_frame_size,
                open_timeout=self._open_timeout,
                close_timeout=self._close_timeout,
                ping_interval=None,
                proxy=self._proxy,
            )
        except (OSError, TimeoutError, WebSocketException) as exc:
            return Ended(f"cannot connect: {_describe(exc)}")
        try:
            return await self._serve(ws)
        finally:
            self._ws = None
            if not self._stopped:
                self._ready.clear()
            if self._closing:
                with contextlib.suppress(Exception):
                    await ws.close(1000, "client closed")
            else:
                await _abort(ws)

    async def _serve(self, ws: ClientConnection) -> Ended:
        loop = asyncio.get_running_loop()
        up_at: float | None = None

        def up_for() -> float:
            return loop.time() - up_at if up_at is not None else 0.0

        try:
            welcome = await self._await_welcome(ws)
            up_at = loop.time()
            self._ws = ws
            await self._apply(self._protocol.welcome_received(welcome, up_at))
            self._ready.set()
            await self._read_loop(ws)
            return Ended("connection ended", up_for())
        except ConnectionClosed as exc:
            if exc.rcvd is None:
                return Ended("connection lost", up_for())
            return Ended.closed(exc.rcvd.code, exc.rcvd.reason, up_for())
        except (_Dead, _BadWelcome) as exc:
            return Ended(str(exc), up_for())
        except Exception as exc:  # a bug in the client: log it, keep the client alive
            log.exception(
                "pushgrid: unexpected error in the connection to %s", self._protocol.server
            )
            return Ended(f"client error: {_describe(exc)}", up_for(), rule=BACKOFF)

    async def _await_welcome(self, ws: ClientConnection) -> Welcome:
        try:
            async with asyncio.timeout(self._open_timeout):
                data = await ws.recv()
        except TimeoutError:
            raise _BadWelcome(f"no welcome within {self._open_timeout:g} s") from None
        try:
            return decode_welcome(data)
        except ValueError as exc:
            raise _BadWelcome(str(exc)) from None

    async def _read_loop(self, ws: ClientConnection) -> None:
        """Feed frames to the protocol; fire its timer when its deadline passes."""
        loop = asyncio.get_running_loop()
        while True:
            deadline = self._protocol.deadline()
            if deadline is not None and loop.time() >= deadline:
                await self._apply(self._protocol.timer_fired(loop.time()))
                continue
            try:
                async with asyncio.timeout_at(deadline):
                    data = await ws.recv()
            except TimeoutError:
                continue
            await self._apply(self._protocol.data_received(data, loop.time()))

    # --- actions --------------------------------------------------------------------------------

    async def _apply(self, actions: Sequence[ClientAction]) -> None:
        """Execute the protocol's actions in order (Reconnect is the run loop's own)."""
        for action in actions:
            if isinstance(action, Send):
                await self._send(action.frame)
            elif isinstance(action, Deliver):
                await self._deliver(action.message)
            elif isinstance(action, Notify):
                await self._notify_status(action.event)
            elif isinstance(action, Answer):
                self._answer(action)
            elif isinstance(action, RetrySubscribe):
                self._retry_later(action)
            elif isinstance(action, Abort):
                raise _Dead(action.detail)
            elif isinstance(action, Stop):
                await self._stop(action.event)

    async def _send(self, frame: ClientFrame) -> None:
        ws = self._ws
        if ws is None:
            return  # renewed or answered when the connection comes back
        with contextlib.suppress(ConnectionClosed):
            await self._send_on(ws, frame)

    async def _send_on(self, ws: ClientConnection, frame: ClientFrame) -> None:
        await ws.send(_encoder.encode(frame), text=True)
        self._protocol.frame_sent(asyncio.get_running_loop().time())

    def _answer(self, action: Answer) -> None:
        future: (
            asyncio.Future[PublishResult]
            | asyncio.Future[TokenResult]
            | asyncio.Future[PresenceAnswer | Error]
            | None
        )
        if isinstance(action.result, PublishResult):
            future = self._pending.pop(action.request_id, None)
        elif isinstance(action.result, PresenceAnswer | Error):
            future = self._presence_answers.pop(action.request_id, None)
        else:
            future = self._token_answers.pop(action.request_id, None)
        if future is not None and not future.done():
            future.set_result(action.result)  # type: ignore[arg-type]

    def _retry_later(self, action: RetrySubscribe) -> None:
        async def later() -> None:
            await asyncio.sleep(action.delay)
            await self._apply(self._protocol.retry_subscribe(action.subjects))

        task = asyncio.get_running_loop().create_task(later())
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    async def _deliver(self, message: Message) -> None:
        if self._on_presence is not None and message.subject == PRESENCE_SUBJECT:
            try:
                await self._dispatch.put(PresenceEvent.from_fields(message.fields))
            except ValueError as exc:
                log.warning("pushgrid: ignoring a presence message: %s", exc)
            return
        if self._on_message is None:
            await self._queue.put(message)
        else:
            await self._dispatch.put(message)

    async def _notify_status(self, event: StatusEvent) -> None:
        log.debug("pushgrid status: %s", event)
        if self._on_status is not None and self._dispatcher is not None:
            await self._dispatch.put(event)

    async def _dispatch_loop(self) -> None:
        """Run the callbacks, one at a time, in event order, off the reader task."""
        while not self._dispatch_closed:
            item = await self._dispatch.get()
            if isinstance(item, _Stop):
                return
            if isinstance(item, StatusEvent):
                if self._on_status is not None:
                    await _call(self._on_status, item, "on_status")
            elif isinstance(item, PresenceEvent):
                if self._on_presence is not None:
                    await _call(self._on_presence, item, "on_presence")
            elif self._on_message is not None:
                await _call(self._on_message, item, "on_message")

    async def _stop(self, event: StatusEvent) -> None:
        """Stop for good: wake waiters, end messages(), report ``event``."""
        self._stopped = True
        self._ready.set()
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(_STOP)
        self._stop_event = event
        log.debug("pushgrid status: %s", event)
        dispatcher = self._dispatcher
        if dispatcher is None or dispatcher is asyncio.current_task():
            # close() from a callback (or before connect): report now, drop what is queued
            self._dispatch_closed = True
            if self._on_status is not None:
                await _call(self._on_status, event, "on_status")
            return
        if self._on_status is not None:
            await self._dispatch.put(event)
        await self._dispatch.put(_STOP)

    def _check_open(self) -> None:
        if self._closing or self._stopped:
            raise RuntimeError("the client is closed")


async def _call(callback: Callable[[_T], Awaitable[None] | None], arg: _T, name: str) -> None:
    try:
        result = callback(arg)
        if inspect.isawaitable(result):
            await result
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("pushgrid: %s callback raised", name)


async def _abort(ws: ClientConnection) -> None:
    """Drop a connection that is dead or already closing without waiting for the peer."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(0.5):
            await ws.close()
    ws.transport.abort()


def _publish_fields(subject: str, qos: str, fields: dict[str, str] | None) -> dict[str, str]:
    """Validate a publish's arguments (ValueError); the fields to send."""
    check_subject(subject)
    if qos not in ("standard", "guaranteed"):
        raise ValueError(f"qos must be 'standard' or 'guaranteed', got {qos!r}")
    frame_fields = dict(fields or {})
    for name, value in frame_fields.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"field {name!r}: names and values must be strings")
    return frame_fields


def _publish_msg_id(msg_id: str | None) -> str:
    """The publish's idempotency key: ``msg_id`` when valid (else ValueError), or a new one."""
    if msg_id is None:
        return secrets.token_urlsafe(16)
    invalid = msg_id_error(msg_id)
    if invalid is not None:
        raise ValueError(invalid)
    return msg_id


def _failed(subject: str, reason: str, msg_id: str | None = None) -> PublishResult:
    return PublishResult(PublishStatus.FAILED, subject, reason=reason, msg_id=msg_id)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
