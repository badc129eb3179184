"""Resource limits of issue 13 against a real server: HTTP heads, pending connections and the
request timeout (slowloris), event-stream subjects, snapshot bounds, publish rates, server-owned
meta-subjects, close frames for broken WebSocket framing, the slow consumer's 4001, and the
monitoring port's login back-off. docs/security.md lists every limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import time
from typing import Any

import pytest

from .pgtest import (
    OP_CLOSE,
    OP_TEXT,
    RawWs,
    ServerProcess,
    http_publish,
    monitor_http,
    parse_prometheus,
)

pytestmark = pytest.mark.timeout(120)


def _raw_http(srv: ServerProcess, data: bytes, timeout: float = 10) -> bytes:
    """Send ``data`` on a fresh connection; return what the server answered until it closed
    (or until ``timeout``)."""
    with socket.create_connection((srv.host, srv.port), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and b"connection: close" not in answer.lower():
                    break
        return answer


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@pytest.fixture(scope="module")
def limited(module_server_factory) -> ServerProcess:
    return module_server_factory(
        ServerName="it-limits",
        MaxHttpHeaders=20,
        MaxHttpHeaderSize=4096,
        MaxSubjectsPerStream=5,
        MaxFieldsPerSubject=3,
        MaxSnapshotSize=2048,
        MetaSubjectInterval=0,
    )


# --- HTTP heads ---------------------------------------------------------------------------------

HEAD = "Host: x\r\n"


@pytest.mark.parametrize(
    ("request_text", "status", "code"),
    [
        (f"GET /health HTTP/1.1\r\n{HEAD}X-Big: {'a' * 100_000}\r\n\r\n", 431, "headers_too_large"),
        (
            "GET /health HTTP/1.1\r\n"
            + HEAD
            + "".join(f"X-{i}: v\r\n" for i in range(5000))
            + "\r\n",
            431,
            "headers_too_large",
        ),
        (f"GET /health HTTP/9.9\r\n{HEAD}\r\n", 505, "http_version"),
        (
            f"POST /ws HTTP/1.1\r\n{HEAD}Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            "Content-Length: 0\r\n\r\n",
            405,
            "method_not_allowed",
        ),
    ],
    ids=["100kb-header", "5000-headers", "http-9.9", "post-upgrade"],
)
def test_hostile_request_heads_are_refused(limited, request_text, status, code):
    answer = _raw_http(limited, request_text.encode())
    assert _status(answer) == status, answer[:300]
    body = json.loads(answer.partition(b"\r\n\r\n")[2])
    assert body["code"] == code
    assert _status(_raw_http(limited, f"GET /health HTTP/1.1\r\n{HEAD}\r\n".encode())) == 200


def test_a_big_head_gets_the_same_431_however_the_network_splits_it(limited):
    # Only the first 10 kB arrive: the head outgrows MaxHttpHeaderSize before its end.
    answer = _raw_http(limited, f"GET /health HTTP/1.1\r\n{HEAD}X-Big: {'a' * 10_000}".encode())
    assert _status(answer) == 431, answer[:300]
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["code"] == "headers_too_large"


def test_events_stream_subjects_are_capped(limited):
    many = "&".join(f"subject=/cap/s{i}" for i in range(6))
    answer = _raw_http(limited, f"GET /events?{many} HTTP/1.1\r\n{HEAD}\r\n".encode())
    assert _status(answer) == 400
    assert "MaxSubjectsPerStream" in json.loads(answer.partition(b"\r\n\r\n")[2])["detail"]


# --- pending connections and the request timeout --------------------------------------------------


def test_slowloris_is_cut_and_pending_connections_are_bounded(server_factory):
    srv = server_factory(HttpHeaderTimeout=1, MaxPendingConnectionsPerAddress=4)
    # A client trickling one header byte at a time is cut although every byte is on time.
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    trickle = b"GET /health HTTP/1.1\r\nX-Slow: " + b"a" * 200
    cut = False
    for byte in trickle:
        try:
            sock.sendall(bytes([byte]))
            time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            cut = True
            break
    sock.close()
    assert cut, "a trickling request was never cut"

    # Idle connections count as pending: the fifth from this address gets 503.
    idle = [socket.create_connection((srv.host, srv.port), timeout=5) for _ in range(4)]
    try:
        answer = _raw_http(srv, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(answer) == 503, answer
        assert b"retry-after" in answer.lower()
    finally:
        for conn in idle:
            conn.close()
    # Released when they close: the port serves again.
    deadline = time.monotonic() + 10
    while _status(_raw_http(srv, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")) != 200:
        assert time.monotonic() < deadline, "still refused after the idle connections closed"
        time.sleep(0.1)


async def test_websocket_sessions_do_not_count_as_pending(server_factory, connect):
    srv = server_factory(MaxPendingConnectionsPerAddress=2)
    clients = [await connect(srv) for _ in range(5)]  # each stops being pending on upgrade
    for client in clients:
        await client.sync()


# --- publishes: snapshot bounds, rates, meta-subjects, subjects -----------------------------------


async def test_snapshot_fields_and_size_are_bounded(limited, connect, subject):
    client = await connect(limited)
    s = subject("fields")
    for name in ("a", "b", "c"):
        await client.publish_ok(s, "x", {name: "1"})
    await client.publish_ok(s, "x", {"a": "2"})  # an existing field: fine
    refused = await client.publish(s, "x", {"d": "1"})
    assert (refused["result"], refused["code"]) == ("too_large", "too_many_fields"), refused
    big = subject("size")
    refused = await client.publish(big, "x", {"blob": "y" * 3000})
    assert (refused["result"], refused["code"]) == ("too_large", "snapshot_too_large"), refused
    # The same rules over HTTP.
    async with limited.http() as http:
        response = await http.post(
            "/publish", json={"subject": s, "content": "x", "fields": {"e": "1"}}
        )
    assert response.status_code == 413
    assert response.json()["code"] == "too_many_fields"
    # The snapshot a new subscriber gets holds the accepted fields only.
    late = await connect(limited)
    _, frames = await late.subscribe_all(s)
    snapshot = next(f for f in frames if f.get("kind") == "snapshot")
    assert snapshot["fields"] == {"a": "2", "b": "1", "c": "1"}


async def _burst(client, s: str, count: int) -> list[dict[str, Any]]:
    ids = []
    for i in range(count):
        ids.append(client.next_id())
        await client.send({"op": "publish", "id": ids[-1], "subject": s, "content": str(i)})
    return [await client.expect("publish_result", id=i) for i in ids]


async def test_publish_rate_limit_per_connection(server_factory, connect, subject):
    srv = server_factory(PublishRatePerConnection=1, PublishRatePerAddress=0, PublishBurst=5)
    s = subject("rate")
    for client in [await connect(srv), await connect(srv)]:  # each connection has its bucket
        results = await _burst(client, s, 10)
        assert [r["result"] for r in results[:5]] == ["ok"] * 5  # the burst
        refused = [r for r in results if r["result"] == "rate_limited"]
        assert refused, results
        assert refused[0]["code"] == "rate_limited"
        assert "PublishRatePerConnection" in refused[0]["reason"]


async def test_publish_rate_limit_per_address(server_factory, connect, subject):
    srv = server_factory(PublishRatePerConnection=0, PublishRatePerAddress=0.5, PublishBurst=5)
    s = subject("rate")
    first = await _burst(await connect(srv), s, 5)
    assert [r["result"] for r in first] == ["ok"] * 5
    # Another connection from the same address shares the (now empty) address bucket.
    second = await _burst(await connect(srv), s, 5)
    refused = [r for r in second if r["result"] == "rate_limited"]
    assert len(refused) >= 3, second
    assert "PublishRatePerAddress" in refused[0]["reason"]
    response = await http_publish(srv, s, "over HTTP too")
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limited"
    assert response.headers["retry-after"]


async def test_meta_subjects_and_invisible_characters_are_refused(limited, connect):
    client = await connect(limited)
    refused = await client.publish("/pushgrid/it-limits/overview", "fake")
    assert (refused["result"], refused["code"]) == ("denied", "reserved_subject"), refused
    response = await http_publish(limited, "/pushgrid/it-limits/sessions", "0")
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "reserved_subject"
    for subject in ("/Stocks/NYSE/IBM\u200b", "/Stocks/\u202eMBI/x", "/a/\ufeffb"):
        refused = await client.publish(subject, "x")
        assert refused.get("code") == "invalid_subject", refused
        subscribed = await client.subscribe(subject)
        assert subscribed.get("code") == "invalid_subject", subscribed


# --- WebSocket close codes ------------------------------------------------------------------------


def _masked(first: int, payload: bytes, masked: bool = True) -> bytes:
    key = b"\x01\x02\x03\x04"
    head = struct.pack("!BB", first, (0x80 if masked else 0) | len(payload))
    if not masked:
        return head + payload
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


BROKEN_FRAMES = [
    pytest.param(_masked(0x80 | 0x40 | 0x1, b"{}"), 1002, id="rsv1"),
    pytest.param(_masked(0x80 | 0x3, b"{}"), 1002, id="opcode-3"),
    pytest.param(_masked(0x80 | 0xB, b"{}"), 1002, id="opcode-11"),
    pytest.param(_masked(0x80 | 0x1, b'{"op":"ping"}', masked=False), 1002, id="unmasked"),
    pytest.param(_masked(0x9, b"x"), 1002, id="fragmented-ping"),
    pytest.param(_masked(0x80 | 0x0, b"{}"), 1002, id="stray-continuation"),
    pytest.param(_masked(0x1, b"{") + _masked(0x80 | 0x1, b"}"), 1002, id="text-in-fragment"),
    pytest.param(_masked(0x80 | 0x1, b'{"op":"\xff"}'), 1007, id="invalid-utf8"),
    pytest.param(_masked(0x80 | 0x1, b"\xed\xa0\x80"), 1007, id="utf8-surrogate"),
]


@pytest.mark.parametrize(("data", "code"), BROKEN_FRAMES)
def test_broken_framing_gets_a_close_frame(limited, data, code):
    raw = RawWs(limited.host, limited.port)
    try:
        raw.read_frames(1)  # welcome
        raw.sock.sendall(data)
        assert raw.read_until_closed(10) == "eof"
        assert raw.close_code == code, raw.frames[-2:]
    finally:
        raw.close()


async def test_deep_json_and_unsafe_ids_are_ordinary_errors(limited, connect):
    client = await connect(limited)
    for _ in range(50):  # each is one error frame, never a traceback (conftest checks the log)
        await client.send_raw('{"op":"ping","x":' + "[" * 990 + "]" * 990 + "}")
        error = await client.expect("error")
        assert error["code"] == "invalid_json"
    await client.send_raw('{"op":"ping","id":9007199254740993}')
    error = await client.expect("error")
    assert error["code"] == "invalid_frame"
    assert error["id"] is None  # not echoed: JavaScript could not hold it
    await client.send({"op": "ping", "id": 2**53 - 1})
    assert (await client.expect("pong"))["id"] == 2**53 - 1
    assert len(limited.log().encode()) < 20_000


def test_slow_consumer_receives_4001_before_the_cut(server_factory):
    srv = server_factory(MaxOutboundBufferSize=65536, SlowConsumerCloseTimeout=30)
    s = "/slow/close-frame"
    slow = RawWs(srv.host, srv.port, rcvbuf=4096)
    slow.send_json({"op": "subscribe", "id": 1, "subjects": [{"subject": s}]})
    slow.read_frames(2)
    publisher = RawWs(srv.host, srv.port)
    publisher.read_frames(1)
    for i in range(5000):
        publisher.send_json({"op": "publish", "subject": s, "content": f"{i:05d}" + "x" * 1000})
    publisher.send_json({"op": "ping", "id": 99})
    deadline = time.monotonic() + 60
    while not any(op == OP_TEXT and b'"pong"' in p for op, p in publisher.frames):
        assert time.monotonic() < deadline
        publisher.read_frames(len(publisher.frames) + 1, timeout=30)
    # Read only now: the messages that were buffered, then the 4001 close frame, then the end.
    assert slow.read_until_closed(30) == "eof"
    assert slow.frames[-1][0] == OP_CLOSE
    assert slow.close_code == 4001
    slow.close()
    publisher.close()


# --- monitoring brute force -------------------------------------------------------------------


async def test_monitoring_login_back_off(server_factory):
    srv = server_factory(
        MonitorUsername="ops", MonitorPassword="s3cret-pass", AuthFailuresBeforeBackoff=3
    )
    async with monitor_http(srv) as http:
        assert (await http.get("/stats")).status_code == 401  # no credentials: not a guess
        statuses = [
            (await http.get("/stats", auth=("ops", f"guess-{i}"))).status_code for i in range(6)
        ]
        assert statuses[:3] == [401, 401, 401]
        assert 429 in statuses[3:]
        throttled = await http.get("/stats", auth=("ops", "s3cret-pass"))
        assert throttled.status_code == 429  # even the right password waits out the back-off
        assert int(throttled.headers["retry-after"]) >= 1

        deadline = time.monotonic() + 40
        while (await http.get("/stats", auth=("ops", "s3cret-pass"))).status_code != 200:
            assert time.monotonic() < deadline, "no login after the back-off"
            await asyncio.sleep(0.2)
        metrics = await http.get("/metrics", auth=("ops", "s3cret-pass"))
    samples = parse_prometheus(metrics.text)
    assert samples[("pushgrid_auth_failures_total", ())] >= 3
    assert samples[("pushgrid_auth_throttled_total", ())] >= 1


async def test_one_request_queues_at_most_the_outbound_buffer(server_factory, connect, subject):
    """A subscribe whose opening messages exceed MaxOutboundBufferSize is a slow consumer
    (4001; the server stops queueing at the limit, connection.send); a smaller one is served
    whole and other clients go on."""
    srv = server_factory(MaxOutboundBufferSize=65536)
    s = subject("history")
    publisher = await connect(srv)
    for i in range(150):
        await publisher.publish_ok(s, f"{i:04d}" + "h" * 1000)
    small = await connect(srv)
    status, frames = await small.subscribe_all(s, history=40)
    assert status["status"] == "allow"
    assert len([f for f in frames if f.get("kind") == "historical"]) == 40
    greedy = await connect(srv)
    await greedy.send({"op": "subscribe", "id": 1, "subjects": [{"subject": s, "history": 150}]})
    assert await greedy.wait_closed() == 4001
    assert (await publisher.publish(s, "still serving"))["result"] == "ok"
