"""The server side of the WebSocket opening handshake (RFC 6455 section 4.2), from an h11 request.

wsproto's ``WSConnection`` re-parses the request with a second h11 connection and keeps it, with
the request and its headers, for the life of the socket (ADR 013: ~3 KiB per idle connection).
The checks here are wsproto's, in the same order and with the same messages, except that a
``Sec-WebSocket-Version`` other than 13 is answered ``426 Upgrade Required`` with
``Sec-WebSocket-Version: 13`` (RFC 6455 section 4.4) where wsproto says "Missing header"; the
frames are then handled by a bare ``wsproto.connection.Connection``. No subprotocol is
negotiated; permessage-deflate is, when the client offers it and the server allows it
(ADR 028, :mod:`server.framing.deflate`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from wsproto.utilities import generate_accept_token

from pushgrid.protocol.exceptions import ProtocolError

from ..framing.deflate import Agreement

if TYPE_CHECKING:
    from .context import Deflate

_VERSION = b"13"


class HandshakeError(ProtocolError, ValueError):
    """The request is not a valid WebSocket opening handshake: answered ``status`` (400, or
    426 for a version we do not speak) with ``headers`` added to the answer."""

    code = "bad_handshake"

    def __init__(
        self, message: str, status: int = 400, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


# RFC 6455 4.4: a version the server does not speak is answered 426 naming the ones it does.
_UNSUPPORTED_VERSION_STATUS = 426
_VERSION_HEADERS = (("sec-websocket-version", _VERSION.decode()),)


def _has_token(value: bytes, token: bytes) -> bool:
    return any(part.strip().lower() == token for part in value.split(b","))


_READ = frozenset(
    (b"connection", b"host", b"sec-websocket-key", b"sec-websocket-version", b"upgrade")
)


def _check_version(version: bytes | None) -> None:
    if version is None:
        raise HandshakeError("Missing header, 'Sec-WebSocket-Version'", headers=_VERSION_HEADERS)
    if version.strip() != _VERSION:
        shown = version.decode("latin-1")
        raise HandshakeError(
            f"Sec-WebSocket-Version {shown!r} is not supported: this server speaks 13",
            _UNSUPPORTED_VERSION_STATUS,
            _VERSION_HEADERS,
        )


_EXTENSIONS = b"sec-websocket-extensions"


def _read(headers: Iterable[tuple[bytes, bytes]]) -> tuple[dict[bytes, bytes], list[bytes]]:
    """The headers the handshake reads and the extension offers. h11 lower-cases header names;
    a repeated header counts by its last value, except extensions, whose repeated headers make
    one list (RFC 6455 9.1)."""
    found: dict[bytes, bytes] = {}
    offers: list[bytes] = []
    for name, value in headers:
        if name in _READ:
            found[name] = value
        elif name == _EXTENSIONS:
            offers.append(value)
    return found, offers


def accept(
    method: bytes, headers: Iterable[tuple[bytes, bytes]], deflate: Deflate | None = None
) -> tuple[bytes, Agreement | None]:
    """The ``101 Switching Protocols`` answer to a request and the permessage-deflate
    agreement (None: not offered or not allowed); HandshakeError when invalid."""
    if method != b"GET":
        raise HandshakeError("Request method must be GET")
    found, offers = _read(headers)
    if not _has_token(found.get(b"connection", b""), b"upgrade"):
        raise HandshakeError("Missing header, 'Connection: Upgrade'")
    _check_version(found.get(b"sec-websocket-version"))
    key = found.get(b"sec-websocket-key")
    if key is None:
        raise HandshakeError("Missing header, 'Sec-WebSocket-Key'")
    if found.get(b"upgrade", b"").lower() != b"websocket":
        raise HandshakeError("Missing header, 'Upgrade: websocket'")
    if b"host" not in found:
        raise HandshakeError("Missing header, 'Host'")
    agreement = None
    if deflate is not None and offers:
        agreement = deflate.negotiate(b",".join(offers).decode("latin-1"))
    extension = b""
    if agreement is not None:
        extension = _EXTENSIONS + b": " + agreement.response().encode() + b"\r\n"
    head = (
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
        b"sec-websocket-accept: " + generate_accept_token(key) + b"\r\n" + extension + b"\r\n"
    )
    return head, agreement
