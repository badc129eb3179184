"""Malformed client input is answered with the documented code; nobody else notices."""

from __future__ import annotations

import json

import pytest

from .pgtest import eventually

MAX_MESSAGE_SIZE = 1024
HARD_LIMIT = max(1 << 20, 8 * MAX_MESSAGE_SIZE)  # 1 MiB here

# (raw text frame, expected error code, expected echoed id)
BAD_FRAMES = [
    pytest.param('{"op": "publish", "subject": ', "invalid_json", None, id="not-json"),
    pytest.param("hello", "invalid_json", None, id="plain-text"),
    pytest.param("[1, 2, 3]", "invalid_frame", None, id="json-array"),
    pytest.param('"publish"', "invalid_frame", None, id="json-string"),
    pytest.param('{"op": "frobnicate", "id": 7}', "unknown_op", 7, id="unknown-op"),
    pytest.param('{"id": 8, "subject": "/a/b"}', "unknown_op", 8, id="missing-op"),
    pytest.param(
        '{"op": "publish", "id": 9, "subject": 5, "content": "x"}',
        "invalid_frame",
        9,
        id="subject-int",
    ),
    pytest.param(
        '{"op": "publish", "id": 10, "subject": "/a/b", "content": "x", "fields": ["k", "v"]}',
        "invalid_frame",
        10,
        id="fields-list",
    ),
    pytest.param(
        '{"op": "publish", "id": 11, "subject": "/a/b", "content": "x", "fields": {"k": 1}}',
        "invalid_frame",
        11,
        id="field-value-int",
    ),
    pytest.param(
        '{"op": "publish", "id": 12, "subject": "/a/b"}', "invalid_frame", 12, id="missing-content"
    ),
    pytest.param(
        '{"op": "publish", "id": 13, "subject": "/a/b", "content": "x", "qos": "fast"}',
        "invalid_frame",
        13,
        id="bad-qos",
    ),
    pytest.param(
        '{"op": "subscribe", "id": 14, "subjects": [{"subject": 5}]}',
        "invalid_frame",
        14,
        id="subscribe-subject-int",
    ),
    pytest.param(
        '{"op": "subscribe", "id": 15, "subjects": ["/a/b"]}',
        "invalid_frame",
        15,
        id="subscribe-subjects-strings",
    ),
    pytest.param(
        '{"op": "subscribe", "id": 16, "subjects": []}',
        "invalid_frame",
        16,
        id="subscribe-no-subjects",
    ),
    pytest.param('{"op": "subscribe", "id": 17}', "invalid_frame", 17, id="subscribe-missing"),
    pytest.param(
        '{"op": "subscribe", "id": 18, "subjects": [{"subject": "/a/b", "history": -1}]}',
        "invalid_frame",
        18,
        id="negative-history",
    ),
    pytest.param(
        '{"op": "subscribe", "id": 19, "subjects": [{"subject": "/a/b", "recover": {"epoch": 1}}]}',
        "invalid_frame",
        19,
        id="bad-recover",
    ),
    pytest.param(
        '{"op": "unsubscribe", "id": 20, "subjects": "/a/b"}',
        "invalid_frame",
        20,
        id="unsubscribe-not-list",
    ),
]


@pytest.fixture(scope="module")
def limited_server(module_server_factory):
    return module_server_factory(MaxMessageSize=MAX_MESSAGE_SIZE)


@pytest.fixture
async def bystander(limited_server, connect, subject):
    """Another client subscribed to a subject; ``check(bad)`` proves ``bad`` still works and
    that the bystander still receives messages."""
    s = subject("watch")
    watcher = await connect(limited_server)
    await watcher.subscribe(s)
    counter = iter(range(1, 10_000))

    async def check(bad_client):
        n = next(counter)
        result = await bad_client.publish_ok(s, f"alive-{n}")
        (message,) = await watcher.messages(1, s)
        assert (message["content"], message["seq"]) == (f"alive-{n}", result["seq"])

    return check


@pytest.mark.parametrize(("text", "code", "request_id"), BAD_FRAMES)
async def test_bad_frame_gets_error_and_connection_stays_usable(
    limited_server, connect, bystander, text, code, request_id
):
    client = await connect(limited_server)
    await client.send_raw(text)
    error = await client.expect("error")
    assert error["code"] == code, error
    assert error["id"] == request_id
    assert error["message"]
    assert await client.sync() == [], "exactly one answer per bad frame"
    await bystander(client)


async def test_binary_frame_is_not_supported(limited_server, connect, bystander):
    client = await connect(limited_server)
    await client.send_raw(b'{"op": "ping", "id": 1}')
    error = await client.expect("error")
    assert error["code"] == "binary_not_supported"
    assert await client.sync() == []
    await bystander(client)


async def test_oversized_publish_is_too_large(limited_server, connect, bystander, subject):
    client = await connect(limited_server)
    s = subject()
    watcher = await connect(limited_server)
    await watcher.subscribe(s)

    # content + fields count in UTF-8 bytes; exactly MaxMessageSize is fine
    exact = await client.publish(s, "a" * (MAX_MESSAGE_SIZE - 4), {"k": "vv"})
    assert exact["result"] == "ok", exact
    too_big = await client.publish(s, "a" * (MAX_MESSAGE_SIZE + 1))
    assert too_big["type"] == "publish_result"
    assert too_big["result"] == "too_large"
    assert too_big["code"] == "message_too_large"
    assert too_big["subject"] == s
    fields_too_big = await client.publish(s, "a", {"k": "v" * MAX_MESSAGE_SIZE})
    assert fields_too_big["result"] == "too_large"
    # 400 characters, 1200 bytes of UTF-8: too large
    multibyte = await client.publish(s, "日" * 400)
    assert multibyte["result"] == "too_large", "the limit counts bytes, not characters"

    frames = await watcher.sync()
    assert [f["seq"] for f in frames] == [1], "only the accepted message was delivered"
    await bystander(client)

    async with limited_server.http() as http:
        response = await http.post("/publish", json={"subject": s, "content": "b" * 2000})
        assert response.status_code == 413
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["code"] == "message_too_large"


async def test_frame_above_the_hard_limit_is_closed_with_1009(limited_server, connect, bystander):
    victim = await connect(limited_server)
    other = await connect(limited_server)
    await victim.send_raw(
        json.dumps({"op": "publish", "subject": "/a/b", "content": "x" * HARD_LIMIT})
    )
    assert await victim.wait_closed() == 1009
    await bystander(other)


async def test_frame_above_the_hard_limit_in_multibyte_text_is_closed_with_1009(
    limited_server, connect, bystander
):
    """The hard limit is on the frame size in bytes: 3-byte characters count three times."""
    victim = await connect(limited_server)
    other = await connect(limited_server)
    text = json.dumps(
        {"op": "publish", "subject": "/a/b", "content": "日" * (HARD_LIMIT // 3 + 1000)},
        ensure_ascii=False,
    )
    assert len(text.encode("utf-8")) > HARD_LIMIT
    assert len(text) < HARD_LIMIT  # but fewer characters than the limit
    await victim.send_raw(text)
    # closed with 1009, or (wrongly) answered: wait for whichever comes first
    await eventually(lambda: victim.closed.is_set() or bool(victim.buffer), what="an outcome")
    assert victim.closed.is_set(), (
        f"a {len(text.encode())}-byte frame (limit {HARD_LIMIT} bytes) was accepted; "
        f"the server answered {victim.buffer}"
    )
    assert victim.close_code == 1009
    await bystander(other)


async def test_too_many_invalid_frames_in_a_row_closes_with_4005(
    limited_server, connect, bystander
):
    client = await connect(limited_server)
    other = await connect(limited_server)
    for _ in range(100):
        await client.send_raw("nope")
    assert await client.wait_closed() == 4005
    errors = [f for f in client.buffer if f.get("type") == "error"]
    assert len(errors) == 100
    await bystander(other)


async def test_valid_frames_reset_the_invalid_frame_count(limited_server, connect, bystander):
    client = await connect(limited_server)
    for _ in range(3):
        for _ in range(60):
            await client.send_raw("nope")
        await client.sync()  # a valid frame in between
    assert not client.closed.is_set()
    await bystander(client)


async def test_unknown_keys_are_ignored(limited_server, connect, subject):
    client = await connect(limited_server)
    s = subject()
    await client.send(
        {"op": "subscribe", "id": 3, "future": True, "subjects": [{"subject": s, "colour": "blue"}]}
    )
    assert (await client.expect("subscribed", id=3))["status"] == "allow"


# --- HTTP -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[1, 2]", id="array"),
        pytest.param(b'{"subject": "/a/b"}', id="missing-content"),
        pytest.param(b'{"subject": 5, "content": "x"}', id="subject-int"),
        pytest.param(b'{"subject": "/a/b", "content": "x", "fields": ["a"]}', id="fields-list"),
        pytest.param(b'{"subject": "/a/b", "content": "x", "qos": "fast"}', id="bad-qos"),
        pytest.param(b"", id="empty"),
    ],
)
async def test_http_publish_bad_body_is_400_problem(limited_server, body):
    async with limited_server.http() as http:
        response = await http.post(
            "/publish", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert problem["status"] == 400
        assert problem["code"]
        assert problem["detail"]
        assert (await http.get("/health")).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'{"subject": "/a/b", "content": "x", "z": '
            + b'{"a":' * 1000
            + b"1"
            + b"}" * 1000
            + b"}",
            id="unknown-key-nested-1000-deep",
        ),
        pytest.param(b'{"subject": "/a/b", "content": "\xff"}', id="not-utf8"),
    ],
)
async def test_http_publish_body_the_decoder_refuses_is_400_without_a_traceback(
    limited_server, body
):
    """Issue 34 item 2 row 9: these answered 500 and logged a traceback each time."""
    tracebacks = limited_server.log().count("Traceback")
    async with limited_server.http() as http:
        response = await http.post(
            "/publish", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["code"] == "invalid_frame"
        assert (await http.get("/health")).status_code == 200
    assert limited_server.log().count("Traceback") == tracebacks


async def test_http_unknown_path_and_wrong_method(limited_server):
    async with limited_server.http() as http:
        missing = await http.get("/no/such/thing")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/problem+json")
        assert missing.json()["status"] == 404

        for method, path, allow in [
            ("POST", "/snapshot?subject=/a/b", "GET"),
            ("GET", "/publish", "POST"),
            ("DELETE", "/health", "GET"),
        ]:
            response = await http.request(method, path)
            assert response.status_code == 405, (method, path)
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.headers["allow"] == allow


async def test_http_publish_ok_reaches_websocket_subscribers(limited_server, connect, subject):
    s = subject()
    watcher = await connect(limited_server)
    await watcher.subscribe(s)
    async with limited_server.http() as http:
        response = await http.post(
            "/publish", json={"subject": s, "content": "via-http", "fields": {"k": "v"}}
        )
    assert response.status_code == 200
    body = response.json()
    assert body["result"] == "ok"
    assert body["seq"] == 1
    (message,) = await watcher.messages(1, s)
    assert (message["content"], message["fields"], message["epoch"]) == (
        "via-http",
        {"k": "v"},
        body["epoch"],
    )
