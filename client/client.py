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
- ``publish`` never raises for network reasons: it returns a :class:`PublishResult`. A publish whose
  connection is lost before the server's answer returns ``failed`` (it may or may not have been
  applied); it is not sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from server.errors import ClientError
from server.protocol.codec import publish_size
from server.protocol.frames import (
    Error,
    Keepalive,
    Ping,
    Pong,
    Position,
    Publish,
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
from server.protocol.frames import Message as MessageFrame
from server.protocol.frames import PublishResult as PublishResultFrame
from server.protocol.subjects import subject_error

from .backoff import Backoff, BackoffPolicy
from .closecodes import BACKOFF, OTHER_SERVER, ReconnectRule, rule_for_close
from .models import (
    Message,
    MessageType,
    PublishResult,
    PublishStatus,
    QoS,
    Status,
    StatusEvent,
)
from .recovery import Action, RecoveryTracker
from .servers import ServerAddress, ServerPool, parse_servers

__all__ = ["ConnectFailed", "MessageCallback", "PushgridClient", "StatusCallback"]

logger = logging.getLogger("pushgrid.client")

_T = TypeVar("_T")

MessageCallback = Callable[[Message], Awaitable[None] | None]
StatusCallback = Callable[[StatusEvent], Awaitable[None] | None]

DEAD_FACTOR = 1.4
SUBJECTS_PER_FRAME = 500
DEFAULT_MAX_FRAME = 16 * 1024 * 1024

_encoder = msgspec.json.Encoder()
# A frame is one server frame or, from a batching server, a JSON array of them.
_decoder: msgspec.json.Decoder[ServerFrame | list[ServerFrame]] = msgspec.json.Decoder(
    ServerFrame | list[ServerFrame]
)


class ConnectFailed(ClientError, ConnectionError):
    """The client stopped for good before it could connect (a do-not-retry close code)."""

    code = "connect_failed"


class _Stop:
    """Marks the end of the :meth:`PushgridClient.messages` stream."""


_STOP = _Stop()


@dataclass(frozen=True, slots=True)
class _SubOptions:
    history: int
    conflation: int


@dataclass(frozen=True, slots=True)
class _SessionEnd:
    """How a connection ended. ``code`` / ``close_reason`` come from the close frame, if any."""

    rule: ReconnectRule
    detail: str
    up_for: float = 0.0
    code: int | None = None
    close_reason: str | None = None


class _Dead(Exception):
    """No frame from the server within the keepalive deadline."""


class PushgridClient:
    """Asyncio client of a pushgrid server cluster. Create, ``await connect()``, use, ``close()``.

    ``servers``: a list of ``"[weight ]host[:port]"`` entries (or ``ws://`` / ``wss://`` URLs), or
    one comma-separated string of them. ``token`` is sent as the ``token`` query parameter.
    Raises ValueError for an invalid server list.
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
    ) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._pool = ServerPool(parse_servers(servers), self._rng)
        self._token = token
        self._on_message = on_message
        self._on_status = on_status
        self._backoff = Backoff(backoff if backoff is not None else BackoffPolicy(), self._rng)
        self._open_timeout = open_timeout
        self._close_timeout = close_timeout
        self._max_frame_size = max_frame_size
        self._proxy = proxy
        self._tracker = RecoveryTracker(max_recoveries)
        self._subscriptions: dict[str, _SubOptions] = {}
        self._resyncing: set[str] = set()
        self._sub_requests: dict[int, set[str]] = {}
        self._pending: dict[int, asyncio.Future[PublishResult]] = {}
        self._ids: Iterator[int] = itertools.count(1)
        self._queue: asyncio.Queue[Message | _Stop] = asyncio.Queue(maxsize=queue_size)
        self._ws: ClientConnection | None = None
        self._server: ServerAddress | None = None
        self._welcome: Welcome | None = None
        self._ready = asyncio.Event()  # set while connected, and for good once stopped
        self._run_task: asyncio.Task[None] | None = None
        self._dispatch: asyncio.Queue[Message | StatusEvent | _Stop] = asyncio.Queue(
            maxsize=queue_size
        )
        self._dispatcher: asyncio.Task[None] | None = None
        self._dispatch_closed = False
        self._closing = False
        self._stopped = False
        self._stop_event: StatusEvent | None = None
        self._last_tx = 0.0
        self._last_failure: str | None = None
        self._retries: set[asyncio.Task[None]] = set()
        self._token_answers: dict[int, asyncio.Future[TokenResult]] = {}

    # --- public API ---------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while a welcomed connection is open."""
        return self._ws is not None and not self._stopped

    @property
    def server(self) -> ServerAddress | None:
        """The server of the current connection, or None."""
        return self._server if self.connected else None

    @property
    def welcome(self) -> Welcome | None:
        """The welcome frame of the current (or last) connection."""
        return self._welcome

    @property
    def subjects(self) -> list[str]:
        """Subjects currently subscribed (renewed on each reconnect)."""
        return list(self._subscriptions)

    def position(self, subject: str) -> Position | None:
        """The last ``(epoch, seq)`` received for ``subject``, or None."""
        return self._tracker.position(subject)

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
        if self._closing or self._stopped:
            raise RuntimeError("the client is closed")
        if self._run_task is None:
            if self._on_message is not None or self._on_status is not None:
                self._dispatcher = asyncio.create_task(
                    self._dispatch_loop(), name="pushgrid-callbacks"
                )
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
        task = self._run_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        if not self._stopped:
            await self._stop(StatusEvent(Status.CLOSED, detail="closed by the application"))
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
        self, subjects: list[str] | str, history: int = 0, conflation_ms: int = 0
    ) -> None:
        """Subscribe to ``subjects`` (kept across reconnects until :meth:`unsubscribe`).

        Returns once the request is sent, or at once while disconnected (it is sent on connect).
        The outcome arrives per subject as a status event: SUBSCRIBE_ALLOW or SUBSCRIBE_DENY.
        ``history`` = N asks for the N last cached messages (type historical) instead of the
        snapshot; ``conflation_ms`` asks the server to conflate updates. Raises ValueError for an
        invalid subject or option, RuntimeError if the client is closed.
        """
        names = _subject_list(subjects)
        if history < 0:
            raise ValueError(f"history must be >= 0, got {history}")
        if conflation_ms < 0:
            raise ValueError(f"conflation_ms must be >= 0, got {conflation_ms}")
        self._check_open()
        options = _SubOptions(history, conflation_ms)
        for name in names:
            self._subscriptions[name] = options
            self._resyncing.discard(name)
        if self._ws is not None:
            items = [SubscribeItem(name, None, history, conflation_ms) for name in names]
            await self._send_subscribe(items)

    async def update_token(self, token: str, wait: float = 10.0) -> TokenResult:
        """Replace the entitlement token on the live connection, before the current one
        expires (docs/protocol.md 5.5); reconnections use the new token from now on.

        Subscriptions the new token no longer allows are dropped (SUBSCRIBE_DENY, detail
        ``revoked``). A refused token (``denied``) changes nothing. Without a connection the
        token simply waits for the next one.
        """
        self._check_open()
        ws = self._ws
        if ws is None:
            self._token = token
            return TokenResult("ok", reason="not connected: the next connection uses the token")
        request_id = next(self._ids)
        answer: asyncio.Future[TokenResult] = asyncio.get_running_loop().create_future()
        self._token_answers[request_id] = answer
        try:
            await self._send_on(ws, Token(token, request_id))
            result = await asyncio.wait_for(answer, wait)
            if result.result == "ok":  # a refused token leaves the current one in force
                self._token = token
            return result
        except (ConnectionClosed, TimeoutError):
            return TokenResult("denied", request_id, reason="no answer: the connection was lost")
        finally:
            self._token_answers.pop(request_id, None)

    async def _handle_token_result(self, frame: TokenResult) -> None:
        answer = self._token_answers.get(frame.id) if frame.id is not None else None
        server = str(self._server) if self._server is not None else None
        for subject in frame.revoked or []:
            if self._subscriptions.pop(subject, None) is not None:
                self._tracker.forget(subject)
                await self._notify_status(
                    StatusEvent(
                        Status.SUBSCRIBE_DENY, server=server, subject=subject, detail="revoked"
                    )
                )
        if answer is not None and not answer.done():
            answer.set_result(frame)

    async def unsubscribe(self, subjects: list[str] | str) -> None:
        """Stop receiving ``subjects``; messages of them still in flight are dropped."""
        names = _subject_list(subjects)
        self._check_open()
        for name in names:
            self._subscriptions.pop(name, None)
            self._tracker.forget(name)
            self._resyncing.discard(name)
        if self._ws is not None:
            for chunk in _chunks(names, SUBJECTS_PER_FRAME):
                await self._send(Unsubscribe(subjects=chunk, id=next(self._ids)))

    async def publish(
        self,
        subject: str,
        content: str,
        fields: dict[str, str] | None = None,
        retained: bool = True,
        qos: QoS = "guaranteed",
        timeout: float = 10.0,  # noqa: ASYNC109 - also bounds waiting for a connection
    ) -> PublishResult:
        """Publish one message and return the server's answer within ``timeout`` seconds.

        While disconnected, waits for a connection until the timeout. Returns TOO_LARGE without
        sending when content + fields exceed the server's ``max_message_size``; FAILED on
        timeout, on a lost connection, or once the client is closed. Raises ValueError for an
        invalid subject, qos or fields.
        """
        _check_subject(subject)
        if qos not in ("standard", "guaranteed"):
            raise ValueError(f"qos must be 'standard' or 'guaranteed', got {qos!r}")
        frame_fields = dict(fields or {})
        for name, value in frame_fields.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ValueError(f"field {name!r}: names and values must be strings")
        request_id: int | None = None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    await self._ready.wait()
                    if self._stopped or self._closing:
                        return _failed(subject, "the client is closed")
                    welcome, ws = self._welcome, self._ws
                    if ws is None:  # between a loss and the next connection
                        self._ready.clear()
                        continue
                    request_id = next(self._ids)
                    frame = Publish(subject, content, frame_fields, retained, qos, request_id)
                    if welcome is not None:
                        size = publish_size(frame)
                        if size > welcome.max_message_size:
                            return PublishResult(
                                PublishStatus.TOO_LARGE,
                                subject,
                                reason=f"message of {size} bytes exceeds the server's "
                                f"max_message_size {welcome.max_message_size}",
                            )
                    future: asyncio.Future[PublishResult] = (
                        asyncio.get_running_loop().create_future()
                    )
                    self._pending[request_id] = future
                    try:
                        await self._send_on(ws, frame)
                    except ConnectionClosed:
                        # not sent: wait for the next connection (the reader sees the loss too)
                        self._pending.pop(request_id, None)
                        if self._ws is ws and not self._stopped:
                            self._ready.clear()
                        continue
                    result = await future
                    return result if result.subject else replace(result, subject=subject)
        except TimeoutError:
            if request_id is None:
                last = f" (last failure: {self._last_failure})" if self._last_failure else ""
                return _failed(subject, f"not connected within {timeout:g} s{last}")
            return _failed(subject, f"no answer within {timeout:g} s")
        finally:
            if request_id is not None:
                self._pending.pop(request_id, None)

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

    # --- connection loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        policy = self._backoff.policy
        while not self._closing:
            server = self._pool.choose()
            end = await self._session(server)
            if self._closing:
                return
            self._last_failure = f"{server}: {end.detail}"
            if end.rule.avoid_server:
                self._pool.mark_failed(server)
            if not end.rule.retry:
                await self._notify_status(_down_event(server, end, None))
                await self._stop(
                    StatusEvent(
                        Status.CLOSED,
                        server=str(server),
                        detail="the server asked the client not to retry",
                        close_code=end.code,
                        close_reason=end.close_reason,
                    )
                )
                return
            if end.up_for >= policy.stable_after:
                self._backoff.reset()
            delay = 0.0 if end.rule.immediate else self._backoff.next_delay()
            await self._notify_status(_down_event(server, end, delay))
            logger.info("pushgrid: %s down (%s); retry in %.2f s", server, end.detail, delay)
            await asyncio.sleep(delay)  # close() cancels the task, sleep included

    async def _session(self, server: ServerAddress) -> _SessionEnd:
        """One connection: open, welcome, resubscribe, read until it ends."""
        loop = asyncio.get_running_loop()
        try:
            ws = await connect(
                server.url(self._token),
                compression=None,
                max_size=self._max_frame_size,
                open_timeout=self._open_timeout,
                close_timeout=self._close_timeout,
                ping_interval=None,
                proxy=self._proxy,
            )
        except (OSError, TimeoutError, WebSocketException) as exc:
            return _SessionEnd(OTHER_SERVER, f"cannot connect: {_describe(exc)}")
        up_at: float | None = None

        def up_for() -> float:
            return loop.time() - up_at if up_at is not None else 0.0

        try:
            welcome = await self._await_welcome(ws)
            up_at = loop.time()
            await self._on_up(server, ws, welcome)
            await self._read_loop(ws, welcome)
            return _SessionEnd(OTHER_SERVER, "connection ended", up_for())
        except ConnectionClosed as exc:
            if exc.rcvd is None:
                return _SessionEnd(OTHER_SERVER, "connection lost", up_for())
            code, reason = exc.rcvd.code, exc.rcvd.reason
            detail = f"closed by the server: {code} {reason}".rstrip()
            return _SessionEnd(rule_for_close(code), detail, up_for(), code, reason)
        except (_Dead, _BadWelcome) as exc:
            return _SessionEnd(OTHER_SERVER, str(exc), up_for())
        except Exception as exc:  # a bug in the client: log it, keep the client alive
            logger.exception("pushgrid: unexpected error in the connection to %s", server)
            return _SessionEnd(BACKOFF, f"client error: {_describe(exc)}", up_for())
        finally:
            self._on_down()
            if self._closing:
                with contextlib.suppress(Exception):
                    await ws.close(1000, "client closed")
            else:
                await _abort(ws)

    async def _await_welcome(self, ws: ClientConnection) -> Welcome:
        try:
            async with asyncio.timeout(self._open_timeout):
                data = await ws.recv()
        except TimeoutError:
            raise _BadWelcome(f"no welcome within {self._open_timeout:g} s") from None
        try:
            frame = _decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _BadWelcome(f"invalid first frame: {exc}") from None
        if not isinstance(frame, Welcome):
            raise _BadWelcome(f"expected a welcome frame, got {type(frame).__name__}")
        return frame

    async def _on_up(self, server: ServerAddress, ws: ClientConnection, welcome: Welcome) -> None:
        self._ws, self._server, self._welcome = ws, server, welcome
        self._last_tx = asyncio.get_running_loop().time()
        self._pool.reset()
        self._tracker.cancel_recoveries()
        self._resyncing.clear()
        items = [self._resubscribe_item(name, opts) for name, opts in self._subscriptions.items()]
        logger.info(
            "pushgrid: connected to %s (%s, session %s)", server, welcome.server, welcome.session
        )
        await self._notify_status(
            StatusEvent(Status.SERVER_UP, server=str(server), detail=welcome.server)
        )
        if items:
            await self._send_subscribe(items)
        self._ready.set()

    def _retry_subscribe(self, subjects: set[str]) -> None:
        """Subscribe again after 0.5-1.5 s, from the position held (spec: the subscription is
        kept while the cluster cannot serve it, docs/protocol.md 8.1)."""

        async def later() -> None:
            await asyncio.sleep(self._rng.uniform(0.5, 1.5))
            items = [
                self._resubscribe_item(name, self._subscriptions[name])
                for name in sorted(subjects)
                if name in self._subscriptions
            ]
            if items:
                await self._send_subscribe(items)

        task = asyncio.get_running_loop().create_task(later())
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    def _resubscribe_item(self, subject: str, options: _SubOptions) -> SubscribeItem:
        position = self._tracker.position(subject)
        if position is not None:
            return SubscribeItem(subject, position, 0, options.conflation)
        return SubscribeItem(subject, None, options.history, options.conflation)

    def _on_down(self) -> None:
        self._ws = None
        if not self._stopped:
            self._ready.clear()
        self._sub_requests.clear()
        self._fail_pending("connection lost before the server answered")

    async def _read_loop(self, ws: ClientConnection, welcome: Welcome) -> None:
        loop = asyncio.get_running_loop()
        keepalive = welcome.keepalive if welcome.keepalive > 0 else None
        last_rx = loop.time()
        while True:
            now = loop.time()
            timeout: float | None = None
            if keepalive is not None:
                dead_at = last_rx + DEAD_FACTOR * keepalive
                ping_at = self._last_tx + keepalive
                if now >= dead_at:
                    raise _Dead(f"no frame from the server for {DEAD_FACTOR * keepalive:g} s")
                if now >= ping_at:
                    await self._send_on(ws, Ping())
                    continue
                timeout = min(dead_at, ping_at) - now
            try:
                async with asyncio.timeout(timeout):
                    data = await ws.recv()
            except TimeoutError:
                continue
            last_rx = loop.time()
            await self._handle(data)

    # --- frames from the server -----------------------------------------------------------------

    async def _handle(self, data: str | bytes) -> None:
        """One WebSocket text frame: a server frame, or a batch (a JSON array of them)."""
        try:
            decoded = _decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            logger.warning("pushgrid: ignoring an unreadable frame: %s", exc)
            return
        for frame in decoded if isinstance(decoded, list) else (decoded,):
            await self._handle_frame(frame)

    async def _handle_frame(self, frame: ServerFrame) -> None:
        if isinstance(frame, MessageFrame):
            await self._handle_message(frame)
        elif isinstance(frame, Subscribed):
            await self._handle_subscribed(frame)
        elif isinstance(frame, PublishResultFrame):
            self._resolve(frame.id, _publish_result(frame))
        elif isinstance(frame, Error):
            await self._handle_error(frame)
        elif isinstance(frame, TokenResult):
            await self._handle_token_result(frame)
        elif isinstance(frame, Welcome):
            self._welcome = frame
        elif isinstance(frame, Keepalive | Pong | Unsubscribed):
            pass

    async def _handle_message(self, frame: MessageFrame) -> None:
        if frame.subject not in self._subscriptions:
            return
        decision = self._tracker.on_message(frame)
        if decision.action is Action.DELIVER:
            message = Message(
                subject=frame.subject,
                content=frame.content,
                fields=frame.fields,
                type=MessageType(frame.kind),
                epoch=frame.epoch,
                seq=frame.seq,
                qos=frame.qos,
                retained=frame.retained,
                ts=frame.ts,
                conflated=bool(getattr(frame, "conflated", False)),
            )
            await self._deliver(message)
            return
        if decision.action is Action.DROP:
            logger.debug(
                "pushgrid: %s seq %d dropped (%s)", frame.subject, frame.seq, decision.reason
            )
            return
        options = self._subscriptions[frame.subject]
        logger.info("pushgrid: %s: %s -> %s", frame.subject, decision.reason, decision.action)
        if decision.action is Action.RECOVER:
            item = SubscribeItem(frame.subject, decision.recover, 0, options.conflation)
        else:
            self._resyncing.add(frame.subject)
            item = SubscribeItem(frame.subject, None, 0, options.conflation)
        await self._send_subscribe([item])

    async def _handle_subscribed(self, frame: Subscribed) -> None:
        if frame.id is not None and frame.id in self._sub_requests:
            waiting = self._sub_requests[frame.id]
            waiting.discard(frame.subject)
            if not waiting:
                del self._sub_requests[frame.id]
        if frame.subject not in self._subscriptions:
            return
        self._tracker.on_subscribed(frame)
        server = str(self._server) if self._server is not None else None
        if frame.status != "allow":
            self._subscriptions.pop(frame.subject, None)
            self._resyncing.discard(frame.subject)
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
        await self._notify_status(
            StatusEvent(status, server=server, subject=frame.subject, detail=detail)
        )

    async def _handle_error(self, frame: Error) -> None:
        text = f"{frame.code}: {frame.message}"
        if frame.id is not None and frame.id in self._pending:
            self._resolve(frame.id, _error_result(frame))
            return
        if frame.id is not None and frame.id in self._sub_requests:
            subjects = self._sub_requests.pop(frame.id)
            server = str(self._server) if self._server is not None else None
            if frame.code == "engine_unavailable":  # a cluster without quorum: try again
                self._retry_subscribe(subjects)
                for subject in sorted(subjects):
                    await self._notify_status(
                        StatusEvent(Status.ERROR, server=server, subject=subject, detail=text)
                    )
                return
            for subject in sorted(subjects):
                if self._tracker.recovering(subject) and frame.code != "denied":
                    # a refused gap recovery: keep the subscription, the next gap retries
                    self._tracker.cancel_recoveries([subject])
                    await self._notify_status(
                        StatusEvent(Status.ERROR, server=server, subject=subject, detail=text)
                    )
                    continue
                self._subscriptions.pop(subject, None)
                self._tracker.forget(subject)
                self._resyncing.discard(subject)
                await self._notify_status(
                    StatusEvent(Status.SUBSCRIBE_DENY, server=server, subject=subject, detail=text)
                )
            return
        logger.warning("pushgrid: server error %s", text)
        await self._notify_status(StatusEvent(Status.ERROR, detail=text))

    # --- helpers --------------------------------------------------------------------------------

    async def _send_subscribe(self, items: list[SubscribeItem]) -> None:
        ws = self._ws
        if ws is None:
            return
        for chunk in _chunks(items, SUBJECTS_PER_FRAME):
            request_id = next(self._ids)
            self._sub_requests[request_id] = {item.subject for item in chunk}
            try:
                await self._send_on(ws, Subscribe(subjects=chunk, id=request_id))
            except ConnectionClosed:
                return  # renewed on reconnect

    async def _send(self, frame: Subscribe | Unsubscribe | Publish | Ping) -> None:
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(ConnectionClosed):
            await self._send_on(ws, frame)

    async def _send_on(
        self, ws: ClientConnection, frame: Subscribe | Unsubscribe | Publish | Ping | Token
    ) -> None:
        await ws.send(_encoder.encode(frame), text=True)
        self._last_tx = asyncio.get_running_loop().time()

    async def _deliver(self, message: Message) -> None:
        if self._on_message is None:
            await self._queue.put(message)
        else:
            await self._dispatch.put(message)

    async def _notify_status(self, event: StatusEvent) -> None:
        logger.debug("pushgrid status: %s", event)
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
            elif self._on_message is not None:
                await _call(self._on_message, item, "on_message")

    def _resolve(self, request_id: int | None, result: PublishResult) -> None:
        if request_id is None:
            return
        future = self._pending.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(result)

    def _fail_pending(self, reason: str) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_result(_failed("", reason))

    async def _stop(self, event: StatusEvent) -> None:
        """Stop for good: wake waiters, fail publishes, end messages(), report ``event``."""
        self._stopped = True
        self._ready.set()
        self._fail_pending("the client is closed")
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(_STOP)
        self._stop_event = event
        logger.debug("pushgrid status: %s", event)
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


class _BadWelcome(Exception):
    """The server did not start the session with a valid welcome frame."""


async def _call(callback: Callable[[_T], Awaitable[None] | None], arg: _T, name: str) -> None:
    try:
        result = callback(arg)
        if inspect.isawaitable(result):
            await result
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("pushgrid: %s callback raised", name)


async def _abort(ws: ClientConnection) -> None:
    """Drop a connection that is dead or already closing without waiting for the peer."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(0.5):
            await ws.close()
    ws.transport.abort()


def _subject_list(subjects: list[str] | str) -> list[str]:
    names = [subjects] if isinstance(subjects, str) else list(subjects)
    if not names:
        raise ValueError("at least one subject is required")
    for name in names:
        _check_subject(name)
    return list(dict.fromkeys(names))


def _check_subject(subject: str) -> None:
    reason = subject_error(subject)
    if reason is not None:
        raise ValueError(f"invalid subject {subject!r}: {reason}")


def _chunks(items: list[_T], size: int) -> Iterable[list[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _down_event(server: ServerAddress, end: _SessionEnd, retry_in: float | None) -> StatusEvent:
    return StatusEvent(
        Status.SERVER_DOWN,
        server=str(server),
        detail=end.detail,
        close_code=end.code,
        close_reason=end.close_reason,
        retry_in=retry_in,
    )


def _failed(subject: str, reason: str) -> PublishResult:
    return PublishResult(PublishStatus.FAILED, subject, reason=reason)


def _publish_result(frame: PublishResultFrame) -> PublishResult:
    return PublishResult(
        PublishStatus(frame.result), frame.subject, frame.epoch, frame.seq, frame.reason
    )


def _error_result(frame: Error) -> PublishResult:
    status = {
        "message_too_large": PublishStatus.TOO_LARGE,
        "denied": PublishStatus.DENIED,
    }.get(frame.code, PublishStatus.FAILED)
    return PublishResult(status, "", reason=f"{frame.code}: {frame.message}")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
