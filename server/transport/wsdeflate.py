"""A WebSocket connection that agreed on permessage-deflate (RFC 7692, ADR 028).

Out: without server context takeover, each message's compressed frame is built once and shared
by every such connection (cached on the :class:`~server.framing.outframe.OutFrame` next to the
plain frame); with it, this connection's own compressor compresses its frames in order when
they are flushed. With batching on, the batch (one JSON array) is compressed as one message.
In: compressed messages are inflated by :class:`BoundedInflate`, which refuses a message
whose inflated size passes the hard frame limit with 1009 (a decompression bomb costs at most
that much memory and one chunk of CPU).
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.frame_protocol import CloseReason, FrameDecoder, FrameProtocol, Opcode, RsvBits

from ..framing.deflate import Agreement, Compressor
from ..framing.wsframe import batch_frame, frame_payload
from .websocket import WebSocketConnection

if TYPE_CHECKING:
    from ..framing.outframe import OutFrame
    from .context import ConnectionContext, Deflate

_TAIL = b"\x00\x00\xff\xff"


class BoundedInflate(PerMessageDeflate):
    """wsproto's permessage-deflate for what the client sends, with the inflated size of a
    message bounded by ``limit`` (wsproto's own inflates without bound)."""

    def __init__(self, agreement: Agreement, limit: int) -> None:
        super().__init__()
        # wsproto parses the answer we sent: the same parameters on both sides
        self.finalize(agreement.response())
        self.limit = limit
        self._inflated = 0

    def frame_inbound_header(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        payload_length: int,
    ) -> CloseReason | RsvBits:
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            self._inflated = 0  # a new message
        return super().frame_inbound_header(proto, opcode, rsv, payload_length)

    def _inflate(self, data: bytes) -> bytes | CloseReason:
        decompressor = self._decompressor
        assert decompressor is not None  # set by frame_inbound_header for compressed messages
        try:
            out = decompressor.decompress(data, self.limit - self._inflated + 1)
        except zlib.error:
            return CloseReason.INVALID_FRAME_PAYLOAD_DATA
        self._inflated += len(out)
        return CloseReason.MESSAGE_TOO_BIG if self._inflated > self.limit else out

    def frame_inbound_payload_data(
        self, proto: FrameDecoder | FrameProtocol, data: bytes
    ) -> bytes | CloseReason:
        if not self._inbound_compressed or not self._inbound_is_compressible:
            return data
        return self._inflate(bytes(data))

    def frame_inbound_complete(
        self, proto: FrameDecoder | FrameProtocol, fin: bool
    ) -> bytes | CloseReason | None:
        if not fin or not self._inbound_is_compressible or not self._inbound_compressed:
            return super().frame_inbound_complete(proto, fin)
        out = self._inflate(_TAIL)
        if isinstance(out, CloseReason):
            return out
        if self.client_no_context_takeover:
            self._decompressor = None
        self._inbound_compressed = None
        return out

    def frame_outbound(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        data: bytes,
        fin: bool,
    ) -> tuple[RsvBits, bytes]:
        # wsproto only sends our control frames (close, ping), never compressed
        return rsv, data


class DeflateWebSocketConnection(WebSocketConnection):
    """A :class:`WebSocketConnection` whose data frames may be compressed."""

    __slots__ = ("_agreement", "_counted", "_deflate", "_own", "_shared")

    def __init__(self, ctx: ConnectionContext, agreement: Agreement) -> None:
        super().__init__(ctx)
        deflate = ctx.deflate
        assert deflate is not None  # an agreement comes from it
        self._deflate: Deflate = deflate
        self._agreement = agreement
        # the shared compressor (no server context takeover) or None: ours, made on first use
        self._shared: Compressor | None = None
        self._own: Compressor | None = None
        if agreement.server_no_context_takeover:
            self._shared = deflate.shared(agreement.server_bits)
        self._counted = agreement.holds_context  # in deflate.contexts until the connection ends
        if self._counted:
            deflate.contexts += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if self._counted:
            self._counted = False
            self._deflate.contexts -= 1
        super().connection_lost(exc)

    def _extensions(self) -> list[Extension]:
        limit = self.ctx.limits.max_frame_size
        return [*super()._extensions(), BoundedInflate(self._agreement, limit)]

    # -- output -----------------------------------------------------------------------------

    def _compressed_at_flush(self) -> bool:
        """Frames are queued plain and compressed when flushed (own context, or batches)."""
        return self._shared is None or (self.batched and self.ctx.batching is not None)

    def framed(self, frame: OutFrame) -> bytes:
        shared = self._shared
        if shared is None or self._compressed_at_flush():
            return frame.ws_frame or frame.ws()
        data = frame.wsz_frame
        if data is None:
            data = frame.wsz_frame = shared.frame(frame.payload) or frame.ws()
        deflate = self._deflate
        deflate.uncompressed_bytes += frame.ws_size()
        deflate.compressed_bytes += len(data)
        return data

    def send(self, frame: OutFrame) -> None:
        self._enqueue(self.framed(frame))

    def flush(self) -> None:
        outbox = self._outbox
        if outbox and self._compressed_at_flush():
            if self.batched and self.ctx.batching is not None and len(outbox) > 1:
                outbox[:] = [batch_frame(outbox)]
            outbox[:] = [self._compress(frame) for frame in outbox]
        super().flush()

    def _compress(self, frame: bytes) -> bytes:
        compressor = self._shared
        if compressor is None:
            compressor = self._own
            if compressor is None:
                agreement = self._agreement
                compressor = self._own = Compressor(
                    self._deflate.options, agreement.server_bits, keep=True
                )
        payload = frame_payload(frame)
        data = compressor.frame(payload) or frame
        deflate = self._deflate
        deflate.uncompressed_bytes += len(frame)
        deflate.compressed_bytes += len(data)
        return data
