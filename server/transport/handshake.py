"""The server side of the WebSocket opening handshake (RFC 6455 section 4.2), from an h11 request.

wsproto's ``WSConnection`` re-parses the request with a second h11 connection and keeps it, with
the request and its headers, for the life of the socket (ADR 013: ~3 KiB per idle connection).
The checks here are wsproto's, in the same order and with the same messages, except that a
``Sec-WebSocket-Version`` other than 13 is answered ``426 Upgrade Required`` with
``Sec-WebSocket-Version: 13`` (RFC 6455 section 4.4) where wsproto says "Missing header"; the
frames are then handled by a bare ``wsproto.connection.Connection``. No subprotocol or
extension is negotiated.
"""

from __future__ import annotations

from collections.abc import Iterable

from wsproto.utilities import generate_accept_token

from pushgrid.protocol.exceptions import ProtocolError

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


def accept(method: bytes, headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The ``101 Switching Protocols`` answer to a request; HandshakeError when invalid."""
    if method != b"GET":
        raise HandshakeError("Request method must be GET")
    # h11 lower-cases header names; a repeated header counts by its last value
    found = {name: value for name, value in headers if name in _READ}
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
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
        b"sec-websocket-accept: " + generate_accept_token(key) + b"\r\n\r\n"
    )
