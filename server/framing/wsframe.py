"""Server-side WebSocket frame encoding (RFC 6455 section 5.2), for encode-once fan-out.

Server frames are never masked, so one encoded frame is valid for every connection: it is
built once per message (:meth:`OutFrame.ws <pushgrid.server.framing.outframe.OutFrame.ws>`)
and the same bytes are written to each subscriber (permessage-deflate frames are built next to it,
:mod:`server.framing.deflate`, ADR 028). Incoming frames (masked, possibly fragmented) are
parsed by wsproto.
"""

from __future__ import annotations

import struct

from pushgrid.protocol.errors import LocalProtocolError

_OP_TEXT = 0x1
_FIN = 0x80
_MASK = 0x80


def encode_text_frame(payload: bytes) -> bytes:
    """One final, unmasked text frame holding ``payload`` (already UTF-8)."""
    length = len(payload)
    first = _FIN | _OP_TEXT
    if length < 126:
        header = bytes((first, length))
    elif length < 1 << 16:
        header = struct.pack("!BBH", first, 126, length)
    else:
        header = struct.pack("!BBQ", first, 127, length)
    return header + payload


def frame_payload(frame: bytes) -> bytes:
    """The payload of one unmasked frame built by :func:`encode_text_frame`.

    Anything else (a close or ping frame, a fragment, a masked frame) would corrupt a batch or
    the live trace: :class:`LocalProtocolError`, a bug on our side. (Event streams write an
    :class:`~pushgrid.server.framing.outframe.OutFrame`'s payload and never strip a header.)"""
    if len(frame) < 2 or frame[0] != _FIN | _OP_TEXT or frame[1] & _MASK:
        raise LocalProtocolError(f"not one final unmasked text frame: {bytes(frame[:2]).hex()}")
    length = frame[1] & 0x7F
    if length < 126:
        return frame[2:]
    return frame[4:] if length == 126 else frame[10:]


def batch_frame(frames: list[bytes]) -> bytes:
    """One text frame holding a JSON array of the JSON payloads of ``frames`` (a batch)."""
    return encode_text_frame(b"[" + b",".join(frame_payload(f) for f in frames) + b"]")
