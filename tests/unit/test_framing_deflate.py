"""permessage-deflate without I/O (server/framing/deflate.py, ADR 028): which offer is accepted
with which parameters, and frames any RFC 7692 client inflates."""

from __future__ import annotations

import random
import zlib

import pytest
from wsproto import ConnectionType
from wsproto.connection import Connection as FrameConnection
from wsproto.events import CloseConnection, TextMessage
from wsproto.extensions import PerMessageDeflate

from pushgrid.server.framing.deflate import Agreement, Compressor, DeflateOptions, negotiate
from pushgrid.server.transport.context import Deflate
from pushgrid.server.transport.handshake import accept
from pushgrid.server.transport.inflating import InflatingBudget
from pushgrid.server.transport.wsdeflate import BoundedInflate

DEFAULTS = DeflateOptions()
KEEP = DeflateOptions(server_no_context_takeover=False, client_no_context_takeover=False)
# what Chromium and the websockets library offer
BROWSER = "permessage-deflate; client_max_window_bits"
WEBSOCKETS = "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12"


def test_the_defaults_keep_no_context_either_way() -> None:
    agreement = negotiate(BROWSER, DEFAULTS)
    assert agreement is not None
    assert agreement.response() == (
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
        "server_max_window_bits=15; client_max_window_bits=15"
    )
    assert not agreement.holds_context


def test_window_bits_are_the_smaller_of_offer_and_configuration() -> None:
    agreement = negotiate(WEBSOCKETS, KEEP)
    assert agreement is not None
    assert (agreement.server_bits, agreement.client_bits) == (12, 12)
    assert agreement.holds_context
    small = negotiate(WEBSOCKETS, DeflateOptions(max_window_bits=10))
    assert small is not None
    assert (small.server_bits, small.client_bits) == (10, 10)


def test_a_client_asking_for_no_server_context_gets_it() -> None:
    agreement = negotiate("permessage-deflate; server_no_context_takeover", KEEP)
    assert agreement is not None
    assert agreement.server_no_context_takeover
    assert not agreement.client_no_context_takeover
    assert agreement.client_bits is None  # not offered: never named in the answer
    assert "client_max_window_bits" not in agreement.response()


def test_without_room_for_contexts_nothing_is_kept() -> None:
    agreement = negotiate(BROWSER, KEEP, room=False)
    assert agreement is not None
    assert not agreement.holds_context


@pytest.mark.parametrize(
    "offer",
    [
        "x-webkit-deflate-frame",
        "permessage-deflate; server_max_window_bits=8",  # zlib cannot: declined
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; client_max_window_bits=abc",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; mystery",
        "permessage-deflate; client_max_window_bits; client_max_window_bits",
    ],
)
def test_offers_we_cannot_honour_are_declined(offer: str) -> None:
    assert negotiate(offer, DEFAULTS) is None


def test_the_first_acceptable_offer_wins() -> None:
    offers = "permessage-deflate; mystery, permessage-deflate; server_max_window_bits=11"
    agreement = negotiate(offers, KEEP)
    assert agreement is not None
    assert agreement.server_bits == 11


def _inflate(frame: bytes, inflater: zlib._Decompress | None = None) -> bytes:
    assert frame[0] == 0xC1  # FIN, RSV1, text
    length = frame[1]
    body = frame[2:] if length < 126 else frame[4:]
    inflater = inflater or zlib.decompressobj(-15)
    return inflater.decompress(body + b"\x00\x00\xff\xff")


PAYLOAD = b'{"type":"message","subject":"/FX/EURUSD","fields":{"bid":"1.0842","ask":"1.0844"}}' * 3


def test_shared_frames_inflate_on_their_own_in_any_order() -> None:
    """No server context: each frame inflates with a fresh inflater, whatever came before."""
    compressor = Compressor(DEFAULTS, 15, keep=False)
    frames = [compressor.frame(PAYLOAD + str(i).encode()) for i in range(3)]
    for i, frame in reversed(list(enumerate(frames))):
        assert frame is not None
        assert _inflate(frame) == PAYLOAD + str(i).encode()
    assert len(frames[2] or b"") < len(PAYLOAD) / 2


def test_context_takeover_frames_need_their_predecessors_and_shrink() -> None:
    compressor = Compressor(KEEP, 15, keep=True)
    shared = Compressor(KEEP, 15, keep=False)
    first, second = compressor.frame(PAYLOAD), compressor.frame(PAYLOAD)
    assert first is not None
    assert second is not None
    inflater = zlib.decompressobj(-15)
    assert _inflate(first, inflater) == PAYLOAD
    assert _inflate(second, inflater) == PAYLOAD
    assert len(second) < len(shared.frame(PAYLOAD) or b"") / 2


def test_small_or_incompressible_payloads_stay_plain() -> None:
    compressor = Compressor(DeflateOptions(min_size=100), 15, keep=False)
    assert compressor.frame(b'{"type":"pong"}') is None
    noise = random.Random(7).randbytes(200)
    assert compressor.frame(noise) is None  # would not shrink


def test_the_handshake_answers_the_agreement() -> None:
    headers = [
        (b"host", b"h"),
        (b"upgrade", b"websocket"),
        (b"connection", b"Upgrade"),
        (b"sec-websocket-key", b"dGhlIHNhbXBsZSBub25jZQ=="),
        (b"sec-websocket-version", b"13"),
        (b"sec-websocket-extensions", b"x-unknown"),
        (b"sec-websocket-extensions", BROWSER.encode()),
    ]
    deflate = Deflate(DEFAULTS, max_contexts=10, inflating=InflatingBudget(1 << 30, 1 << 30))
    head, agreement = accept(b"GET", headers, deflate)
    assert agreement is not None
    assert b"\r\nsec-websocket-extensions: permessage-deflate; server_no_context" in head
    assert accept(b"GET", headers, None)[1] is None  # PerMessageDeflate = false


def _server(
    agreement: Agreement, limit: int = 1 << 20, budget: InflatingBudget | None = None
) -> FrameConnection:
    budget = budget or InflatingBudget(1 << 30, 1 << 30)
    inflate = BoundedInflate(agreement, limit, budget, "10.0.0.1")
    return FrameConnection(ConnectionType.SERVER, extensions=[inflate])


def _client_frames(text: str, keep: bool, count: int = 1) -> bytes:
    """What an RFC 7692 client sends: compressed, masked text messages."""
    extension = PerMessageDeflate(client_no_context_takeover=not keep)
    extension.finalize("permessage-deflate" + ("" if keep else "; client_no_context_takeover"))
    client = FrameConnection(ConnectionType.CLIENT, extensions=[extension])
    return b"".join(client.send(TextMessage(data=text)) for _ in range(count))


def _texts(server: FrameConnection) -> list[str | int]:
    found: list[str | int] = []
    for event in server.events():
        if isinstance(event, TextMessage):
            found.append(event.data)
        elif isinstance(event, CloseConnection):
            found.append(event.code)
    return found


def _agreement(options: DeflateOptions) -> Agreement:
    agreement = negotiate(BROWSER, options)
    assert agreement is not None
    return agreement


AGREED = _agreement(DEFAULTS)
KEPT = _agreement(KEEP)


@pytest.mark.parametrize(("agreement", "keep"), [(AGREED, False), (KEPT, True)])
def test_compressed_client_messages_are_inflated(agreement: Agreement, keep: bool) -> None:
    server = _server(agreement)
    text = '{"op":"publish","subject":"/a","content":"' + "x" * 300 + '"}'
    server.receive_data(_client_frames(text, keep, count=3))
    assert _texts(server) == [text, text, text]


def test_an_inflated_message_past_the_limit_is_refused_1009() -> None:
    server = _server(AGREED, limit=10_000)
    wire = _client_frames(" " * 10_001, keep=False)
    assert len(wire) < 100  # the frame header check alone would let it in
    server.receive_data(wire)
    assert _texts(server) == [1009]
    exact = _server(AGREED, limit=10_000)
    exact.receive_data(_client_frames(" " * 10_000, keep=False))
    assert _texts(exact) == [" " * 10_000]


def test_a_corrupt_deflate_stream_is_refused_1007() -> None:
    server = _server(AGREED)
    payload = b"\xff\xff\xff\xff"  # not a deflate block
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    server.receive_data(bytes((0xC1, 0x80 | len(payload))) + mask + masked)
    assert _texts(server) == [1007]


# --- issue 34 item 2: rows 2, 8 and 12 ------------------------------------------------------


def _masked_frame(first: int, payload: bytes) -> bytes:
    """One masked client frame with the first byte ``first`` (FIN, RSV1, opcode)."""
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    return bytes((first, 0x80 | len(payload))) + mask + masked


def _deflated(text: str, final: bool = False) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = compressor.compress(text.encode())
    if final:  # the stream ends with a BFINAL block
        return body + compressor.flush(zlib.Z_FINISH)
    return (body + compressor.flush(zlib.Z_SYNC_FLUSH))[:-4]


@pytest.mark.parametrize("between", [0x89, 0x8A], ids=["ping", "pong"])
def test_a_control_frame_between_fragments_leaves_the_message_compressed(between: int) -> None:
    """RFC 6455 5.4: control frames may come between fragments. wsproto's own extension
    forgot the message was compressed and read the continuation raw (1007)."""
    text = '{"op":"ping","id":12}' + " " * 300
    body = _deflated(text)
    half = len(body) // 2
    server = _server(AGREED)
    server.receive_data(
        _masked_frame(0x40 | 0x01, body[:half])  # text, RSV1, not final
        + _masked_frame(between, b"k")
        + _masked_frame(0x80, body[half:])  # final continuation
    )
    assert "".join(t for t in _texts(server) if isinstance(t, str)) == text


def test_a_compressed_control_frame_is_a_protocol_error() -> None:
    server = _server(AGREED)
    server.receive_data(_masked_frame(0x80 | 0x40 | 0x09, b"k"))
    assert _texts(server) == [1002]


def test_after_an_ended_deflate_stream_the_next_message_starts_a_new_one() -> None:
    """Client context takeover, messages that end their stream (BFINAL): wsproto kept the
    ended inflater, so every later message inflated to nothing and its bytes piled up."""
    server = _server(KEPT)
    texts = [f'{{"op":"ping","id":{i}}}' for i in range(4)]
    server.receive_data(b"".join(_masked_frame(0xC1, _deflated(t, final=True)) for t in texts))
    assert _texts(server) == texts


def test_data_after_the_end_of_a_deflate_stream_is_refused_1007() -> None:
    for agreement in (AGREED, KEPT):
        server = _server(agreement)
        payload = _deflated('{"op":"ping"}', final=True) + _deflated("more")
        server.receive_data(_masked_frame(0xC1, payload))
        assert _texts(server) == [1007]


def _unfinished(text: str) -> bytes:
    """The first (not final) fragment of a compressed message, its sync flush kept."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = compressor.compress(text.encode()) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return _masked_frame(0x40 | 0x01, body)


def test_unfinished_messages_are_charged_to_the_address_until_whole() -> None:
    budget = InflatingBudget(max_total=30_000, max_per_address=25_000)
    first = _server(AGREED, budget=budget)
    first.receive_data(_unfinished(" " * 20_000))
    assert _texts(first) == [" " * 20_000]
    assert (budget.total, budget.held_by("10.0.0.1")) == (20_000, 20_000)
    second = _server(AGREED, budget=budget)
    second.receive_data(_unfinished(" " * 6_000))  # 26,000 from the address
    assert _texts(second) == [1008]
    assert budget.total == 20_000  # the refused charge is not counted
    first.receive_data(_masked_frame(0x80, b""))  # the final fragment: nothing more
    assert _texts(first) == [""]
    assert budget.total == 0  # whole: given back


def test_the_budget_bounds_each_address_and_the_total() -> None:
    budget = InflatingBudget(max_total=10, max_per_address=6)
    assert budget.charge("a", 6) is None
    refused = budget.charge("a", 1)
    assert refused is not None
    assert "DeflateMaxInflatingPerAddress (6 bytes)" in refused
    assert budget.charge("b", 4) is None
    refused = budget.charge("c", 1)
    assert refused is not None
    assert "DeflateMaxInflating (10 bytes)" in refused
    assert budget.refused_total == 2
    budget.release("a", 6)
    assert (budget.total, budget.held_by("a"), budget.charge("c", 5)) == (4, 0, None)
