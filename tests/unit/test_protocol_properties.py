"""Property-based tests (hypothesis) of the codec, subjects and the frame parser.

Whatever a client sends, decoding either gives a frame or raises RemoteProtocolError (never
another exception); valid frames survive a round trip; the frame parser gives the same
messages whether the bytes come whole, byte by byte or in random chunks.
"""

from __future__ import annotations

import contextlib
import os
import struct
import unicodedata
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from pushgrid.protocol.codec import Limits, decode_client_frame
from pushgrid.protocol.errors import InvalidSubject, RemoteProtocolError
from pushgrid.protocol.frames import MAX_SAFE_INTEGER, Publish, Subscribe, SubscribeItem
from pushgrid.protocol.subjects import subject_error, validate_subject
from pushgrid.server.framing.wsframe import batch_frame, encode_text_frame, frame_payload
from pushgrid.server.transport.sse import parse_last_event_id, parse_position

LIMITS = Limits()
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
ops = st.sampled_from(["publish", "subscribe", "unsubscribe", "ping", "token", "x", None])
frame_like = st.fixed_dictionaries(
    {"op": ops},
    optional={
        "id": st.one_of(st.integers(), json_values),
        "subject": st.one_of(st.text(), json_values),
        "content": st.one_of(st.text(), json_values),
        "fields": json_values,
        "subjects": json_values,
        "token": json_values,
        "qos": json_values,
        "retained": json_values,
    },
)


def _decode(data: bytes | str) -> Any:
    try:
        return decode_client_frame(data, LIMITS)
    except RemoteProtocolError as error:
        return error


@PROPERTY
@given(st.one_of(st.text(), st.binary()))
def test_any_text_or_bytes_decodes_or_is_a_protocol_error(data: bytes | str) -> None:
    _decode(data)


@PROPERTY
@given(frame_like)
def test_frame_like_objects_decode_or_echo_a_safe_id(raw: dict[str, Any]) -> None:
    result = _decode(msgspec.json.encode(raw))
    if isinstance(result, RemoteProtocolError):
        request_id = raw.get("id")
        if type(request_id) is int and abs(request_id) <= MAX_SAFE_INTEGER:
            assert result.request_id == request_id
        else:
            assert result.request_id is None
    elif result.id is not None:
        assert abs(result.id) <= MAX_SAFE_INTEGER


@PROPERTY
@given(st.integers(min_value=1, max_value=3000))
def test_deep_nesting_is_invalid_json_or_frame(depth: int) -> None:
    result = _decode('{"op":"ping","x":' + "[" * depth + "]" * depth + "}")
    assert not isinstance(result, RemoteProtocolError) or result.code in (
        "invalid_json",
        "invalid_frame",
    )


visible_segment = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), blacklist_characters="/"
    ),
    min_size=1,
    max_size=12,
)


@PROPERTY
@given(st.lists(visible_segment, min_size=2, max_size=8))
def test_visible_segments_make_a_valid_subject(segments: list[str]) -> None:
    subject = "/" + "/".join(segments)
    if len(subject.encode("utf-8")) <= 1024:
        assert subject_error(subject) is None
        publish = Publish(subject=subject, content="x", id=1)
        decoded = decode_client_frame(msgspec.json.encode(publish), LIMITS)
        assert decoded == publish


@PROPERTY
@given(st.text(max_size=60))
def test_subject_check_never_raises_and_refuses_invisible_characters(subject: str) -> None:
    reason = subject_error(subject)
    if reason is None:
        assert validate_subject(subject) == subject
        for index, ch in enumerate(subject):
            if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
                assert ch == "\u200d"  # an emoji joiner only
                assert 0 < index < len(subject) - 1
    else:
        with pytest.raises(InvalidSubject) as info:
            validate_subject(subject)
        assert info.value.reason == reason


@PROPERTY
@given(st.lists(visible_segment, min_size=2, max_size=4), st.integers(0, 1000))
def test_subscribe_round_trip(segments: list[str], history: int) -> None:
    subject = "/" + "/".join(segments)
    frame = Subscribe(subjects=[SubscribeItem(subject, history=history)], id=7)
    assert decode_client_frame(msgspec.json.encode(frame), LIMITS) == frame


@PROPERTY
@given(st.text(max_size=200))
def test_sse_position_parsers_raise_value_error_only(value: str) -> None:
    for parse in (parse_last_event_id, parse_position):
        with contextlib.suppress(ValueError):
            parse(value)


# --- the frame parser (wsproto, as the server drives it) ------------------------------------------


def _server() -> WSConnection:
    ws = WSConnection(ConnectionType.SERVER)
    headers = [
        (b"host", b"x"),
        (b"upgrade", b"websocket"),
        (b"connection", b"Upgrade"),
        (b"sec-websocket-key", b"dGhlIHNhbXBsZSBub25jZQ=="),
        (b"sec-websocket-version", b"13"),
    ]
    ws.initiate_upgrade_connection(headers, b"/ws")
    assert any(isinstance(e, Request) for e in ws.events())
    ws.send(AcceptConnection())
    return ws


def _client_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    length = len(payload)
    first = (0x80 if fin else 0) | opcode
    if length < 126:
        head = struct.pack("!BB", first, 0x80 | length)
    elif length < 1 << 16:
        head = struct.pack("!BBH", first, 0x80 | 126, length)
    else:
        head = struct.pack("!BBQ", first, 0x80 | 127, length)
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def _messages(chunks: list[bytes]) -> tuple[list[str], bool]:
    """Complete text messages the server side reads from ``chunks``, and whether it closed."""
    ws = _server()
    out: list[str] = []
    parts: list[str] = []
    closed = False
    for chunk in chunks:
        ws.receive_data(chunk)
        for event in ws.events():
            if isinstance(event, TextMessage):
                parts.append(event.data)
                if event.message_finished:
                    out.append("".join(parts))
                    parts = []
            elif isinstance(event, CloseConnection):
                closed = True
    return out, closed


messages = st.lists(st.text(max_size=120), min_size=1, max_size=4)


@PROPERTY
@given(messages, st.data())
def test_parser_gives_the_same_messages_whole_byte_by_byte_and_chunked(
    texts: list[str], data: st.DataObject
) -> None:
    wire = b""
    for text in texts:  # hypothesis text has no lone surrogates: always valid UTF-8
        payload = text.encode("utf-8")
        cut = data.draw(st.integers(0, len(payload)))  # fragment it (a continuation)
        wire += _client_frame(0x1, payload[:cut], fin=False) + _client_frame(0x0, payload[cut:])
    whole = _messages([wire])
    byte_by_byte = _messages([wire[i : i + 1] for i in range(len(wire))])
    sizes = data.draw(st.lists(st.integers(1, 64), min_size=1, max_size=50))
    chunks, position = [], 0
    for size in sizes * (len(wire) // max(1, sum(sizes)) + 1):
        chunks.append(wire[position : position + size])
        position += size
    chunks.append(wire[position:])
    assert whole == byte_by_byte == _messages(chunks) == (texts, False)


@PROPERTY
@given(st.binary(max_size=300))
def test_random_bytes_never_break_the_parser(data: bytes) -> None:
    _messages([data])
    _messages([data[i : i + 1] for i in range(len(data))])


@PROPERTY
@given(st.lists(st.binary(max_size=70_000), min_size=1, max_size=3))
def test_server_frames_parse_back(payloads: list[bytes]) -> None:
    for payload in payloads:
        assert frame_payload(encode_text_frame(payload)) == payload
    batch = batch_frame([encode_text_frame(b'{"a":1}') for _ in payloads])
    assert frame_payload(batch) == b"[" + b",".join([b'{"a":1}'] * len(payloads)) + b"]"
