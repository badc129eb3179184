"""One outgoing server frame, JSON-encoded once; each transport frames it its own way.

An :class:`OutFrame` is what the hub fans out and a session sends (ADR 018): the payload bytes
(the JSON object, encoded once per message), what the frame does to a subscriber's position
(known from the value it was built from, never decoded back), and, built on first use and then
shared by every WebSocket subscriber, the WebSocket frame. A WebSocket connection writes
:meth:`OutFrame.ws`; an event stream (SSE) writes the payload as an event and tracks positions
from :attr:`OutFrame.move`; a batch joins payloads.
"""

from __future__ import annotations

import msgspec

from pushgrid.protocol.codec import encode
from pushgrid.protocol.frames import MessageFrame, ServerFrame, Subscribed

from .wsframe import encode_text_frame

# What a frame does to the position of ``subject`` in a stream (bit flags, ``OutFrame.move``).
#: the position becomes (epoch, seq) once this frame is sent
SETS = 1
#: a message opening a subscription (snapshot, recovered, historical): a ``subscribed``
#: position still pending for the same subject waits until these have been sent
OPENS = 2
#: a ``subscribed`` answer whose position holds only after its opening messages
PENDS = 4

_OPENING_KINDS = ("snapshot", "recovered", "historical")


class OutFrame(msgspec.Struct, gc=False):
    """A server frame's payload, the position it moves, and its cached WebSocket frame.

    A msgspec Struct without GC tracking: built in C (one per message on the fan-out path) and,
    holding only bytes, str and int, it cannot be part of a cycle; the queues and buffers that
    hold many of them are never walked by the collector. The engine never builds or keeps
    one: the hub frames its values (``server/core/outgoing.py``, ADR 024).
    """

    payload: bytes
    move: int = 0
    subject: str = ""
    epoch: str = ""
    seq: int = 0
    #: the WebSocket frame once :meth:`ws` built it (hot paths read it before calling)
    ws_frame: bytes | None = None
    #: the permessage-deflate frame without context (or the plain one where compression does
    #: not pay), built once by the first such connection and shared (ADR 028)
    wsz_frame: bytes | None = None

    def ws(self) -> bytes:
        """The WebSocket text frame (unmasked, valid for every connection), built once."""
        frame = self.ws_frame
        if frame is None:
            frame = self.ws_frame = encode_text_frame(self.payload)
        return frame

    def ws_size(self) -> int:
        """The length of :meth:`ws`, without building it (the hub counts WebSocket bytes)."""
        length = len(self.payload)
        return length + (2 if length < 126 else 4 if length < 1 << 16 else 10)

    @classmethod
    def message(cls, message: MessageFrame) -> OutFrame:
        """A ``message`` frame; its position rule comes from the struct, before encoding."""
        move = OPENS if message.kind in _OPENING_KINDS else 0
        if message.kind == "snapshot" or message.qos == "guaranteed" or message.conflated:
            move |= SETS
        return cls(encode(message), move, message.subject, message.epoch, message.seq)

    @classmethod
    def of(cls, frame: ServerFrame) -> OutFrame:
        """Any server frame (control frames and ``subscribed`` answers)."""
        # exact types: isinstance on a msgspec Struct class costs ~140 ns, twice per frame
        if type(frame) is MessageFrame:
            return cls.message(frame)
        if (
            type(frame) is Subscribed
            and frame.status == "allow"
            and frame.epoch is not None
            and frame.seq is not None
        ):
            move = SETS if frame.recovery == "up_to_date" else PENDS
            return cls(encode(frame), move, frame.subject, frame.epoch, frame.seq)
        return cls(encode(frame))
