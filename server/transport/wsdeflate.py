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
from typing import TYPE_CHECKING, ClassVar

from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.frame_protocol import CloseReason, FrameDecoder, FrameProtocol, Opcode, RsvBits

from pushgrid.kernel.throttle import host_of
from pushgrid.protocol.errors import CloseCode

from ..framing.deflate import Agreement, Compressor
from ..framing.wsframe import batch_frame, frame_payload
from .inflating import InflatingBudget
from .websocket import WebSocketConnection

if TYPE_CHECKING:
    from ..framing.outframe import OutFrame
    from .context import ConnectionContext, Deflate

_TAIL = b"\x00\x00\xff\xff"
_RSV1 = RsvBits(True, False, False)  # the bit this extension owns


class BoundedInflate(PerMessageDeflate):
    """wsproto's permessage-deflate for what the client sends, with the inflated size of a
    message bounded by ``limit`` (wsproto's own inflates without bound), the inflated bytes of
    an unfinished message charged to ``budget`` for the client's address until it is whole,
    a control frame between fragments leaving the message's state alone (RFC 6455 5.4; wsproto
    forgets that the message is compressed), and a deflate stream that ended (a block with
    BFINAL) never fed more data: what follows it in the message is refused with 1007, and
    the next message starts a new stream (wsproto kept the ended inflater, which silently
    swallowed every later message and grew without bound).

    ``refusal``: why a charge was refused (the close frame's reason, 1008).
    """

    def __init__(
        self, agreement: Agreement, limit: int, budget: InflatingBudget, host: str
    ) -> None:
        super().__init__()
        # wsproto parses the answer we sent: the same parameters on both sides
        self.finalize(agreement.response())
        self.limit = limit
        self.refusal: str | None = None
        self._budget = budget
        self._host = host
        self._inflated = 0  # bytes inflated for the current message
        self._charged = 0  # of which charged to the budget (until the message is whole)
        self._control = False  # the frame being read is a control frame

    def release(self) -> None:
        """Give back what the current message charged (it is whole, or the connection ends)."""
        self._budget.release(self._host, self._charged)
        self._charged = 0

    def frame_inbound_header(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        payload_length: int,
    ) -> CloseReason | RsvBits:
        self._control = opcode.iscontrol()
        if self._control:
            return CloseReason.PROTOCOL_ERROR if rsv.rsv1 else _RSV1
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
        if decompressor.eof and decompressor.unused_data not in (b"", _TAIL):
            return CloseReason.INVALID_FRAME_PAYLOAD_DATA  # data after the stream's last block
        self._inflated += len(out)
        if self._inflated > self.limit:
            return CloseReason.MESSAGE_TOO_BIG
        self.refusal = self._budget.charge(self._host, len(out))
        if self.refusal is not None:
            return CloseReason.POLICY_VIOLATION
        self._charged += len(out)
        return out

    def frame_inbound_payload_data(
        self, proto: FrameDecoder | FrameProtocol, data: bytes
    ) -> bytes | CloseReason:
        if self._control or not self._inbound_compressed or not self._inbound_is_compressible:
            return data
        return self._inflate(bytes(data))

    def frame_inbound_complete(
        self, proto: FrameDecoder | FrameProtocol, fin: bool
    ) -> bytes | CloseReason | None:
        if self._control:
            return None  # the message around it (if any) goes on as it was
        if not fin or not self._inbound_is_compressible or not self._inbound_compressed:
            return super().frame_inbound_complete(proto, fin)
        out = self._inflate(_TAIL)
        if isinstance(out, CloseReason):
            return out
        decompressor = self._decompressor
        if self.client_no_context_takeover or (decompressor is not None and decompressor.eof):
            self._decompressor = None  # an ended stream takes nothing more: the next is new
        self._inbound_compressed = None
        self.release()
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

    __slots__ = ("_agreement", "_counted", "_deflate", "_inflate", "_own", "_shared")

    compressed: ClassVar[bool] = True

    def __init__(self, ctx: ConnectionContext, agreement: Agreement) -> None:
        super().__init__(ctx)
        deflate = ctx.deflate
        assert deflate is not None  # an agreement comes from it
        self._deflate: Deflate = deflate
        self._agreement = agreement
        # the shared compressor (no server context takeover) or None: ours, made on first use
        self._shared: Compressor | None = None
        self._own: Compressor | None = None
        self._inflate: BoundedInflate | None = None  # made with wsproto's connection
        if agreement.server_no_context_takeover:
            self._shared = deflate.shared(agreement.server_bits)
        self._counted = agreement.holds_context  # in deflate.contexts until the connection ends
        if self._counted:
            deflate.contexts += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if self._counted:
            self._counted = False
            self._deflate.contexts -= 1
        if self._inflate is not None:
            self._inflate.release()  # an unfinished message's inflated bytes
        super().connection_lost(exc)

    def _extensions(self) -> list[Extension]:
        limit = self.ctx.limits.max_frame_size
        inflate = self._inflate = BoundedInflate(
            self._agreement, limit, self._deflate.inflating, host_of(self.remote)
        )
        return [*super()._extensions(), inflate]

    def _refusal(self, code: int) -> str | None:
        inflate = self._inflate
        if code == CloseCode.POLICY_VIOLATION and inflate is not None:
            return inflate.refusal
        return None

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
        self.frames_out += 1
        self._enqueue(self.framed(frame))

    deliver = WebSocketConnection.deliver_through_send  # its own framing (core/accounting.py)

    def flush(self) -> None:
        self._settle()  # the counts before the outbox changes shape (Connection._settle)
        self._held = False
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
