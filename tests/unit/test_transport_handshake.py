"""The WebSocket opening handshake (server/transport/handshake.py): wsproto's checks, in its
order and with its messages, on the headers h11 already parsed; the RFC 6455 accept token."""

from __future__ import annotations

import pytest

from pushgrid.server.transport.handshake import HandshakeError, accept

KEY = b"dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 section 1.3
VALID = [
    (b"host", b"server.example.com"),
    (b"upgrade", b"websocket"),
    (b"connection", b"Upgrade"),
    (b"sec-websocket-key", KEY),
    (b"sec-websocket-version", b"13"),
]


def without(name: bytes) -> list[tuple[bytes, bytes]]:
    return [(n, v) for n, v in VALID if n != name]


def replaced(name: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
    return [(n, value if n == name else v) for n, v in VALID]


def test_the_rfc_example_is_accepted() -> None:
    answer = accept(b"GET", VALID)
    assert answer.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
    assert b"\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in answer
    assert b"\r\nupgrade: websocket\r\n" in answer
    assert answer.endswith(b"\r\n\r\n")


def test_connection_header_may_list_several_tokens() -> None:
    accept(b"GET", replaced(b"connection", b"keep-alive, Upgrade"))
    accept(b"GET", replaced(b"upgrade", b"WebSocket"))


@pytest.mark.parametrize(
    ("method", "headers", "message"),
    [
        (b"POST", VALID, "Request method must be GET"),
        (b"GET", without(b"connection"), "Missing header, 'Connection: Upgrade'"),
        (b"GET", replaced(b"connection", b"keep-alive"), "Missing header, 'Connection: Upgrade'"),
        (b"GET", without(b"sec-websocket-version"), "Missing header, 'Sec-WebSocket-Version'"),
        (
            b"GET",
            replaced(b"sec-websocket-version", b"8"),
            "Missing header, 'Sec-WebSocket-Version'",
        ),
        (b"GET", without(b"sec-websocket-key"), "Missing header, 'Sec-WebSocket-Key'"),
        (b"GET", replaced(b"upgrade", b"h2c"), "Missing header, 'Upgrade: websocket'"),
        (b"GET", without(b"host"), "Missing header, 'Host'"),
    ],
)
def test_invalid_handshakes_are_refused(
    method: bytes, headers: list[tuple[bytes, bytes]], message: str
) -> None:
    with pytest.raises(HandshakeError, match=message.replace("(", r"\(")):
        accept(method, headers)
