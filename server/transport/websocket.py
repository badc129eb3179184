"""A WebSocket connection after the handshake: frames in (wsproto), the session's frames out.

Everything the client sends goes through one inbox, in the order it arrived: complete text
messages (to the connection's :class:`~server.core.session.Session`, one at a time), binary
messages (refused by the session), pings (answered with a pong after the answers to earlier
requests) and the client's close frame. Above ``_INBOX_PAUSE`` queued items, or once the
queued text passes ``MaxInboundBufferSize`` bytes, the socket is no longer read (``PAUSED``);
at the byte bound the frames already received stay unparsed (and, compressed, uninflated) in
wsproto's buffer until the inbox has drained, so what one read inflates is bounded too (issue
34 item 2 row 1). When the client's close frame (or the end of its input) arrives, the
connection is ``FINISHING``: nothing more is read, what came before is handled and answered,
and only then does the close answer leave (a publish sent just before a close is stored and
answered). Broken framing is answered with a close frame (1002, or 1007 for invalid UTF-8)
before the connection ends; a message whose declared length passes the hard frame limit is
refused with 1009 at its frame header, before its payload is read (:class:`_MessageSizeGuard`).
Idle, the object holds no inbox, no fragment list and no task.

Until the client sends anything else, its whole masked text frames (and pongs) are read here
without wsproto (:func:`_plain_frames`, ADR 019): a connection storm's subscribe frames cost a
fraction of wsproto's generators. The first frame this fast path does not take (a close, a
ping, a fragment, a partial frame, anything malformed) and everything after it go to wsproto,
which handles and refuses them as before; wsproto's ``Connection`` is only created then, or
when the server first sends a ping or a close.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import deque
from typing import TYPE_CHECKING, ClassVar

from wsproto import ConnectionType
from wsproto.connection import Connection as FrameConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage
from wsproto.extensions import Extension
from wsproto.frame_protocol import CloseReason, FrameDecoder, FrameProtocol, Opcode, RsvBits

try:
    from websockets.speedups import apply_mask
except ImportError:  # websockets without its C extension
    from websockets.utils import apply_mask

from pushgrid.protocol.errors import CloseCode

from .connection import Connection
from .states import ConnEvent, ConnState

if TYPE_CHECKING:
    from ..core.session import Session
    from .context import ConnectionContext

log = logging.getLogger(__name__)

_INBOX_PAUSE = 1000  # queued inbound messages at which we stop reading from the socket
_INBOX_RESUME = 100
_FAIR_SHARE = 8  # requests of one connection handled before the others get their turn
_OPEN, _PAUSED, _FINISHING = ConnState.OPEN, ConnState.PAUSED, ConnState.FINISHING
_CLOSING, _CLOSED = ConnState.CLOSING, ConnState.CLOSED
_TEXT, _PONG = 0x81, 0x8A  # first header byte: FIN, no RSV bits, opcode text / pong
_NO_RSV = RsvBits(False, False, False)
_BINARY = BytesMessage(data=b"")  # a whole binary message in the inbox (its bytes are dropped)
# What the inbox holds, in arrival order: a text message, or a wsproto event (Ping, a binary
# message, the client's CloseConnection).
InboxItem = str | Ping | BytesMessage | CloseConnection


#: how long a refused client may go on sending before we cut: enough for a few MB on a LAN
LINGER_SECONDS = 2.0
#: input quiet this long after a refusal: the client has stopped sending, closing resets nothing
LINGER_QUIET = 0.2


class _MessageSizeGuard(Extension):
    """Refuses a data frame at its header when the message it belongs to would pass ``limit``
    bytes (the hard frame limit): wsproto then reports a 1009 close before reading the payload.

    wsproto's extension hooks are the one place it shows a frame's declared length; this
    "extension" is never offered to the client and uses no RSV bit.
    """

    name = "pushgrid-message-size"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._message = 0  # declared bytes of the data frames of the current message

    def enabled(self) -> bool:
        return True

    def offer(self) -> bool:
        return False

    def frame_inbound_header(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        payload_length: int,
    ) -> CloseReason | RsvBits:
        if opcode.iscontrol():
            return _NO_RSV  # may come between fragments: the message goes on
        if opcode is Opcode.CONTINUATION:
            self._message += payload_length
        else:
            self._message = payload_length  # a text or binary frame starts a message
        return CloseReason.MESSAGE_TOO_BIG if self._message > self.limit else _NO_RSV


def _pong(payload: bytes) -> bytes:
    """An unmasked pong frame (a ping's payload is at most 125 bytes): built here because
    wsproto sends none once the client's close frame has arrived."""
    return bytes((_PONG, len(payload))) + payload


class WebSocketConnection(Connection):
    __slots__ = (
        "_framed",
        "_heard",
        "_inbox",
        "_inbox_bytes",
        "_lingering",
        "_parts",
        "_reader",
        "_stalled",
        "_ws",
    )

    initial: ClassVar[ConnState] = ConnState.OPEN

    def __init__(self, ctx: ConnectionContext) -> None:
        super().__init__(ctx)
        self._ws: FrameConnection | None = None  # wsproto, created when first needed
        self._framed = False  # wsproto has read input: every byte goes to it from now on
        self._parts: list[str] | None = None  # the fragments of an unfinished message
        self._inbox: deque[InboxItem] | None = None  # what waits for the session, in order
        self._inbox_bytes = 0  # memory of the text messages in the inbox (sys.getsizeof)
        self._stalled = False  # wsproto's buffer is left unparsed until the inbox drains
        self._reader: asyncio.Task[None] | None = None
        self._lingering = False  # refused frames: input is read and dropped until the client ends
        self._heard = 0.0  # loop time of the last input while lingering

    def start(self, accepted: bytes, token: str | None, trailing: bytes) -> None:
        """Send the 101 answer, open the session, then read what followed the request."""
        self._open_session(accepted, token)
        if trailing:
            self._receive(trailing)  # counted by the HTTP connection

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._reader is not None:
            self._reader.cancel()

    def data_received(self, data: bytes) -> None:
        self._count_in(len(data))
        if self._lingering:
            self._heard = asyncio.get_running_loop().time()
            return  # after our close frame refusing its frames: dropped
        if self.state is _FINISHING:
            return  # after the client's close frame: nothing more is read
        self._receive(data)

    def _receive(self, data: bytes) -> None:
        if not self._framed:
            data = self._plain_frames(data)
            if not data:
                return
            self._framed = True
        self.ws.receive_data(data)
        if not self._stalled:
            self._ws_events()

    def eof_received(self) -> bool | None:
        if self._lingering:
            return None  # the client ended after our refusal: close now
        if self.state is not _FINISHING:
            self._framed = True
            self.ws.receive_data(None)
            self._ws_events()
        # Still answering what the client sent before its close (or its end of input): keep
        # the transport open for writing (TCP half-close; a TLS transport closes regardless).
        transport = self.transport
        if self.state is _FINISHING and transport is not None:
            return transport.get_extra_info("sslcontext") is None
        return None

    @property
    def ws(self) -> FrameConnection:
        """wsproto's frame connection (framing, close handshake), made on first use."""
        ws = self._ws
        if ws is None:
            ws = self._ws = FrameConnection(ConnectionType.SERVER, extensions=self._extensions())
        return ws

    def _extensions(self) -> list[Extension]:
        """What wsproto runs on incoming frames: the size guard (and, agreed, inflation)."""
        return [_MessageSizeGuard(self.ctx.limits.max_frame_size)]

    # -- output -----------------------------------------------------------------------------

    def close(self, code: int, reason: str) -> None:
        """Send a close frame after what is queued and stop sending anything else."""
        state = self.state
        if state is _CLOSING or state is _CLOSED or self.transport is None:
            return
        ws = self.ws
        if ws.state is not ConnectionState.OPEN and ws.state is not ConnectionState.REMOTE_CLOSING:
            self._shut()
            return
        self.flush()
        if self.state is not state:
            return  # the flush found a slow consumer, which closed already
        frame = ws.send(CloseConnection(code=code, reason=reason))
        if state is _FINISHING:
            # The client's close came first: ours completes the handshake (what is still in
            # the inbox is dropped: a shutdown, a server fault or a slow consumer).
            self._write(frame)
            self._shut()
            return
        self._to(ConnEvent.CLOSE)
        self._write(frame)
        self.deadline = self.ctx.tick + self.ctx.limits.shutdown_timeout + 1.0

    def ping(self) -> None:
        if self.ws.state is ConnectionState.OPEN and self.state in (_OPEN, _PAUSED):
            self.flush()
            self._write(self.ws.send(Ping(payload=b"pushgrid")))
            self.last_ping = self.ctx.tick

    # -- input ------------------------------------------------------------------------------

    def _plain_frames(self, data: bytes) -> bytes:
        """Read the whole masked text and pong frames at the start of ``data`` (pongs are
        ignored, as with wsproto); return the rest, from the first byte left to wsproto."""
        pos = 0
        while pos < len(data) and (self.state is _OPEN or self.state is _PAUSED):
            frame = _plain_frame_at(data, pos)
            if frame is None:
                break
            first, start, stop = frame
            if first == _TEXT:
                try:
                    text = apply_mask(data[start:stop], data[start - 4 : start]).decode()
                except UnicodeDecodeError:
                    break  # wsproto answers 1007
                self._message(text, True)
            elif first != _PONG or stop - start > 125:
                break
            pos = stop
        return data[pos:] if pos else data

    def _inbound_limit(self) -> int:
        return self.ctx.limits.max_inbound_buffer_size

    def _ws_events(self) -> None:
        limit = self._inbound_limit()
        for event in self.ws.events():
            if isinstance(event, TextMessage):
                self._text(event)
            elif isinstance(event, BytesMessage):
                if event.message_finished:
                    self._request(_BINARY)
            elif isinstance(event, Ping):
                self._request(event)  # answered in turn: after the answers to earlier requests
            elif isinstance(event, CloseConnection):
                self._closed_by_client(event)
                return
            if self._inbox_bytes >= limit and self._reading():
                self._stall()
                return

    def _stall(self) -> None:
        """The inbox holds MaxInboundBufferSize: parse (and inflate) nothing more, read
        nothing more, until it has drained (:meth:`_resume`). Not a close: backpressure."""
        self._stalled = True
        if self.state is _OPEN and self.transport is not None:
            self._to(ConnEvent.PAUSE)
            self.transport.pause_reading()

    def _resume(self) -> None:
        """The inbox drained: parse what wsproto holds (which may fill it again, or bring the
        client's close), then read the socket again."""
        if self._stalled:
            self._stalled = False
            self._ws_events()
            if self._stalled or self.state is not _PAUSED:
                return
        if self.transport is not None:
            self._to(ConnEvent.RESUME)
            self.transport.resume_reading()

    def _closed_by_client(self, event: CloseConnection) -> None:
        ws = self.ws
        if ws.state is ConnectionState.OPEN:
            self._refuse_frames(event)
            return
        if not self._reading():
            self._shut()  # the answer to our close frame (or the end of input after it)
            return
        # The client's close frame (REMOTE_CLOSING) or the end of its input (CLOSED): what it
        # sent before is answered first, then the close (FINISHING).
        self._to(ConnEvent.PEER_CLOSE)
        self.deadline = self.ctx.tick + self.ctx.limits.finish_timeout
        session = self.session
        if self._reader is None and (session is None or not session.answers):
            self._finish(event)
        else:  # after the requests in the inbox and the publishes in flight
            self._queue(event)

    def _refuse_frames(self, event: CloseConnection) -> None:
        """wsproto could not parse the client's frames (its state stays OPEN): say why with a
        close frame (1002 framing, 1007 invalid UTF-8, 1009 a message above the limit), end."""
        ws = self.ws
        refusal = self._refusal(event.code)
        if event.code == CloseCode.FRAME_TOO_LARGE:
            reason = "message above the frame size limit"
        elif refusal is not None:
            reason = refusal
        else:
            self.ctx.security.protocol_errors_total += 1
            reason = event.reason or ""
        self.flush()
        self._write(ws.send(CloseConnection(code=event.code, reason=reason)))
        self._linger()

    def _refusal(self, code: int) -> str | None:
        """The reason of a refusal an extension made (None: wsproto's own)."""
        return None

    def _linger(self) -> None:
        """Close after a refusal without resetting. Closing a socket with input unread sends a
        TCP reset, which can destroy our close frame before a client still sending (the rest of
        an oversized message) reads it. So what still comes is read and dropped, and the socket
        closes once input has been quiet for LINGER_QUIET, at the client's end of input, or at
        the latest after LINGER_SECONDS (the ticker aborts at the deadline). No half-close: a
        client that reads our FIN while its own writes are pending can fail in its teardown
        (asyncio's transport, under the `websockets` library, seen in test_websocket_close)."""
        transport = self.transport
        if transport is None:
            return
        if not transport.is_reading():
            transport.resume_reading()  # paused by a full inbox: what still comes is dropped
        self._lingering = True
        self._to(ConnEvent.CLOSE)
        self.deadline = self.ctx.tick + LINGER_SECONDS
        loop = asyncio.get_running_loop()
        self._heard = loop.time()
        loop.call_later(LINGER_QUIET, self._close_when_quiet)

    def _close_when_quiet(self) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        loop = asyncio.get_running_loop()
        quiet = loop.time() - self._heard
        if quiet >= LINGER_QUIET:
            transport.close()
        else:
            loop.call_later(LINGER_QUIET - quiet, self._close_when_quiet)

    def _finish(self, event: CloseConnection) -> None:
        """Everything the client sent before its close is answered: answer the close, end."""
        ws = self.ws
        self.flush()
        if ws.state is ConnectionState.REMOTE_CLOSING:
            self._write(ws.send(event.response()))
        self._shut()

    def _reading(self) -> bool:
        """The client's input is still read (no close frame from either side yet)."""
        return self.state is _OPEN or self.state is _PAUSED

    def _serving(self) -> bool:
        """Requests already received are still handled and answered."""
        state = self.state
        return state is _OPEN or state is _PAUSED or state is _FINISHING

    def _text(self, event: TextMessage) -> None:
        self._message(event.data, event.message_finished)

    def _message(self, data: str, finished: bool) -> None:
        """A text message, or a fragment of one (the hard frame limit was checked on the
        frame headers, by _MessageSizeGuard)."""
        parts = self._parts
        if not finished:
            if parts is None:
                parts = self._parts = []
            parts.append(data)
            return
        if parts is not None:
            parts.append(data)
            data = "".join(parts)
            self._parts = None
        self._request(data)

    def _request(self, item: InboxItem) -> None:
        """Something the client sent, handled in turn (dropped once input is no longer read)."""
        if self.session is not None and self._reading():
            self._queue(item)

    def _queue(self, item: InboxItem) -> None:
        session = self.session
        if session is None:
            return
        inbox = self._inbox
        if inbox is None:
            inbox = self._inbox = deque()
        inbox.append(item)
        if isinstance(item, str):
            self._inbox_bytes += sys.getsizeof(item)
        full = len(inbox) >= _INBOX_PAUSE or self._inbox_bytes >= self._inbound_limit()
        if full and self.state is _OPEN and self.transport is not None:
            self._to(ConnEvent.PAUSE)
            self.transport.pause_reading()
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read_inbox(session, inbox))

    def _answer(self, session: Session, item: Ping | BytesMessage | CloseConnection) -> None:
        """An inbox item other than a text message, in its turn."""
        if isinstance(item, Ping):
            self.flush()  # the answers to earlier requests leave first
            if self._serving():  # (the flush may have found a slow consumer, now closed)
                self._write(_pong(bytes(item.payload)))
        elif isinstance(item, CloseConnection):
            self._finish(item)
        else:
            session.handle_binary()

    async def _read_inbox(self, session: Session, inbox: deque[InboxItem]) -> None:
        handled = 0
        try:
            while inbox and self._serving():
                item = inbox.popleft()
                if isinstance(item, str):
                    self._inbox_bytes -= sys.getsizeof(item)
                    await session.handle_text(item)
                else:
                    await session.answers.settle()  # the publishes in flight answer first
                    self._answer(session, item)
                handled += 1
                if handled % _FAIR_SHARE == 0:
                    # An in-memory publish never suspends: without this, one client's backlog
                    # would run to its end before any other connection is served.
                    await asyncio.sleep(0)
                if self.state is _PAUSED and self._drained(inbox):
                    self._resume()
        except Exception:
            log.exception("session %s failed", session.id)
            self.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self._reader = None
            if not inbox and self._inbox is inbox:
                self._inbox = None  # idle: no deque kept

    def _drained(self, inbox: deque[InboxItem]) -> bool:
        """The inbox is small enough again to read more: by count and by bytes."""
        return len(inbox) <= _INBOX_RESUME and self._inbox_bytes <= self._inbound_limit() // 2


def _plain_frame_at(data: bytes, pos: int) -> tuple[int, int, int] | None:
    """(first byte, payload start, payload stop) of the whole masked frame at ``pos`` when the
    fast path may read it; None leaves it to wsproto (short, unmasked, 64-bit or non-shortest
    length, or partial)."""
    end = len(data)
    if end - pos < 6:
        return None
    first, second = data[pos], data[pos + 1]
    length = second & 0x7F
    start = pos + 6
    if second < 0x80 or length == 127:
        return None  # unmasked (wsproto refuses it) or a 64-bit length
    if length == 126:
        start += 2
        if start > end:
            return None
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if length < 126:
            return None  # not the shortest length encoding: wsproto refuses it
    stop = start + length
    if stop > end:
        return None  # a partial frame: wsproto buffers it
    return first, start, stop
