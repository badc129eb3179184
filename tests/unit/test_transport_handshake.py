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
    answer, agreement = accept(b"GET", VALID)
    assert answer.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
    assert b"\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in answer
    assert b"\r\nupgrade: websocket\r\n" in answer
    assert answer.endswith(b"\r\n\r\n")
    assert agreement is None  # no extension offered


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


def test_a_missing_version_is_400_naming_ours() -> None:
    with pytest.raises(HandshakeError) as info:
        accept(b"GET", without(b"sec-websocket-version"))
    assert info.value.status == 400
    assert info.value.headers == (("sec-websocket-version", "13"),)


@pytest.mark.parametrize("version", [b"8", b"7", b"14", b"13, 8", b""])
def test_another_version_is_426_upgrade_required_naming_13(version: bytes) -> None:
    """RFC 6455 4.4: not 400 "Missing header" but 426 with ``Sec-WebSocket-Version: 13``."""
    with pytest.raises(HandshakeError, match="is not supported: this server speaks 13") as info:
        accept(b"GET", replaced(b"sec-websocket-version", version))
    assert info.value.status == 426
    assert info.value.headers == (("sec-websocket-version", "13"),)
