"""An event stream (``GET /events``, SSE) after its response head: a session that only writes.

Each frame the session sends becomes one SSE event (:class:`~server.transport.sse.SseEncoder`),
written from the frame's payload and the position it carries: no WebSocket header to strip,
nothing decoded (ADR 018). Nothing the client sends is read any more. Closing sends a last
``closing`` event and the end of the body, then closes the transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pushgrid.protocol.frames import Closing, SubscribeItem

from ..framing.outframe import OutFrame
from .connection import Connection
from .sse import SseEncoder
from .states import ConnEvent, ConnState

if TYPE_CHECKING:
    from .context import ConnectionContext

_STREAMING, _CLOSING, _CLOSED = ConnState.STREAMING, ConnState.CLOSING, ConnState.CLOSED


class SseConnection(Connection):
    __slots__ = ("encoder",)

    initial: ClassVar[ConnState] = ConnState.STREAMING
    batched: ClassVar[bool] = False  # one event per frame: SSE has no batch framing
    transport_kind: ClassVar[str] = "sse"

    def __init__(self, ctx: ConnectionContext, encoder: SseEncoder) -> None:
        super().__init__(ctx)
        self.encoder = encoder

    async def start(self, head: bytes, token: str | None, items: list[SubscribeItem]) -> None:
        """Send the response head, open the session and subscribe it to the stream's subjects."""
        if self._open_session(head, token) and self.session is not None:
            await self.session.subscribe(items)

    def data_received(self, data: bytes) -> None:
        self._count_in(len(data))  # an event stream reads nothing more from the client

    def eof_received(self) -> bool | None:
        return None  # asyncio closes the transport

    def send(self, frame: OutFrame) -> None:
        if self.state is _CLOSING or self.state is _CLOSED:
            return
        self.frames_out += 1
        self._enqueue(self.encoder.event(frame))

    deliver = Connection.deliver_through_send  # its own framing (core/accounting.py)

    def framed(self, frame: OutFrame) -> bytes:
        return self.encoder.event(frame)

    def close(self, code: int, reason: str) -> None:
        """Send a last ``closing`` event and the end of the body, then close."""
        if self.state is not _STREAMING or self.transport is None:
            return
        self.flush()
        if self.state is not _STREAMING:
            return  # the flush found a slow consumer, which closed already
        self._to(ConnEvent.CLOSE)
        closing = self.encoder.event(OutFrame.of(Closing(code, reason)))
        self._write(closing + self.encoder.end())
        self.transport.close()
        self.deadline = self.ctx.tick + self.ctx.limits.shutdown_timeout + 1.0
