"""The fast path for a WebSocket upgrade head (server/transport/request_head.py, ADR 019).

The rule it must keep: it never accepts a head that h11 refuses, and what it returns is what h11
parses (target, lower-cased headers, the bytes after the head). Checked case by case for the
heads it must leave to h11, and on a few thousand seeded mutations of a valid head.
"""

from __future__ import annotations

import random

import h11
import pytest

from pushgrid.server.transport.request_head import UpgradeHead, parse_upgrade_head

HEAD = (
    b"GET /ws?token=t1 HTTP/1.1\r\nHost: 127.0.0.1:8800\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n\r\n"
)
FRAME = b"\x81\x82abcd\x1a\x1e"  # a masked text frame the client sent right behind the head


def parse(data: bytes) -> UpgradeHead | None:
    return parse_upgrade_head(data, max_headers=100, max_size=8192)


def h11_parse(data: bytes) -> UpgradeHead | None:
    """What h11 makes of ``data`` as the first bytes of a connection (None: refused or
    incomplete)."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=8192)
    conn.receive_data(data)
    try:
        event = conn.next_event()
        if not isinstance(event, h11.Request):
            return None
        while conn.next_event() not in (h11.PAUSED, h11.NEED_DATA):
            pass
    except h11.RemoteProtocolError:
        return None
    return UpgradeHead(event.target, list(event.headers), conn.trailing_data[0])


def test_a_plain_upgrade_head_is_read_as_h11_reads_it() -> None:
    head = parse(HEAD + FRAME)
    assert head is not None
    assert head == h11_parse(HEAD + FRAME)
    assert head.target == b"/ws?token=t1"
    assert head.headers[0] == (b"host", b"127.0.0.1:8800")
    assert head.trailing == FRAME


def test_whitespace_around_values_is_dropped_as_h11_does() -> None:
    data = HEAD.replace(b"Upgrade: websocket", b"Upgrade:\t websocket  ")
    assert parse(data) == h11_parse(data)
    assert parse(data) is not None


@pytest.mark.parametrize(
    "data",
    [
        HEAD[:-2],  # incomplete: h11 waits for more
        HEAD.replace(b"GET", b"POST", 1),  # not a GET: 405 or HTTP, h11's path
        HEAD.replace(b"HTTP/1.1", b"HTTP/1.0", 1),
        HEAD.replace(b"HTTP/1.1", b"HTTP/2.0", 1),  # 505
        HEAD.replace(b"Host: 127.0.0.1:8800\r\n", b""),  # no Host: h11 refuses it
        HEAD.replace(b"Host: 127.0.0.1:8800\r\n", b"Host: a\r\nHost: b\r\n"),
        HEAD.replace(b"\r\n\r\n", b"\r\nContent-Length: 0\r\n\r\n"),
        HEAD.replace(b"\r\n\r\n", b"\r\nTransfer-Encoding: chunked\r\n\r\n"),
        HEAD.replace(b"Upgrade: websocket\r\n", b"Upgrade: websocket\n"),  # a bare LF
        HEAD.replace(b"Connection: Upgrade\r\n", b"Connection:\r\n Upgrade\r\n"),  # folded
        HEAD.replace(b"Upgrade:", b"Upgrade :"),  # space before the colon
        HEAD.replace(b"Upgrade:", b"Up(grade:"),  # not a token
        HEAD.replace(b"websocket", b"web\x00socket"),
        HEAD.replace(b"websocket", b"web\rsocket"),
        HEAD.replace(b"/ws?token=t1", b"/ws token"),
        HEAD.replace(b"GET /ws", b"GET  /ws"),
        b"\r\n" + HEAD,
        HEAD.replace(b"\r\n\r\n", b"\r\n" + b"x-a: b\r\n" * 200 + b"\r\n"),  # over 100 headers
        HEAD.replace(b"\r\n\r\n", b"\r\nx-big: " + b"b" * 9000 + b"\r\n\r\n"),  # over 8 KiB
    ],
)
def test_heads_the_fast_path_leaves_to_h11(data: bytes) -> None:
    assert parse(data) is None


def test_the_431_size_is_counted_as_the_http_connection_counts_it() -> None:
    # "a:b" lines count name + value + 4 bytes each, one more than they take on the wire.
    data = HEAD.replace(b"\r\n\r\n", b"\r\n" + b"a:b\r\n" * 50 + b"\r\n")
    parsed = h11_parse(data)
    assert parsed is not None
    counted = len(parsed.target) + sum(len(n) + len(v) + 4 for n, v in parsed.headers)
    assert parse_upgrade_head(data, 100, counted) is not None
    assert parse_upgrade_head(data, 100, counted - 1) is None


def test_mutated_heads_are_never_accepted_where_h11_refuses() -> None:
    rng = random.Random(12)
    alphabet = b" \t\r\n:\x00\x7f\x80\xff/?aZ-"
    accepted = 0
    for _ in range(4000):
        data = bytearray(HEAD + FRAME)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            action = rng.random()
            if action < 0.4:
                data[at] = rng.choice(alphabet)
            elif action < 0.7:
                data.insert(at, rng.choice(alphabet))
            else:
                del data[at]
        raw = bytes(data)
        fast = parse(raw)
        if fast is not None:
            accepted += 1
            assert fast == h11_parse(raw), raw
    assert accepted > 100  # the mutations also hit values the fast path takes


def test_the_grammar_is_h11s() -> None:
    """The fast path must accept exactly what h11 accepts: our copy of its rules (we do not import
    h11's private module in the server) must stay equal to h11's own."""
    from h11 import _abnf

    from pushgrid.server.transport.request_head import HEADER_FIELD_RULE, REQUEST_LINE_RULE

    assert _abnf.header_field == HEADER_FIELD_RULE
    assert _abnf.request_line == REQUEST_LINE_RULE
