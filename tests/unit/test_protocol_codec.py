"""Client frame decoding (every malformed case) and server frame encoding (exact JSON keys)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pushgrid.protocol.codec import (
    Limits,
    decode_client_frame,
    decode_publish_body,
    encode,
    publish_size,
)
from pushgrid.protocol.errors import ErrorCode, RemoteProtocolError
from pushgrid.protocol.frames import (
    CLIENT_OPS,
    DeliveryReport,
    Error,
    Keepalive,
    MessageFrame,
    Ping,
    Pong,
    Position,
    PresenceQuery,
    Publish,
    PublishResultFrame,
    ServerFrame,
    Subscribe,
    Subscribed,
    SubscribeItem,
    Token,
    Unsubscribe,
    Unsubscribed,
    Welcome,
)

FIXTURES = json.loads(
    (Path(__file__).parent / "fixtures" / "client_frames.json").read_text(encoding="utf-8")
)
LIMITS = Limits()
OP_TYPES = {
    "subscribe": Subscribe,
    "unsubscribe": Unsubscribe,
    "publish": Publish,
    "ping": Ping,
    "token": Token,
    "presence": PresenceQuery,
    "report": DeliveryReport,
}


def _as_dict(frame: Any) -> dict[str, Any]:
    # as JSON holds it (a report's bucket pairs are tuples in the struct, arrays on the wire)
    data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(frame))
    data["op"] = frame.__struct_config__.tag
    return data


def _decode_error(data: bytes | str, limits: Limits = LIMITS) -> RemoteProtocolError:
    with pytest.raises(RemoteProtocolError) as info:
        decode_client_frame(data, limits)
    return info.value


# --- the fixture table ----------------------------------------------------------------------


def test_fixture_table_covers_every_op_and_error_code() -> None:
    valid_ops = {case["expected"]["op"] for case in FIXTURES["valid"]}
    assert valid_ops == set(CLIENT_OPS)
    malformed_ops = {case["op"] for case in FIXTURES["malformed"]} - {None}
    assert malformed_ops == set(CLIENT_OPS)
    codes = {case["code"] for case in FIXTURES["malformed"]}
    assert {"invalid_json", "invalid_frame", "unknown_op", "invalid_subject"} <= codes
    names = [case["name"] for case in FIXTURES["valid"] + FIXTURES["malformed"]]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
@pytest.mark.parametrize("case", FIXTURES["valid"], ids=lambda c: c["name"])
def test_valid_frame_decodes(case: dict[str, Any], as_bytes: bool) -> None:
    data: bytes | str = case["frame"].encode("utf-8") if as_bytes else case["frame"]
    frame = decode_client_frame(data, LIMITS)
    expected = case["expected"]
    assert isinstance(frame, OP_TYPES[expected["op"]])
    assert _as_dict(frame) == expected


@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
@pytest.mark.parametrize("case", FIXTURES["malformed"], ids=lambda c: c["name"])
def test_malformed_frame_is_rejected(case: dict[str, Any], as_bytes: bool) -> None:
    data: bytes | str = case["frame"].encode("utf-8") if as_bytes else case["frame"]
    error = _decode_error(data)
    assert error.code is ErrorCode(case["code"])
    assert error.request_id == case["id"]
    assert type(error.request_id) is (int if case["id"] is not None else type(None))
    assert error.op == case["op"]
    assert error.message
    assert isinstance(error.message, str)


def test_valid_frame_types_are_exact() -> None:
    frame = decode_client_frame(
        '{"op":"subscribe","id":1,"subjects":[{"subject":"/a/b","recover":{"epoch":"e","seq":3}}]}',
        LIMITS,
    )
    assert frame == Subscribe(subjects=[SubscribeItem("/a/b", recover=Position("e", 3))], id=1)


@pytest.mark.parametrize(
    "data",
    [
        b'{"op":"ping","id":1,"x":"\xff\xfe"}',
        b'\xff{"op":"ping"}',
        b'{"op":"publish","id":1,"subject":"/a/b","content":"\xc3"}',
        '{"op":"ping","id":1,"x":"\ud800"}',
    ],
    ids=[
        "invalid-utf8-in-string",
        "invalid-utf8-first-byte",
        "truncated-utf8-sequence",
        "lone-surrogate-str",
    ],
)
def test_undecodable_text_is_a_protocol_error_not_a_crash(data: bytes | str) -> None:
    # decode_client_frame promises RemoteProtocolError for anything the peer sends.
    error = _decode_error(data)
    assert error.code in (ErrorCode.INVALID_JSON, ErrorCode.INVALID_FRAME)


def test_invalid_subject_error_names_the_subject() -> None:
    error = _decode_error('{"op":"publish","id":3,"subject":"/Stocks","content":"x"}')
    assert error.code is ErrorCode.INVALID_SUBJECT
    assert error.subject == "/Stocks"


def test_duplicate_id_key_uses_the_one_the_struct_sees() -> None:
    # The echoed request id is the one the frame would have been answered with.
    frame = decode_client_frame('{"op":"ping","id":1,"id":2}', LIMITS)
    assert isinstance(frame, Ping)
    error = _decode_error('{"op":"ping","id":1,"id":2,"x":1,"op":"nope"}')
    assert error.request_id == frame.id


# --- subjects-per-request limit ---------------------------------------------------------------


def _subscribe(count: int) -> str:
    items = [{"subject": f"/s/{i}"} for i in range(count)]
    return json.dumps({"op": "subscribe", "id": 11, "subjects": items})


def _unsubscribe(count: int) -> str:
    return json.dumps(
        {"op": "unsubscribe", "id": 12, "subjects": [f"/s/{i}" for i in range(count)]}
    )


@pytest.mark.parametrize(
    ("build", "op"), [(_subscribe, "subscribe"), (_unsubscribe, "unsubscribe")]
)
def test_subjects_per_request_boundary(build: Any, op: str) -> None:
    limits = Limits(max_subjects_per_request=5)
    frame = decode_client_frame(build(5), limits)
    assert isinstance(frame, Subscribe | Unsubscribe)
    assert len(frame.subjects) == 5
    error = _decode_error(build(6), limits)
    assert error.code is ErrorCode.INVALID_FRAME
    assert error.op == op
    assert error.request_id == (11 if op == "subscribe" else 12)
    assert "6" in error.message


def test_default_subjects_per_request_limit() -> None:
    frame = decode_client_frame(_subscribe(1000), LIMITS)
    assert isinstance(frame, Subscribe)
    assert len(frame.subjects) == 1000
    assert _decode_error(_subscribe(1001)).code is ErrorCode.INVALID_FRAME


def test_history_limit_boundary_follows_limits() -> None:
    limits = Limits(max_history=10)
    ok = '{"op":"subscribe","id":1,"subjects":[{"subject":"/a/b","history":10}]}'
    frame = decode_client_frame(ok, limits)
    assert isinstance(frame, Subscribe)
    assert frame.subjects[0].history == 10
    error = _decode_error(ok.replace(":10}", ":11}"), limits)
    assert error.code is ErrorCode.INVALID_FRAME
    assert error.request_id == 1


# --- publish size -----------------------------------------------------------------------------


def _publish(content: str, fields: dict[str, str] | None = None, request_id: int = 3) -> bytes:
    frame: dict[str, Any] = {
        "op": "publish",
        "id": request_id,
        "subject": "/a/b",
        "content": content,
    }
    if fields is not None:
        frame["fields"] = fields
    return json.dumps(frame, ensure_ascii=False).encode("utf-8")


SIZE_CASES = [
    # (name, builder of (content, fields) for a target size)
    pytest.param(lambda n: ("x" * n, None), id="ascii-content"),
    pytest.param(lambda n: ("é" * (n // 2) + "x" * (n % 2), None), id="2-byte-content"),
    pytest.param(lambda n: ("€" * (n // 3) + "x" * (n % 3), None), id="3-byte-content"),
    pytest.param(lambda n: ("😀" * (n // 4) + "x" * (n % 4), None), id="4-byte-content"),
    pytest.param(lambda n: ("", {"k": "v" * (n - 1)}), id="field-value"),
    pytest.param(lambda n: ("", {"k" * (n - 1): "v"}), id="field-name"),
    pytest.param(
        lambda n: ("", {"名" * ((n - 1) // 3): "v" * (1 + (n - 1) % 3)}), id="utf8-field-name"
    ),
    pytest.param(
        lambda n: ("c" * 10, {"a": "1" * 10, "bb": "é" * ((n - 23) // 2) + "x" * ((n - 23) % 2)}),
        id="content-and-fields",
    ),
]


def _content_fields_of_size(build: Any, size: int) -> tuple[str, dict[str, str] | None]:
    content, fields = build(size)
    total = len(content.encode("utf-8")) + sum(
        len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in (fields or {}).items()
    )
    assert total == size  # the builder is exact
    return content, fields


@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
@pytest.mark.parametrize("build", SIZE_CASES)
def test_publish_size_boundary(build: Any, as_bytes: bool) -> None:
    limit = 100
    limits = Limits(max_message_size=limit)
    content, fields = _content_fields_of_size(build, limit)
    data = _publish(content, fields)
    frame = decode_client_frame(data if as_bytes else data.decode("utf-8"), limits)
    assert isinstance(frame, Publish)
    assert publish_size(frame) == limit

    content, fields = _content_fields_of_size(build, limit + 1)
    data = _publish(content, fields)
    error = _decode_error(data if as_bytes else data.decode("utf-8"), limits)
    assert error.code is ErrorCode.MESSAGE_TOO_LARGE
    assert error.request_id == 3
    assert error.op == "publish"
    assert error.subject == "/a/b"
    assert "101" in error.message
    assert "100" in error.message


def test_publish_size_ignores_json_escaping_and_envelope() -> None:
    # 100 bytes of content sent with \u escapes (6 bytes each on the wire) is still 100 bytes.
    limits = Limits(max_message_size=100)
    data = '{"op":"publish","id":3,"subject":"/a/b","content":"' + "\\u0041" * 100 + '"}'
    assert len(data) > 600
    frame = decode_client_frame(data, limits)
    assert isinstance(frame, Publish)
    assert frame.content == "A" * 100


def test_publish_size_default_limit_is_64_kib() -> None:
    assert LIMITS.max_message_size == 65536
    assert isinstance(decode_client_frame(_publish("x" * 65536), LIMITS), Publish)
    assert _decode_error(_publish("x" * 65537)).code is ErrorCode.MESSAGE_TOO_LARGE


def test_publish_size_function() -> None:
    assert publish_size(Publish("/a/b", "")) == 0
    assert publish_size(Publish("/a/b", "abc", {"de": "fgh"})) == 8
    assert publish_size(Publish("/a/b", "日本", {"é": "😀"})) == 6 + 2 + 4
    # the subject and the other frame fields do not count
    assert publish_size(Publish("/" + "x" * 500 + "/y", "a", retained=False, qos="standard")) == 1


def test_invalid_subject_is_reported_before_size() -> None:
    limits = Limits(max_message_size=1)
    error = _decode_error('{"op":"publish","id":3,"subject":"/a","content":"too long"}', limits)
    assert error.code is ErrorCode.INVALID_SUBJECT
    assert error.op == "publish"


# --- HTTP POST /publish bodies: the same Publish, the same checks ---------------------------

NESTED_1000 = (
    b'{"subject": "/a/b", "content": "x", "z": ' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"}"
)


def _body_error(body: bytes, limits: Limits = LIMITS) -> RemoteProtocolError:
    with pytest.raises(RemoteProtocolError) as raised:
        decode_publish_body(body, limits)
    return raised.value


def test_a_publish_body_decodes_to_the_frames_publish() -> None:
    keys = {"subject": "/a/b", "content": "x", "fields": {"k": "v"}, "retained": False}
    keys |= {"qos": "standard", "msg_id": "m-1"}
    body = decode_publish_body(json.dumps(keys).encode(), LIMITS)
    frame = decode_client_frame(json.dumps({"op": "publish", **keys}), LIMITS)
    assert body == frame
    assert body.size == publish_size(frame) == 3


@pytest.mark.parametrize(
    "extra",
    [{"op": "subscribe"}, {"id": "seven"}, {"id": 7}, {"msg_id": None}],
    ids=["op", "id-text", "id-int", "msg_id-null"],
)
def test_a_publish_body_ignores_what_http_never_took(extra: dict[str, Any]) -> None:
    """No op and no request ids over HTTP; a null msg_id is none (as the endpoint always took)."""
    body = decode_publish_body(
        json.dumps({"subject": "/a/b", "content": "x", **extra}).encode(), LIMITS
    )
    assert (body.subject, body.content, body.id, body.message_id) == ("/a/b", "x", None, None)


@pytest.mark.parametrize(
    ("body", "code", "detail"),
    [
        pytest.param(
            NESTED_1000, ErrorCode.INVALID_FRAME, "body: JSON nested too deeply", id="deep"
        ),
        pytest.param(
            b'{"subject": "/a/b", "content": "\xff"}',
            ErrorCode.INVALID_FRAME,
            "body: not valid UTF-8",
            id="utf8",
        ),
        pytest.param(b"{not json", ErrorCode.INVALID_FRAME, "body: JSON is malformed", id="json"),
        pytest.param(
            b"[1]", ErrorCode.INVALID_FRAME, "body: Expected `object`, got `array`", id="array"
        ),
        pytest.param(
            b'{"subject": "/a", "content": "x"}',
            ErrorCode.INVALID_SUBJECT,
            "invalid subject '/a'",
            id="subject",
        ),
        pytest.param(
            b'{"subject": "/a/b", "content": "x", "msg_id": ""}',
            ErrorCode.INVALID_FRAME,
            "'msg_id' must hold",
            id="msg_id",
        ),
        pytest.param(
            b'{"subject": "/a/b", "content": "xx"}',
            ErrorCode.MESSAGE_TOO_LARGE,
            "message of 2 bytes exceeds MaxMessageSize 1",
            id="size",
        ),
    ],
)
def test_a_bad_publish_body_is_refused_with_the_frames_codes(
    body: bytes, code: ErrorCode, detail: str
) -> None:
    error = _body_error(body, Limits(max_message_size=1))
    assert error.code is code
    assert error.message.startswith(detail), error.message


# --- server frames: exact JSON keys -----------------------------------------------------------

SERVER_FRAMES: list[tuple[ServerFrame, dict[str, Any]]] = [
    (
        Welcome("node-1", "0.1.0", "a1b2c3", 30.0, 65536, 10000),
        {
            "type": "welcome",
            "server": "node-1",
            "version": "0.1.0",
            "session": "a1b2c3",
            "keepalive": 30.0,
            "max_message_size": 65536,
            "max_subscriptions": 10000,
        },
    ),
    (
        MessageFrame(
            kind="update",
            subject="/Stocks/NYSE/IBM",
            content="193",
            fields={"volume": "6.62M"},
            epoch="5f2c9a01b3e4",
            seq=12,
            qos="guaranteed",
            retained=True,
            ts=1732280000000,
        ),
        {
            "type": "message",
            "kind": "update",
            "subject": "/Stocks/NYSE/IBM",
            "content": "193",
            "fields": {"volume": "6.62M"},
            "epoch": "5f2c9a01b3e4",
            "seq": 12,
            "qos": "guaranteed",
            "retained": True,
            "ts": 1732280000000,
        },
    ),
    (
        MessageFrame(
            kind="update",
            subject="/a/b",
            content="1",
            fields={},
            epoch="e",
            seq=1,
            qos="guaranteed",
            retained=True,
            ts=1732280000000,
            ingress=1732280000000123,
        ),
        {
            "type": "message",
            "kind": "update",
            "subject": "/a/b",
            "content": "1",
            "fields": {},
            "epoch": "e",
            "seq": 1,
            "qos": "guaranteed",
            "retained": True,
            "ts": 1732280000000,
            "ingress": 1732280000000123,
        },
    ),
    (
        Subscribed("/a/b", "allow", "recovered", "ep", 12, 1),
        {
            "type": "subscribed",
            "subject": "/a/b",
            "status": "allow",
            "recovery": "recovered",
            "epoch": "ep",
            "seq": 12,
            "id": 1,
            "reason": None,
        },
    ),
    (
        Subscribed("/a/b", "deny", "none", None, None, None, "not entitled"),
        {
            "type": "subscribed",
            "subject": "/a/b",
            "status": "deny",
            "recovery": "none",
            "epoch": None,
            "seq": None,
            "id": None,
            "reason": "not entitled",
        },
    ),
    (Unsubscribed("/a/b", 2), {"type": "unsubscribed", "subject": "/a/b", "id": 2}),
    (
        PublishResultFrame("ok", "/a/b", 3, "ep", 13),
        {
            "type": "publish_result",
            "result": "ok",
            "subject": "/a/b",
            "id": 3,
            "epoch": "ep",
            "seq": 13,
            "code": None,
            "reason": None,
        },
    ),
    (
        PublishResultFrame("too_large", "/a/b", None, code="message_too_large", reason="big"),
        {
            "type": "publish_result",
            "result": "too_large",
            "subject": "/a/b",
            "id": None,
            "epoch": None,
            "seq": None,
            "code": "message_too_large",
            "reason": "big",
        },
    ),
    (Pong(4), {"type": "pong", "id": 4}),
    (Pong(4, time=1732280000000123), {"type": "pong", "id": 4, "time": 1732280000000123}),
    (Pong(), {"type": "pong", "id": None}),
    (Keepalive(), {"type": "keepalive"}),
    (
        Error("invalid_json", "not valid JSON", 5, None),
        {
            "type": "error",
            "code": "invalid_json",
            "message": "not valid JSON",
            "id": 5,
            "subject": None,
        },
    ),
]


@pytest.mark.parametrize(
    ("frame", "expected"), SERVER_FRAMES, ids=[f.__struct_config__.tag for f, _ in SERVER_FRAMES]
)
def test_server_frame_round_trip(frame: ServerFrame, expected: dict[str, Any]) -> None:
    data = encode(frame)
    assert isinstance(data, bytes)
    decoded = msgspec.json.decode(data)
    assert decoded == expected
    assert list(decoded) == list(expected)  # the tag comes first, then fields in order
    # and back into the typed union
    assert msgspec.json.decode(data, type=ServerFrame) == frame


def test_every_server_frame_type_is_covered() -> None:
    tags = {frame.__struct_config__.tag for frame, _ in SERVER_FRAMES}
    assert tags == {
        "welcome",
        "message",
        "subscribed",
        "unsubscribed",
        "publish_result",
        "pong",
        "keepalive",
        "error",
    }


def test_encode_is_compact_utf8_json() -> None:
    data = encode(
        MessageFrame(
            "snapshot", "/Börse/ÄÖÜ/日本", "193 €", {"名": "値"}, "e", 1, "guaranteed", True, 0
        )
    )
    text = data.decode("utf-8")
    assert "/Börse/ÄÖÜ/日本" in text  # raw UTF-8, not \u escapes
    assert ": " not in text
    assert ", " not in text
    assert json.loads(text)["fields"] == {"名": "値"}


def test_error_codes_on_the_wire_are_the_documented_strings() -> None:
    assert {code.value for code in ErrorCode} >= {
        "invalid_json",
        "invalid_frame",
        "unknown_op",
        "invalid_subject",
        "message_too_large",
        "too_many_subscriptions",
        "denied",
        "binary_not_supported",
        "internal",
    }
