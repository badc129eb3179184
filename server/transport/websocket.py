"""A WebSocket connection after the handshake: frames in (wsproto), the session's frames out.

Complete text messages go to the connection's :class:`~server.core.session.Session`, one at a
time and in order; above ``_INBOX_PAUSE`` queued messages the socket is no longer read
(``PAUSED``). Broken framing is answered with a close frame (1002, or 1007 for invalid UTF-8)
before the connection ends. Idle, the object holds no inbox, no fragment list and no task.

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
from collections import deque
from typing import TYPE_CHECKING, ClassVar

from wsproto import ConnectionType
from wsproto.connection import Connection as FrameConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage

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
_OPEN, _PAUSED = ConnState.OPEN, ConnState.PAUSED
_CLOSING, _CLOSED = ConnState.CLOSING, ConnState.CLOSED
_TEXT, _PONG = 0x81, 0x8A  # first header byte: FIN, no RSV bits, opcode text / pong


class WebSocketConnection(Connection):
    __slots__ = ("_framed", "_inbox", "_parts", "_parts_size", "_reader", "_ws")

    initial: ClassVar[ConnState] = ConnState.OPEN

    def __init__(self, ctx: ConnectionContext) -> None:
        super().__init__(ctx)
        self._ws: FrameConnection | None = None  # wsproto, created when first needed
        self._framed = False  # wsproto has read input: every byte goes to it from now on
        self._parts: list[str] | None = None  # the fragments of an unfinished message
        self._parts_size = 0
        self._inbox: deque[str] | None = None  # messages waiting for the session
        self._reader: asyncio.Task[None] | None = None

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
        self._receive(data)

    def _receive(self, data: bytes) -> None:
        if not self._framed:
            data = self._plain_frames(data)
            if not data:
                return
            self._framed = True
        self.ws.receive_data(data)
        self._ws_events()

    def eof_received(self) -> bool | None:
        self._framed = True
        self.ws.receive_data(None)
        self._ws_events()
        return None

    @property
    def ws(self) -> FrameConnection:
        """wsproto's frame connection (framing, close handshake), made on first use."""
        ws = self._ws
        if ws is None:
            ws = self._ws = FrameConnection(ConnectionType.SERVER)
        return ws

    # -- output -----------------------------------------------------------------------------

    def close(self, code: int, reason: str) -> None:
        """Send a close frame after what is queued and stop sending anything else."""
        if self.state is _CLOSING or self.state is _CLOSED or self.transport is None:
            return
        if self.ws.state is not ConnectionState.OPEN:
            self._shut()
            return
        self.flush()
        if self.state is not _OPEN and self.state is not _PAUSED:
            return  # the flush found a slow consumer, which closed already
        self._to(ConnEvent.CLOSE)
        self._write(self.ws.send(CloseConnection(code=code, reason=reason)))
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
        pos, end = 0, len(data)
        while pos < end and (self.state is _OPEN or self.state is _PAUSED):
            if end - pos < 6:
                break
            first, second = data[pos], data[pos + 1]
            length = second & 0x7F
            start = pos + 6
            if second < 0x80 or length == 127:
                break  # unmasked (wsproto refuses it) or a 64-bit length
            if length == 126:
                start += 2
                if start > end:
                    break
                length = int.from_bytes(data[pos + 2 : pos + 4], "big")
                if length < 126:
                    break  # not the shortest length encoding: wsproto refuses it
            stop = start + length
            if stop > end:
                break  # a partial frame: wsproto buffers it
            if first == _TEXT:
                try:
                    text = apply_mask(data[start:stop], data[start - 4 : start]).decode()
                except UnicodeDecodeError:
                    break  # wsproto answers 1007
                self._message(text, length, True)
            elif first != _PONG or length > 125:
                break
            pos = stop
        return data[pos:] if pos else data

    def _ws_events(self) -> None:
        ws = self.ws
        for event in ws.events():
            if isinstance(event, TextMessage):
                self._text(event)
            elif isinstance(event, BytesMessage):
                if event.message_finished and self.session is not None and self._reading():
                    self.session.handle_binary()
            elif isinstance(event, Ping):
                if ws.state is ConnectionState.OPEN:
                    self._write(ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                self._closed_by_client(event)
                return

    def _closed_by_client(self, event: CloseConnection) -> None:
        ws = self.ws
        if ws.state is ConnectionState.REMOTE_CLOSING:
            self.flush()
            self._write(ws.send(event.response()))
        elif ws.state is ConnectionState.OPEN:
            # wsproto could not parse the client's frames (its state stays OPEN): say why
            # with a close frame (1002 framing, 1007 invalid UTF-8), then end.
            self.ctx.security.protocol_errors_total += 1
            self.flush()
            self._write(ws.send(CloseConnection(code=event.code, reason=event.reason)))
        self._shut()

    def _reading(self) -> bool:
        return self.state is _OPEN or self.state is _PAUSED

    def _text(self, event: TextMessage) -> None:
        data = event.data
        size = len(data) if data.isascii() else len(data.encode("utf-8", "replace"))
        self._message(data, size, event.message_finished)

    def _message(self, data: str, size: int, finished: bool) -> None:
        """A text message, or a fragment of one (``size``: its UTF-8 bytes)."""
        size += self._parts_size
        if size > self.ctx.limits.max_frame_size:
            self._parts, self._parts_size = None, 0
            self.close(CloseCode.FRAME_TOO_LARGE, "message above the frame size limit")
            return
        parts = self._parts
        if not finished:
            if parts is None:
                parts = self._parts = []
            parts.append(data)
            self._parts_size = size
            return
        if parts is not None:
            parts.append(data)
            data = "".join(parts)
            self._parts = None
        self._parts_size = 0
        if self.session is None or not self._reading():
            return
        self._queue(self.session, data)

    def _queue(self, session: Session, text: str) -> None:
        inbox = self._inbox
        if inbox is None:
            inbox = self._inbox = deque()
        inbox.append(text)
        if len(inbox) >= _INBOX_PAUSE and self.state is _OPEN and self.transport is not None:
            self._to(ConnEvent.PAUSE)
            self.transport.pause_reading()
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read_inbox(session, inbox))

    async def _read_inbox(self, session: Session, inbox: deque[str]) -> None:
        handled = 0
        try:
            while inbox and self._reading():
                await session.handle_text(inbox.popleft())
                handled += 1
                if handled % _FAIR_SHARE == 0:
                    # An in-memory publish never suspends: without this, one client's backlog
                    # would run to its end before any other connection is served.
                    await asyncio.sleep(0)
                if self.state is _PAUSED and len(inbox) <= _INBOX_RESUME and self.transport:
                    self._to(ConnEvent.RESUME)
                    self.transport.resume_reading()
        except Exception:
            log.exception("session %s failed", session.id)
            self.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self._reader = None
            if not inbox and self._inbox is inbox:
                self._inbox = None  # idle: no deque kept
