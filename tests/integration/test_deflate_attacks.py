"""What a client may make the server inflate (issue 34 item 2, rows 1, 2, 8 and 12), on raw
sockets against real servers: compressed frames built here with zlib, byte by byte.

- row 1: 150 compressed pings of ~1 KiB that inflate to ~1 MB each, in one write: the server
  parses and inflates no further than ``MaxInboundBufferSize`` ahead of what it has handled
  (backpressure, every ping still answered); its peak RSS grows by a few MB, not ~150 MB.
- row 2: 80 connections each leave a compressed message of ~1 KiB unfinished that inflates to
  ~1 MB: past ``DeflateMaxInflatingPerAddress`` (8 MiB) the fragment is refused with 1008,
  and a second address is bounded by ``DeflateMaxInflating`` in all.
- row 8: with client context takeover, a message whose deflate stream ends (BFINAL) no longer
  empties every later message: the next one starts a new stream; data after the end inside
  one message is refused with 1007.
- row 12: a ping or pong between two fragments of a compressed message leaves the message
  compressed (RFC 6455 5.4).

Memory is the server process's peak RSS (VmHWM, reset just before the attack with clear_refs)
against its RSS at that moment: no timing is measured.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from .pgtest import (
    DEFAULT_TIMEOUT,
    OP_CLOSE,
    OP_CONT,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    RawWs,
    ServerProcess,
    encode_client_frame,
    parse_prometheus,
    reset_peak_rss,
    rss_mib,
)

pytestmark = pytest.mark.timeout(180)

OFFER = "permessage-deflate; client_no_context_takeover"
#: what one compressed message inflates to: just below the hard frame limit (1 MiB)
INFLATED = 1_000_000
TAIL = b"\x00\x00\xff\xff"


def deflated(text: str, *, final: bool = False) -> bytes:
    """``text`` as one message's compressed payload (RFC 7692 7.2.1: the sync flush's tail
    removed); ``final``: the deflate stream ends there (a block with BFINAL, Z_FINISH)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = compressor.compress(text.encode())
    if final:
        return body + compressor.flush(zlib.Z_FINISH)
    body += compressor.flush(zlib.Z_SYNC_FLUSH)
    assert body.endswith(TAIL)
    return body[:-4]


def padded_ping(request_id: int, size: int = INFLATED) -> str:
    """A ``ping`` request of ``size`` characters (JSON allows the trailing blanks)."""
    text = json.dumps({"op": "ping", "id": request_id})
    return text + " " * (size - len(text))


def compressed(text: str) -> bytes:
    return encode_client_frame(OP_TEXT, deflated(text), rsv1=True)


def open_deflating(srv: ServerProcess, offer: str = OFFER, source: str | None = None) -> RawWs:
    raw = RawWs(srv.host, srv.port, offer=offer, source=source)
    assert b"permessage-deflate" in raw.head.lower(), raw.head
    raw.read_frames(1)  # the welcome (compressed or not: not read)
    return raw


def answers(raw: RawWs) -> list[dict[str, Any]]:
    """The JSON text frames after the welcome (the server's small answers are plain)."""
    return [untimed(json.loads(payload)) for opcode, payload in raw.frames[1:] if opcode == OP_TEXT]


def untimed(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` without a pong's ``time`` (the server's clock, checked an int; ADR 048)."""
    if answer.get("type") == "pong":
        assert isinstance(answer.pop("time"), int), answer
    return answer


def close_reason(raw: RawWs) -> str:
    for opcode, payload in raw.frames:
        if opcode == OP_CLOSE:
            return payload[2:].decode()
    return ""


@pytest.fixture(scope="module")
def srv(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(ServerName="it-inflate", MetaSubjectInterval=0)


@pytest.fixture
def peak(srv: ServerProcess) -> Callable[[], float]:
    """MiB the server's peak RSS rose above its RSS when the test began."""
    assert srv.proc is not None
    pid = srv.proc.pid
    base = rss_mib(pid)
    reset_peak_rss(pid)
    return lambda: rss_mib(pid, "VmHWM") - base


# --- row 1: what one connection's inbox and one read may inflate --------------------------


def test_a_read_of_compressed_pings_inflates_only_up_to_the_inbound_bound(
    srv: ServerProcess, peak: Callable[[], float]
) -> None:
    """Before: the whole read was inflated into the inbox at once (150 x 1 MB = +147 MB)."""
    count = 150
    raw = open_deflating(srv)
    try:
        frames = b"".join(compressed(padded_ping(i)) for i in range(count))
        assert len(frames) < count * 1100  # ~1 KiB each on the wire
        raw.sock.sendall(frames)
        raw.read_frames(1 + count, timeout=120)
        assert [a.get("id") for a in answers(raw)] == list(range(count))
        assert {a["type"] for a in answers(raw)} == {"pong"}
        grown = peak()
        # the bound: MaxInboundBufferSize (1 MiB) queued + one message inflating + its parse
        assert grown < 24, f"peak RSS +{grown:.1f} MiB for {count} MB inflated"
    finally:
        raw.close()


# --- row 2: unfinished compressed messages, per address and in all ------------------------


@dataclass
class Holder:
    """A connection in the middle of a compressed message, with the client's compressor."""

    raw: RawWs
    compressor: Any

    def finish(self, request_id: int) -> dict[str, Any]:
        """Send the last fragment (the ping the blanks lead to); return the answer."""
        text = json.dumps({"op": "ping", "id": request_id}).encode()
        body = self.compressor.compress(text) + self.compressor.flush(zlib.Z_SYNC_FLUSH)
        self.raw.sock.sendall(encode_client_frame(OP_CONT, body[:-4]))
        self.raw.frames.clear()
        self.raw.read_frames(1)
        return untimed(dict(json.loads(self.raw.frames[0][1])))


def hold_unfinished(
    srv: ServerProcess, count: int, source: str | None = None
) -> tuple[list[Holder], list[RawWs]]:
    """``count`` connections each send the first ~1 KiB fragment of a compressed message
    that inflates to ~1 MB, then a ping: (those still holding it, answered with a pong;
    those refused, with a close frame)."""
    holding, refused = [], []
    for _ in range(count):
        raw = open_deflating(srv, source=source)
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        # the sync flush keeps its tail: only a message's end drops it (RFC 7692 7.2.1)
        body = compressor.compress(b" " * INFLATED) + compressor.flush(zlib.Z_SYNC_FLUSH)
        raw.sock.sendall(
            encode_client_frame(OP_TEXT, body, fin=False, rsv1=True)
            + encode_client_frame(OP_PING, b"held?")
        )
        raw.read_frames(2)
        opcode, _ = raw.frames[1]
        assert opcode in (OP_PONG, OP_CLOSE), raw.frames
        if opcode == OP_PONG:
            holding.append(Holder(raw, compressor))
        else:
            refused.append(raw)
    return holding, refused


def inflating_refused(srv: ServerProcess) -> float:
    """``pushgrid_inflating_refused_total`` on the server's /metrics."""
    answer = httpx.get(f"{srv.monitor_url}/metrics", timeout=DEFAULT_TIMEOUT, trust_env=False)
    answer.raise_for_status()
    return parse_prometheus(answer.text)[("pushgrid_inflating_refused_total", ())]


def test_unfinished_compressed_messages_are_bounded_per_address(
    srv: ServerProcess, peak: Callable[[], float]
) -> None:
    """Before: 80 of 80 held (RSS +82-87 MB for 83 KiB sent); now 8 MiB from one address."""
    before = inflating_refused(srv)
    holding, refused = hold_unfinished(srv, 80)
    try:
        assert len(holding) == 8  # 8 x 1,000,000 bytes <= 8 MiB < 9 x 1,000,000
        assert inflating_refused(srv) - before == 72
        for raw in refused:
            raw.read_until_closed()
            assert raw.close_code == 1008, raw.frames
            assert "DeflateMaxInflatingPerAddress" in close_reason(raw)
        grown = peak()
        assert grown < 24, f"peak RSS +{grown:.1f} MiB for 80 unfinished messages"
        # a holder may finish its message, which gives its bytes back
        assert holding[0].finish(1) == {"type": "pong", "id": 1}
        assert holding[1].finish(2) == {"type": "pong", "id": 2}
        again, refused_again = hold_unfinished(srv, 3)
        holding += again
        refused += refused_again
        assert (len(again), len(refused_again)) == (2, 1)  # the 2 MB given back, no more
    finally:
        for raw in [h.raw for h in holding] + refused:
            raw.close()


def test_unfinished_compressed_messages_are_bounded_in_all(
    module_server_factory: Callable[..., ServerProcess],
) -> None:
    """A second client address gets what the first left of DeflateMaxInflating."""
    tight = module_server_factory(
        ServerName="it-inflate-all",
        MetaSubjectInterval=0,
        DeflateMaxInflatingPerAddress=2 << 20,
        DeflateMaxInflating=3 << 20,
    )
    first, first_refused = hold_unfinished(tight, 3)
    second, second_refused = hold_unfinished(tight, 2, source="127.0.0.2")
    try:
        assert (len(first), len(first_refused)) == (2, 1)
        assert (len(second), len(second_refused)) == (1, 1)
        second_refused[0].read_until_closed()
        assert second_refused[0].close_code == 1008
        assert "DeflateMaxInflating (" in close_reason(second_refused[0])
    finally:
        for raw in [h.raw for h in first + second] + first_refused + second_refused:
            raw.close()


# --- row 8: a deflate stream that ends (BFINAL) with client context takeover ----------------


@pytest.fixture(scope="module")
def keeping(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(
        ServerName="it-inflate-keep",
        MetaSubjectInterval=0,
        DeflateClientNoContextTakeover=False,
    )


def test_a_message_after_an_ended_deflate_stream_is_read(keeping: ServerProcess) -> None:
    """Before: every message after the first BFINAL was inflated to nothing (its bytes piled
    up in the inflater): the server answered ``invalid_json`` for an empty message."""
    raw = open_deflating(keeping, offer="permessage-deflate")
    try:
        assert b"client_no_context_takeover" not in raw.head  # the client keeps its window
        for i in range(5):
            text = json.dumps({"op": "ping", "id": i})
            raw.sock.sendall(encode_client_frame(OP_TEXT, deflated(text, final=True), rsv1=True))
        raw.read_frames(6)
        assert answers(raw) == [{"type": "pong", "id": i} for i in range(5)]
    finally:
        raw.close()


def test_data_after_the_end_of_a_deflate_stream_is_refused_1007(keeping: ServerProcess) -> None:
    raw = open_deflating(keeping, offer="permessage-deflate")
    try:
        payload = deflated('{"op": "ping", "id": 1}', final=True) + deflated(" " * 1000)
        raw.sock.sendall(encode_client_frame(OP_TEXT, payload, rsv1=True))
        raw.read_until_closed()
        assert raw.close_code == 1007, raw.frames
        assert answers(raw) == []
    finally:
        raw.close()


# --- row 12: control frames between the fragments of a compressed message --------------------


@pytest.mark.parametrize("between", [OP_PONG, OP_PING], ids=["pong", "ping"])
def test_a_control_frame_between_compressed_fragments_leaves_the_message_whole(
    srv: ServerProcess, between: int
) -> None:
    """Before: closed with 1007 (the continuation was read as uncompressed bytes)."""
    raw = open_deflating(srv)
    try:
        body = deflated(padded_ping(12, 4000))
        half = len(body) // 2
        raw.sock.sendall(
            encode_client_frame(OP_TEXT, body[:half], fin=False, rsv1=True)
            + encode_client_frame(between, b"keepalive")
            + encode_client_frame(OP_CONT, body[half:])
        )
        raw.read_frames(2 + (between == OP_PING))
        assert answers(raw) == [{"type": "pong", "id": 12}], raw.frames
        assert OP_CLOSE not in [opcode for opcode, _ in raw.frames]
        if between == OP_PING:
            assert (OP_PONG, b"keepalive") in raw.frames
    finally:
        raw.close()


def test_a_compressed_control_frame_is_still_a_protocol_error(srv: ServerProcess) -> None:
    raw = open_deflating(srv)
    try:
        raw.sock.sendall(struct.pack("!BB", 0x80 | 0x40 | OP_PING, 0x80) + b"\x00" * 4)
        raw.read_until_closed()
        assert raw.close_code == 1002, raw.frames
    finally:
        raw.close()
