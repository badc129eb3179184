"""permessage-deflate (RFC 7692) without I/O: the offer a client makes, the answer we give, and
the compressed frames we send (ADR 028).

Two ways to compress what the server sends:

- **no server context takeover** (the default): every message is compressed on its own, so the
  compressed frame is the same for every connection that agreed on the same window, and it is
  built once per message and shared like the plain frame (ADR 018, encode-once fan-out). One
  compressor per process and window size does it, with a full flush after each message: a full
  flush byte-aligns the output and forgets the history, so the next message refers to nothing
  before it (what a fresh compressor would give, without allocating ~256 KiB per message).
- **server context takeover**: one compressor per connection keeps its window between
  messages (a sync flush): smaller frames, built per connection, ~(2^(bits+2) + 128 KiB) of
  zlib state each, which ``DeflateMaxContexts`` bounds.

A payload below ``DeflateMinSize`` bytes, or one that would not shrink, is sent as a plain frame
(RSV1 clear), which RFC 7692 allows at any time and which leaves any context untouched.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

_FIN_TEXT_RSV1 = 0x80 | 0x40 | 0x01
_TAIL = b"\x00\x00\xff\xff"  # what a sync or full flush ends with; RFC 7692 7.2.1 drops it
_NAME = "permessage-deflate"
# zlib refuses 8 for raw deflate: offers asking the server for 8 are declined (RFC 7692 allows)
_MIN_BITS, _MAX_BITS = 9, 15
_FLAGS = ("server_no_context_takeover", "client_no_context_takeover")
_BITS = ("server_max_window_bits", "client_max_window_bits")


@dataclass(frozen=True, slots=True)
class DeflateOptions:
    """What the server is configured to agree to (docs/configuration.md, ``Deflate*``)."""

    server_no_context_takeover: bool = True
    client_no_context_takeover: bool = True
    max_window_bits: int = 15
    min_size: int = 128
    level: int = 6


@dataclass(frozen=True, slots=True)
class Agreement:
    """What one connection agreed to: the server's and client's windows and takeovers."""

    server_no_context_takeover: bool
    client_no_context_takeover: bool
    server_bits: int
    #: None: the client did not offer ``client_max_window_bits`` (it may use 15)
    client_bits: int | None

    @property
    def holds_context(self) -> bool:
        """The connection keeps zlib state between messages (counted by DeflateMaxContexts)."""
        return not (self.server_no_context_takeover and self.client_no_context_takeover)

    def response(self) -> str:
        """The ``Sec-WebSocket-Extensions`` value answering the offer."""
        parts = [_NAME]
        if self.server_no_context_takeover:
            parts.append("server_no_context_takeover")
        if self.client_no_context_takeover:
            parts.append("client_no_context_takeover")
        # always named: a client then knows which window our shared frames were built with
        parts.append(f"server_max_window_bits={self.server_bits}")
        if self.client_bits is not None:
            parts.append(f"client_max_window_bits={self.client_bits}")
        return "; ".join(parts)


def _offers(header: str) -> list[dict[str, str | None]]:
    """The permessage-deflate offers of a ``Sec-WebSocket-Extensions`` value, in order."""
    found = []
    for offer in header.split(","):
        name, *params = (part.strip() for part in offer.split(";"))
        if name.lower() != _NAME:
            continue
        parsed: dict[str, str | None] = {}
        for param in params:
            key, _, value = param.partition("=")
            key = key.strip().lower()
            if key in parsed:
                parsed = {"": "duplicate"}  # RFC 7692 7: a repeated parameter: decline
                break
            parsed[key] = value.strip().strip('"') if value else None
        found.append(parsed)
    return found


def _bits(value: str | None, default: int | None = None) -> int | None:
    """Window bits 9-15 from a parameter's value (``default`` when it has none), else None."""
    if value is None:
        return default
    return int(value) if value.isdigit() and _MIN_BITS <= int(value) <= _MAX_BITS else None


def _accept(offer: dict[str, str | None], options: DeflateOptions, room: bool) -> Agreement | None:
    """The agreement for one offer, None when we cannot honour it; ``room``: a connection may
    still keep zlib state."""
    for key, value in offer.items():
        if (key in _FLAGS and value is not None) or key not in _FLAGS + _BITS:
            return None
    server_bits: int | None = options.max_window_bits
    if "server_max_window_bits" in offer:
        server_bits = _bits(offer["server_max_window_bits"])
    client_bits = None
    if "client_max_window_bits" in offer:
        client_bits = _bits(offer["client_max_window_bits"], options.max_window_bits)
        if client_bits is None:
            return None
    if server_bits is None:
        return None
    return Agreement(
        server_no_context_takeover=(
            options.server_no_context_takeover or not room or "server_no_context_takeover" in offer
        ),
        client_no_context_takeover=options.client_no_context_takeover or not room,
        server_bits=min(server_bits, options.max_window_bits),
        client_bits=None if client_bits is None else min(client_bits, options.max_window_bits),
    )


def negotiate(header: str, options: DeflateOptions, room: bool = True) -> Agreement | None:
    """The first permessage-deflate offer of ``header`` we accept, or None (no compression)."""
    for offer in _offers(header):
        agreement = _accept(offer, options, room)
        if agreement is not None:
            return agreement
    return None


def _frame(body: bytes) -> bytes:
    length = len(body)
    if length < 126:
        return bytes((_FIN_TEXT_RSV1, length)) + body
    if length < 1 << 16:
        return struct.pack("!BBH", _FIN_TEXT_RSV1, 126, length) + body
    return struct.pack("!BBQ", _FIN_TEXT_RSV1, 127, length) + body


class Compressor:
    """Compressed text frames from payloads, or None where a plain frame is the better one.

    ``keep``: server context takeover (one per connection); otherwise one per process and
    window size, shared by every connection (each message on its own, a full flush).
    """

    __slots__ = ("_flush", "_min_size", "_zlib")

    def __init__(self, options: DeflateOptions, bits: int, keep: bool) -> None:
        # memLevel 8 is zlib's default: 128 KiB of hash tables next to the 2^(bits+2) window
        self._zlib = zlib.compressobj(options.level, zlib.DEFLATED, -bits, 8)
        self._flush = zlib.Z_SYNC_FLUSH if keep else zlib.Z_FULL_FLUSH
        self._min_size = options.min_size

    def frame(self, payload: bytes) -> bytes | None:
        """One final compressed text frame holding ``payload``; None: send it plain."""
        if len(payload) < self._min_size:
            return None
        body = self._zlib.compress(payload) + self._zlib.flush(self._flush)
        if self._flush == zlib.Z_FULL_FLUSH and len(body) - 4 >= len(payload):
            return None  # it would not shrink (with a context the client must see it: sent)
        return _frame(body[:-4])
