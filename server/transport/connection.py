"""One client TCP connection: HTTP/1.1 (h11) until it upgrades to WebSocket (wsproto).

The protocol object only moves bytes: HTTP requests go to :mod:`server.transport.http`, complete
WebSocket text messages go to the connection's :class:`~server.core.session.Session`, one at a
time and in order. Outgoing frames are queued and flushed once per loop iteration
(:mod:`server.transport.flusher`); the transport's write buffer is bounded by
``MaxOutboundBufferSize``: a client that lets it overflow is a slow consumer and is closed with
4001, without delaying anyone else.

Limits against resource exhaustion (docs/security.md): a connection that has not become a
WebSocket or an event stream yet is *pending*; pending connections are bounded per server and
per client address (MaxPendingConnections*), and each request must arrive whole (head and
body) within HttpHeaderTimeout, so a client trickling bytes (slowloris) is cut. Request heads
are bounded in size and header count (431), only HTTP/1.0 and 1.1 are spoken (505), and only
a GET upgrades to WebSocket. Broken WebSocket framing is answered with a close frame (1002, or
1007 for invalid UTF-8) before the connection ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import struct
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qs, urlsplit

import h11
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError as WsRemoteProtocolError

from ..core.session import Session
from ..core.throttle import host_of
from ..protocol.codec import encode
from ..protocol.errors import CloseCode
from ..protocol.frames import Closing
from ..protocol.wsframe import batch_frame, encode_text_frame
from . import http
from .sse import SseEncoder

if TYPE_CHECKING:
    from ..app import PushServer

log = logging.getLogger(__name__)

_INBOX_PAUSE = 1000  # queued inbound messages at which we stop reading from the socket
_INBOX_RESUME = 100
_FAIR_SHARE = 8  # requests of one connection handled before the others get their turn
_LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset


HttpHandler = Callable[[h11.Request, bytes, str], Awaitable[http.Response]]


class ClientConnection(asyncio.Protocol):
    """A connection on a client port, or (``websocket=False``) on the monitoring port."""

    def __init__(
        self, app: PushServer, handler: HttpHandler | None = None, websocket: bool = True
    ) -> None:
        self.app = app
        self.handler = handler
        self.websocket = websocket
        self.transport: asyncio.Transport | None = None
        self.remote = "?"
        self.http = h11.Connection(
            h11.SERVER, max_incomplete_event_size=app.settings.max_http_header_size
        )
        self.ws: WSConnection | None = None
        self.session: Session | None = None
        self.closing = False
        self.bytes_in = 0
        self.bytes_out = 0
        self.last_in = app.tick
        self.last_out = app.tick
        self.last_ping = app.tick
        self.close_deadline: float | None = None
        self._outbox: list[bytes] = []
        self._outbox_size = 0
        self._queued = 0  # bytes in _outbox (all of them; _outbox_size counts for batching)
        self._batch_due: float | None = None
        self.sse: SseEncoder | None = None
        self._marked = False
        self._request: h11.Request | None = None
        self._body: list[bytes] = []
        self._body_size = 0
        self._busy = False  # an HTTP response is being produced
        self._draining = False  # answered early: drop input until the client closes
        self._parts: list[str] = []
        self._parts_size = 0
        self._inbox: deque[str] = deque()
        self._reader: asyncio.Task[None] | None = None
        self._paused = False
        self._pending = False  # counted in app.pending (not yet WebSocket / event stream)
        self._awaiting_request = True  # the request timeout starts at the next byte

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transport class does not subclass asyncio.Transport, hence no isinstance.
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.remote = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.transport.set_write_buffer_limits(high=self.app.settings.max_outbound_buffer_size)
        self.app.connections.add(self)
        if self.websocket:  # the client port; the monitoring port is private
            if not self.app.pending.admit(host_of(self.remote)):
                self._refuse_pending()
                return
            self._pending = True
        self._start_request_timer()

    def _refuse_pending(self) -> None:
        """Too many connections not upgraded yet (from this address or in all): 503, close."""
        assert self.transport is not None
        self.app.security.pending_refused_total += 1
        body = b"too many connections waiting for a request or an upgrade; retry later\n"
        self.transport.write(
            b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 5\r\n"
            b"content-type: text/plain\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        self.closing = True
        self._draining = True
        self.transport.close()

    def _release_pending(self) -> None:
        if self._pending:
            self._pending = False
            self.app.pending.release(host_of(self.remote))

    def _start_request_timer(self) -> None:
        """A request must arrive whole within HttpHeaderTimeout of its first byte (or of the
        connection's opening): each byte no longer buys more time."""
        self._awaiting_request = False
        if self.close_deadline is None:
            self.close_deadline = self.app.tick + self.app.settings.http_header_timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.app.connections.discard(self)
        self._release_pending()
        if self.session is not None:
            self.session.close()
            self.app.hub.remove_session(self.session)
        if self._reader is not None:
            self._reader.cancel()

    def data_received(self, data: bytes) -> None:
        self.bytes_in += len(data)
        if self.websocket:  # the client port; monitoring traffic is not client traffic
            self.app.counters.bytes_in_total += len(data)
        self.last_in = self.app.tick
        if self._draining:
            return
        if self.ws is not None:
            self.ws.receive_data(data)
            self._ws_events()
        else:
            if self._awaiting_request:
                self._start_request_timer()
            self.http.receive_data(data)
            self._http_events()

    def eof_received(self) -> bool | None:
        if self._draining:
            return None  # asyncio closes the transport
        if self.ws is not None:
            self.ws.receive_data(None)
            self._ws_events()
        else:
            self.http.receive_data(b"")
            self._http_events()
        return None

    def pause_writing(self) -> None:
        # The write buffer passed MaxOutboundBufferSize: the client does not keep up.
        if (self.ws is not None or self.sse is not None) and not self.closing:
            self._slow_consumer()

    def _slow_consumer(self) -> None:
        """Drop what is queued, send the 4001 close frame after the last whole frame already
        buffered, close once it is out, and cut after SlowConsumerCloseTimeout."""
        self.app.counters.slow_consumer_disconnects_total += 1
        log.info("slow consumer %s (%s): closing", self.remote, self.session_id)
        self._outbox.clear()
        self._outbox_size = 0
        self._queued = 0
        self.close(CloseCode.SLOW_CONSUMER, "slow consumer: outbound buffer full")
        if self.transport is not None:
            self.transport.close()  # sends what is buffered (close frame last), then FIN
        self.close_deadline = self.app.tick + self.app.settings.slow_consumer_close_timeout

    def _overflows(self, size: int) -> bool:
        """Writing ``size`` more bytes would take a busy write buffer past the limit."""
        assert self.transport is not None
        buffered = self.transport.get_write_buffer_size()
        return buffered > 0 and buffered + size > self.app.settings.max_outbound_buffer_size

    # -- output (core.hub.Peer) -------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.session.id if self.session is not None else None

    def send(self, frame: bytes) -> None:
        if self.closing:
            return
        if self.sse is not None:
            frame = self.sse.event(frame)
        self._outbox.append(frame)
        self._queued += len(frame)
        if self._queued > self.app.settings.max_outbound_buffer_size:
            # One request (a subscribe with history, many snapshots) may queue at most what
            # the write buffer may hold, before any flush: beyond, a slow consumer.
            self._slow_consumer()
            return
        batching = self.app.batching
        if batching is not None and self.sse is None:
            self._outbox_size += len(frame)
            if batching.max_size and self._outbox_size >= batching.max_size:
                self.flush()
                return
            if not self._marked:
                self._marked = True
                if batching.delay:
                    self._batch_due = self.app.flusher.mark_later(self, batching.delay)
                else:
                    self.app.flusher.mark(self)
        elif not self._marked:
            self._marked = True
            self.app.flusher.mark(self)

    def flush_due(self, due: float) -> None:
        # A batch flushed early (BatchingMaxSize) must not cut the next batch's time short.
        if self._batch_due == due:
            self.flush()

    def flush(self) -> None:
        self._marked = False
        self._batch_due = None
        outbox = self._outbox
        if not outbox or self.transport is None or self.transport.is_closing():
            outbox.clear()
            self._queued = 0
            return
        if len(outbox) == 1:
            data = outbox[0]
        elif self.app.batching is not None and self.sse is None:
            data = batch_frame(outbox)
        else:
            data = b"".join(outbox)
        outbox.clear()
        self._outbox_size = 0
        self._queued = 0
        if (self.ws is not None or self.sse is not None) and self._overflows(len(data)):
            self._slow_consumer()  # before the write: the close frame follows whole frames
            return
        self._write(data)

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)
        self.bytes_out += len(data)
        if self.websocket:
            self.app.counters.bytes_out_total += len(data)
        self.last_out = self.app.tick

    def close(self, code: int, reason: str) -> None:
        """Send a WebSocket close frame after what is queued and stop sending anything else."""
        if self.closing or self.transport is None:
            return
        if self.sse is not None:
            self.flush()
            closing = self.sse.event(encode_text_frame(encode(Closing(code, reason))))
            self._write(closing + self.sse.end())
            self.closing = True
            self.transport.close()
            return
        if self.ws is None or self.ws.state is not ConnectionState.OPEN:
            self.closing = True
            self.transport.close()
            return
        self.flush()
        self.closing = True
        self._write(self.ws.send(CloseConnection(code=code, reason=reason)))
        self.close_deadline = self.app.tick + self.app.settings.shutdown_timeout + 1.0

    def abort(self) -> None:
        """Cut the connection: a reset, dropping what the kernel still holds for the client
        (a peer that never reads must not keep our socket buffers)."""
        self.closing = True
        if self.transport is not None:
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            self.transport.abort()

    def ping(self) -> None:
        if self.ws is not None and self.ws.state is ConnectionState.OPEN and not self.closing:
            self.flush()
            self._write(self.ws.send(Ping(payload=b"pushgrid")))
            self.last_ping = self.app.tick

    # -- HTTP -------------------------------------------------------------------------------

    def _http_events(self) -> None:
        while not self._busy and self.ws is None and self.transport is not None:
            try:
                event = self.http.next_event()
            except h11.RemoteProtocolError as exc:
                self._http_fail(exc)
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:
                if self._request is not None and self._wants_upgrade(self._request):
                    self._upgrade(self._request)
                return
            if isinstance(event, h11.Request):
                self._request, self._body, self._body_size = event, [], 0
                refusal = self._head_refusal(event)
                if refusal is not None:
                    self.app.security.http_refused_total += 1
                    self._respond(refusal, close_after=False)
                    self._busy = True
                    self._draining = True
                    if self.transport is not None:
                        self.transport.close()
                    return
            elif isinstance(event, h11.Data):
                self._body_size += len(event.data)
                if self._body_size > self.app.max_http_body:
                    self._reject_body()
                    return
                self._body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                request = self._request
                assert request is not None
                self.close_deadline = None  # the whole request arrived in time
                if self._wants_upgrade(request):
                    continue  # h11 pauses next; the upgrade happens then
                self._busy = True
                body = b"".join(self._body)
                task = asyncio.get_running_loop().create_task(self._serve_http(request, body))
                self.app.track(task)
                return
            elif isinstance(event, h11.ConnectionClosed):
                if self.transport is not None:
                    self.transport.close()
                return

    def _reject_body(self) -> None:
        """Answer 413 and close once the client has stopped sending: reading on (and dropping
        the rest of the body) lets the client receive the answer instead of a reset."""
        limit = self.app.max_http_body
        response = http.problem(413, "body_too_large", f"request body above {limit} bytes")
        self._respond(response, close_after=False)
        self._busy = True
        self._draining = True
        self.close_deadline = self.app.tick + 5.0

    def _wants_upgrade(self, request: h11.Request) -> bool:
        return self.websocket and http.is_websocket_upgrade(request)

    def _head_refusal(self, request: h11.Request) -> http.Response | None:
        """A request head we do not serve: too big (431), not HTTP/1.x (505), or a WebSocket
        upgrade by another method than GET (405)."""
        settings = self.app.settings
        headers = request.headers
        size = len(request.target) + sum(len(name) + len(value) + 4 for name, value in headers)
        if len(headers) > settings.max_http_headers or size > settings.max_http_header_size:
            return http.problem(
                431,
                "headers_too_large",
                f"at most {settings.max_http_headers} headers and {settings.max_http_header_size}"
                " bytes of request head (MaxHttpHeaders, MaxHttpHeaderSize)",
            )
        if request.http_version not in (b"1.0", b"1.1"):
            version = request.http_version.decode("ascii", "replace")
            return http.problem(505, "http_version", f"HTTP/{version} is not supported: use 1.1")
        if http.is_websocket_upgrade(request) and request.method != b"GET":
            return http.problem(405, "method_not_allowed", "a WebSocket upgrade must be a GET")
        return None

    def _http_fail(self, exc: h11.RemoteProtocolError) -> None:
        status = exc.error_status_hint or 400
        if self.http.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self._respond(http.problem(status, "bad_request", f"invalid HTTP request: {exc}"))
        if self.transport is not None:
            self.transport.close()

    async def _serve_http(self, request: h11.Request, body: bytes) -> None:
        response: http.Response | http.SseRequest
        try:
            if self.handler is not None:
                response = await self.handler(request, body, self.remote)
            else:
                response = await http.handle(self.app, request, body, self.remote)
        except Exception:
            log.exception("HTTP handler failed")
            response = http.problem(500, "internal", "internal server error")
        if isinstance(response, http.SseRequest):
            await self._start_sse(request, response)
            return
        self._respond(response)
        self._busy = False
        if self.http.our_state is h11.DONE and self.http.their_state is h11.DONE:
            self.http.start_next_cycle()
            self._awaiting_request = True
            self._http_events()
        elif self.transport is not None and self.http.our_state is h11.MUST_CLOSE:
            self.transport.close()

    def _respond(self, response: http.Response, close_after: bool = True) -> None:
        """Send one HTTP response; ``close_after=False`` answers early and closes later."""
        if self.transport is None or self.transport.is_closing():
            return
        headers = [*response.headers, ("content-length", str(len(response.body)))]
        if not close_after:
            headers.append(("connection", "close"))
        head = self._request is not None and self._request.method == b"HEAD"
        try:
            data = self.http.send(h11.Response(status_code=response.status, headers=headers))
            if response.body and not head:  # a HEAD answer declares the length, sends no body
                data = (data or b"") + (self.http.send(h11.Data(data=response.body)) or b"")
            data = (data or b"") + (self.http.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError:
            log.exception("cannot send HTTP response")
            self.transport.close()
            return
        self._write(data)
        if close_after and self.http.our_state is h11.MUST_CLOSE:
            self.transport.close()

    # -- WebSocket --------------------------------------------------------------------------

    def _upgrade(self, request: h11.Request) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        try:
            ws.initiate_upgrade_connection(list(request.headers), request.target)
            events = list(ws.events())
        except WsRemoteProtocolError as exc:
            self._respond(http.problem(400, "bad_handshake", f"invalid WebSocket handshake: {exc}"))
            if self.transport is not None:
                self.transport.close()
            return
        if not any(isinstance(e, Request) for e in events):
            self._respond(http.problem(400, "bad_handshake", "invalid WebSocket handshake"))
            return
        self.ws = ws
        self._release_pending()
        self._write(ws.send(AcceptConnection()))
        trailing, _closed = self.http.trailing_data
        query = parse_qs(urlsplit(request.target.decode("latin-1")).query)
        token = query.get("token", [None])[0]
        self._open_session(token)
        if trailing:
            ws.receive_data(trailing)
            self._ws_events()

    async def _start_sse(self, request: h11.Request, stream: http.SseRequest) -> None:
        """Answer ``GET /events`` with an endless event stream carrying a session."""
        headers = [
            ("content-type", "text/event-stream; charset=utf-8"),
            ("cache-control", "no-cache"),
            ("x-accel-buffering", "no"),
            *http.CORS,
        ]
        self._write(self.http.send(h11.Response(status_code=200, headers=headers)) or b"")
        self._draining = True  # an event stream reads nothing more from the client
        self._release_pending()
        self.sse = SseEncoder(request.http_version != b"1.0", stream.positions)
        if self._open_session(stream.token) and self.session is not None:
            await self.session.subscribe(stream.items)

    def _open_session(self, token: str | None) -> bool:
        app = self.app
        if app.stopping or app.counters.sessions >= app.settings.max_connections:
            code = CloseCode.GOING_AWAY if app.stopping else CloseCode.CONNECTION_LIMIT
            self.close(code, "server shutting down" if app.stopping else "connection limit")
            return False
        host = self.remote.rpartition(":")[0]
        self.session = Session(
            session_id=secrets.token_hex(8),
            hub=app.hub,
            peer=self,
            policy=app.policy,
            grant=app.entitlement.grant(token),
            remote=self.remote,
            may_publish=app.may_publish(host),
            entitlement=app.entitlement,
            guard=app.publish_guard,
        )
        app.hub.add_session(self.session)
        self.session.welcome()
        return True

    def _ws_events(self) -> None:
        ws = self.ws
        assert ws is not None
        for event in ws.events():
            if isinstance(event, TextMessage):
                self._text(event)
            elif isinstance(event, BytesMessage):
                if event.message_finished and self.session is not None and not self.closing:
                    self.session.handle_binary()
            elif isinstance(event, Ping):
                if ws.state is ConnectionState.OPEN:
                    self._write(ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                if ws.state is ConnectionState.REMOTE_CLOSING:
                    self.flush()
                    self._write(ws.send(event.response()))
                elif ws.state is ConnectionState.OPEN:
                    # wsproto could not parse the client's frames (its state stays OPEN): say
                    # why with a close frame (1002 framing, 1007 invalid UTF-8), then end.
                    self.app.security.protocol_errors_total += 1
                    self.flush()
                    self._write(ws.send(CloseConnection(code=event.code, reason=event.reason)))
                self.closing = True
                if self.transport is not None:
                    self.transport.close()
                return

    def _text(self, event: TextMessage) -> None:
        self._parts.append(event.data)
        data = event.data
        self._parts_size += len(data) if data.isascii() else len(data.encode("utf-8", "replace"))
        if self._parts_size > self.app.max_frame_size:
            self._parts.clear()
            self.close(CloseCode.FRAME_TOO_LARGE, "message above the frame size limit")
            return
        if not event.message_finished:
            return
        text = self._parts[0] if len(self._parts) == 1 else "".join(self._parts)
        self._parts.clear()
        self._parts_size = 0
        if self.session is None or self.closing:
            return
        self._inbox.append(text)
        if len(self._inbox) >= _INBOX_PAUSE and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read_inbox())

    async def _read_inbox(self) -> None:
        session = self.session
        assert session is not None
        handled = 0
        try:
            while self._inbox and not self.closing:
                await session.handle_text(self._inbox.popleft())
                handled += 1
                if handled % _FAIR_SHARE == 0:
                    # An in-memory publish never suspends: without this, one client's backlog
                    # would run to its end before any other connection is served.
                    await asyncio.sleep(0)
                if self._paused and len(self._inbox) <= _INBOX_RESUME and self.transport:
                    self._paused = False
                    self.transport.resume_reading()
        except Exception:
            log.exception("session %s failed", session.id)
            self.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self._reader = None
