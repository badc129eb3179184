"""HTTP/1.1 on a client port (h11) until a WebSocket upgrade or an event stream, and the
monitoring port's HTTP.

Limits against resource exhaustion (docs/security.md): a connection that has not become a
WebSocket or an event stream yet is *pending*; pending connections are bounded per server and
per client address (MaxPendingConnections*), and each request must arrive whole (head and
body) within HttpHeaderTimeout, so a client trickling bytes (slowloris) is cut. Request heads
are bounded in size and header count (431), only HTTP/1.0 and 1.1 are spoken (505), and only
a GET upgrades to WebSocket.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, cast
from urllib.parse import parse_qs, urlsplit

import h11

from pushgrid.config import MonitoringSettings
from pushgrid.kernel.throttle import host_of

from . import handshake, http
from .connection import Connection
from .event_stream import SseConnection
from .limits import PendingConnections
from .request_head import parse_upgrade_head
from .sse import SseEncoder
from .states import ConnEvent, ConnState
from .websocket import WebSocketConnection
from .wsdeflate import DeflateWebSocketConnection

if TYPE_CHECKING:
    from ..framing.deflate import Agreement
    from .context import ConnectionContext

log = logging.getLogger(__name__)

HttpHandler = Callable[[h11.Request, bytes, str], Awaitable["http.Response | http.SseRequest"]]
_HTTP, _RESPONDING = ConnState.HTTP, ConnState.RESPONDING
_SSE_HEADERS = [
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
    *http.CORS,
]


class HttpConnection(Connection):
    """A connection on a client port while it speaks HTTP (the first protocol of every one)."""

    __slots__ = (
        "_awaiting",
        "_body",
        "_body_size",
        "_h11",
        "_pending",
        "_request",
        "_upgrade_headers",
        "handler",
    )

    def __init__(self, ctx: ConnectionContext, handler: HttpHandler) -> None:
        super().__init__(ctx)
        self.handler = handler
        # h11 is created at the first byte the fast path (request_head.py) leaves to it: a
        # WebSocket client whose whole upgrade head arrives in one read never needs it.
        self._h11: h11.Connection | None = None
        self._request: h11.Request | None = None
        self._body: list[bytes] = []
        self._body_size = 0
        self._pending = False  # counted in ctx.pending (not yet WebSocket / event stream)
        self._awaiting = True  # the request timeout starts at the next byte
        # the current request's headers when it asks for a WebSocket upgrade (h11's Headers
        # iterate slowly: they are listed once and read by the checks and the handshake)
        self._upgrade_headers: list[tuple[bytes, bytes]] | None = None

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transport class does not subclass asyncio.Transport, hence no isinstance.
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.remote = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.transport.set_write_buffer_limits(high=self.ctx.limits.max_outbound_buffer_size)
        self.ctx.connections.add(self)
        if not self._pending_pool().admit(host_of(self.remote)):
            self._refuse_pending()
            return
        self._pending = True
        self._start_request_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._release_pending()

    def data_received(self, data: bytes) -> None:
        self._count_in(len(data))
        if self.state is not _HTTP and self.state is not _RESPONDING:
            return  # answered early (draining) or closing: input is dropped
        if self._awaiting:
            self._start_request_timer()
        parser = self._h11
        if parser is None:
            if self.client_port and self._fast_upgrade(data):
                return
            parser = self._parser()
        parser.receive_data(data)
        self._http_events()

    def eof_received(self) -> bool | None:
        if self.state is ConnState.DRAINING:
            return None  # asyncio closes the transport
        self._parser().receive_data(b"")
        self._http_events()
        return None

    def _parser(self) -> h11.Connection:
        parser = self._h11
        if parser is None:
            limit = self.ctx.limits.max_http_header_size
            parser = self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=limit)
        return parser

    # -- pending connections and the request timer -------------------------------------------

    def _pending_pool(self) -> PendingConnections:
        """Where this port counts its pending connections (MaxPendingConnections*)."""
        return self.ctx.pending

    def _max_body(self) -> int:
        return self.ctx.limits.max_http_body

    def _refuse_pending(self) -> None:
        """Too many connections not upgraded yet (from this address or in all): 503, close;
        logged at most once per REFUSAL_LOG_INTERVAL (server/transport/limits.py)."""
        self.ctx.security.pending_refused_total += 1
        pending = self._pending_pool()
        loop = asyncio.get_running_loop()
        due = pending.report_due(loop.time())
        if due is not None:
            loop.call_at(due, _log_refusals, pending, loop)
        body = b"too many connections waiting for a request or an upgrade; retry later\n"
        self._to(ConnEvent.REFUSE)
        self._write(
            b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 5\r\n"
            b"content-type: text/plain\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        self._shut()

    def _release_pending(self) -> None:
        if self._pending:
            self._pending = False
            self._pending_pool().release(host_of(self.remote))

    def _start_request_timer(self) -> None:
        """A request must arrive whole within HttpHeaderTimeout of its first byte (or of the
        connection's opening): each byte no longer buys more time."""
        self._awaiting = False
        if self.deadline is None:
            self.deadline = self.ctx.tick + self.ctx.limits.http_header_timeout

    # -- requests ---------------------------------------------------------------------------

    def _http_events(self) -> None:
        parser = self._parser()
        while self.state is _HTTP and self.transport is not None:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as exc:
                self._http_fail(exc)
                return
            if not self._on_http_event(event):
                return

    def _on_http_event(self, event: object) -> bool:
        """Act on one h11 event; False when reading stops (more bytes needed, or answered)."""
        if event is h11.NEED_DATA:
            return False
        if event is h11.PAUSED:
            if self._request is not None and self._wants_upgrade():
                self._upgrade(self._request)
            return False
        if isinstance(event, h11.Request):
            return self._on_request(event)
        if isinstance(event, h11.Data):
            return self._on_body(event.data)
        if isinstance(event, h11.EndOfMessage):
            self._request_done()
            return False
        if isinstance(event, h11.ConnectionClosed):
            self._shut()
            return False
        return True

    def _on_request(self, event: h11.Request) -> bool:
        self._request, self._body, self._body_size = event, [], 0
        headers = list(event.headers)
        upgrade = http.is_websocket_upgrade(headers)
        self._upgrade_headers = headers if upgrade else None
        refusal = self._head_refusal(event, headers, upgrade)
        if refusal is None and upgrade and self.client_port:
            reason = self.ctx.isolation()
            refusal = http.isolated_problem(reason) if reason is not None else None
        if refusal is None:
            return True
        self.ctx.security.http_refused_total += 1
        self._to(ConnEvent.REFUSE)
        self._respond(refusal, close_after=False)
        self._shut()
        return False

    def _on_body(self, data: bytes) -> bool:
        self._body_size += len(data)
        if self._body_size > self._max_body():
            self._reject_body()
            return False
        self._body.append(data)
        return True

    def _request_done(self) -> None:
        request = self._request
        if request is None:  # h11 ends a message only after its request
            raise h11.LocalProtocolError("end of message without a request")
        self.deadline = None  # the whole request arrived in time
        if self._wants_upgrade():
            self._http_events()  # h11 pauses next; the upgrade happens then
            return
        self._to(ConnEvent.REQUEST)
        body = b"".join(self._body)
        self._body = []
        task = asyncio.get_running_loop().create_task(self._serve(request, body))
        self.ctx.track(task)

    def _reject_body(self) -> None:
        """Answer 413 and close once the client has stopped sending: reading on (and dropping
        the rest of the body) lets the client receive the answer instead of a reset."""
        limit = self._max_body()
        self._to(ConnEvent.REFUSE)
        response = http.problem(413, "body_too_large", f"request body above {limit} bytes")
        self._respond(response, close_after=False)
        self.deadline = self.ctx.tick + 5.0

    def _wants_upgrade(self) -> bool:
        return self.client_port and self._upgrade_headers is not None

    def _head_refusal(
        self, request: h11.Request, headers: list[tuple[bytes, bytes]], upgrade: bool
    ) -> http.Response | None:
        """A request head we do not serve: too big (431), not HTTP/1.x (505), or a WebSocket
        upgrade by another method than GET (405)."""
        limits = self.ctx.limits
        size = len(request.target)
        for name, value in headers:
            size += len(name) + len(value) + 4
        if len(headers) > limits.max_http_headers or size > limits.max_http_header_size:
            return self._head_too_large()
        if request.http_version not in (b"1.0", b"1.1"):
            version = request.http_version.decode("ascii", "replace")
            return http.problem(505, "http_version", f"HTTP/{version} is not supported: use 1.1")
        if upgrade and request.method != b"GET":
            return http.problem(405, "method_not_allowed", "a WebSocket upgrade must be a GET")
        return None

    def _head_too_large(self) -> http.Response:
        limits = self.ctx.limits
        return http.problem(
            431,
            "headers_too_large",
            f"at most {limits.max_http_headers} headers and {limits.max_http_header_size}"
            " bytes of request head (MaxHttpHeaders, MaxHttpHeaderSize)",
        )

    def _http_fail(self, exc: h11.RemoteProtocolError) -> None:
        """h11 refuses the bytes. Its 431 is the same refusal as ours: a head that outgrows
        MaxHttpHeaderSize before its end has arrived (whether h11 or ``_head_refusal`` sees it
        first depends only on how the bytes were split by the network)."""
        status = exc.error_status_hint or 400
        if status == 431:
            self.ctx.security.http_refused_total += 1
            response = self._head_too_large()
        else:
            response = http.problem(status, "bad_request", f"invalid HTTP request: {exc}")
        if self._parser().our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self._respond(response)
        self._shut()

    async def _serve(self, request: h11.Request, body: bytes) -> None:
        response: http.Response | http.SseRequest
        try:
            response = await self.handler(request, body, self.remote)
        except Exception:
            log.exception("HTTP handler failed")
            response = http.problem(500, "internal", "internal server error")
        if self.state is not _RESPONDING:
            return  # closed while the handler ran (shutdown, or the client went away)
        if isinstance(response, http.SseRequest):
            await self._start_sse(request, response)
            return
        self._respond(response)
        if self.state is not _RESPONDING:
            return
        self._to(ConnEvent.RESPONDED)
        parser = self._parser()
        if parser.our_state is h11.DONE and parser.their_state is h11.DONE:
            parser.start_next_cycle()
            self._awaiting = True
            self._http_events()
        elif parser.our_state is h11.MUST_CLOSE:
            self._shut()

    def _respond(self, response: http.Response, close_after: bool = True) -> None:
        """Send one HTTP response; ``close_after=False`` answers early and closes later."""
        if self.transport is None or self.transport.is_closing():
            return
        headers = [*response.headers, ("content-length", str(len(response.body)))]
        if not close_after:
            headers.append(("connection", "close"))
        head = self._request is not None and self._request.method == b"HEAD"
        conn = self._parser()
        try:
            data = conn.send(h11.Response(status_code=response.status, headers=headers)) or b""
            if response.body and not head:  # a HEAD answer declares the length, sends no body
                data += conn.send(h11.Data(data=response.body)) or b""
            data += conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            log.exception("cannot send HTTP response")
            self._shut()
            return
        self._write(data)
        if close_after and conn.our_state is h11.MUST_CLOSE:
            self._shut()

    # -- switching protocols ----------------------------------------------------------------

    def _hand_over(self, successor: Connection) -> None:
        """Give the transport to ``successor``; this object (parser, request) is dropped."""
        self._to(ConnEvent.HAND_OVER)
        self._release_pending()
        successor._adopt(self)

    def _fast_upgrade(self, data: bytes) -> bool:
        """Upgrade at once when ``data`` starts with a whole, plain and valid WebSocket
        upgrade head (ADR 019); False, nothing done, when h11 must read ``data`` instead."""
        limits = self.ctx.limits
        head = parse_upgrade_head(data, limits.max_http_headers, limits.max_http_header_size)
        if head is None or not http.is_websocket_upgrade(head.headers):
            return False
        if self.ctx.isolation() is not None:
            return False  # h11's path answers 503
        try:
            accepted = handshake.accept(b"GET", head.headers, self.ctx.deflate)
        except handshake.HandshakeError:
            return False  # h11's path answers 400 with the reason
        self.deadline = None  # the whole request arrived in time
        self._switch(accepted, head.target, head.trailing)
        return True

    def _upgrade(self, request: h11.Request) -> None:
        try:
            accepted = handshake.accept(
                request.method, self._upgrade_headers or [], self.ctx.deflate
            )
        except handshake.HandshakeError as exc:
            refusal = http.problem(
                exc.status, "bad_handshake", f"invalid WebSocket handshake: {exc}"
            )
            self._respond(
                http.Response(refusal.status, refusal.body, [*refusal.headers, *exc.headers])
            )
            self._shut()
            return
        trailing, _closed = self._parser().trailing_data
        self._switch(accepted, request.target, trailing)

    def _switch(
        self, accepted: tuple[bytes, Agreement | None], target: bytes, trailing: bytes
    ) -> None:
        """Hand the transport to a WebSocket connection, which answers ``accepted`` (101)."""
        token = None
        if b"?" in target:
            query = parse_qs(urlsplit(target.decode("latin-1")).query)
            token = query.get("token", [None])[0]
        head, agreement = accepted
        websocket = (
            WebSocketConnection(self.ctx)
            if agreement is None
            else DeflateWebSocketConnection(self.ctx, agreement)
        )
        self._hand_over(websocket)
        websocket.start(head, token, trailing)

    async def _start_sse(self, request: h11.Request, stream: http.SseRequest) -> None:
        """Answer ``GET /events`` with an endless event stream carrying a session."""
        head = self._parser().send(h11.Response(status_code=200, headers=_SSE_HEADERS)) or b""
        encoder = SseEncoder(request.http_version != b"1.0", stream.positions)
        events = SseConnection(self.ctx, encoder)
        self._hand_over(events)
        await events.start(head, stream.token, stream.items)


def _log_refusals(pending: PendingConnections, loop: asyncio.AbstractEventLoop) -> None:
    message = pending.report(loop.time())
    if message is not None:
        log.warning("%s", message)


@dataclass(frozen=True, slots=True)
class MonitorLimits:
    """The monitoring port's own bounds: its pending connections are counted apart
    from the client port's (MonitorMaxPendingConnections*), its bodies are small Jolokia
    requests (MonitorMaxRequestBody)."""

    pending: PendingConnections
    max_body: int

    @staticmethod
    def from_settings(settings: MonitoringSettings) -> MonitorLimits:
        pending = PendingConnections(
            settings.monitor_max_pending_connections,
            settings.monitor_max_pending_connections_per_address,
        )
        return MonitorLimits(pending, settings.monitor_max_request_body)


class MonitorConnection(HttpConnection):
    """A connection on the monitoring port: HTTP only (no upgrade, no event stream), its bytes
    are not client traffic, and its pending connections and bodies have their own bounds."""

    __slots__ = ("_monitor_limits",)
    client_port: ClassVar[bool] = False

    def __init__(self, ctx: ConnectionContext, handler: HttpHandler, limits: MonitorLimits) -> None:
        super().__init__(ctx, handler)
        self._monitor_limits = limits

    def _pending_pool(self) -> PendingConnections:
        return self._monitor_limits.pending

    def _max_body(self) -> int:
        return self._monitor_limits.max_body
