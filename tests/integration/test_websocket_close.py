"""RFC 6455 conformance on a real server and real sockets (issue 23 item 5).

What a client sends before its close frame is handled and answered, in order, before the close
answer: a publish sent together with a close (one write) is stored and answered, a ping sent
after a request is answered after it. A version other than 13 is answered 426; a message whose
declared length passes the hard frame limit is refused 1009 at its header.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosedError

from .pgtest import (
    DEFAULT_TIMEOUT,
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    RawWs,
    ServerProcess,
    encode_client_frame,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def srv(module_server_factory: Any) -> ServerProcess:
    return module_server_factory(ServerName="it-close", MetaSubjectInterval=0)


def _publish(subject: str, content: str, request_id: int) -> bytes:
    frame = {"op": "publish", "id": request_id, "subject": subject, "content": content}
    return encode_client_frame(OP_TEXT, json.dumps(frame).encode())


def _close(code: int = 1000) -> bytes:
    return encode_client_frame(OP_CLOSE, struct.pack("!H", code))


def _snapshot(srv: ServerProcess, subject: str) -> httpx.Response:
    return httpx.get(
        f"{srv.url}/snapshot",
        params={"subject": subject},
        headers={"accept": "application/json"},
        timeout=DEFAULT_TIMEOUT,
        trust_env=False,
    )


def test_a_publish_and_a_close_in_one_write_are_stored_and_answered(
    srv: ServerProcess, subject: Any
) -> None:
    """Today's bug: 20 of 20 such publishes were lost (the snapshot was 404)."""
    for attempt in range(20):
        name = subject(f"c{attempt}")
        raw = RawWs(srv.host, srv.port)
        try:
            raw.read_frames(1)  # welcome
            raw.sock.sendall(_publish(name, f"last-{attempt}", attempt) + _close())
            assert raw.read_until_closed() == "eof"
            kinds = [opcode for opcode, _ in raw.frames[1:]]
            assert kinds == [OP_TEXT, OP_CLOSE], raw.frames
            result = json.loads(raw.frames[1][1])
            assert (result["type"], result["result"], result["id"]) == (
                "publish_result",
                "ok",
                attempt,
            )
            assert raw.close_code == 1000
        finally:
            raw.close()
        response = _snapshot(srv, name)
        assert response.status_code == 200, response.text
        assert response.json()["content"] == f"last-{attempt}"


async def test_fire_and_forget_publishers_with_the_websockets_library_lose_nothing(
    srv: ServerProcess, subject: Any
) -> None:
    """A publisher that sends and closes at once, never reading the answer (16 of 50 lost)."""
    names = [subject(f"f{i}") for i in range(50)]
    for i, name in enumerate(names):
        async with ws_connect(srv.ws_url, open_timeout=DEFAULT_TIMEOUT, compression=None) as ws:
            frame = {"op": "publish", "id": i, "subject": name, "content": str(i)}
            await ws.send(json.dumps(frame))
    async with httpx.AsyncClient(base_url=srv.url, trust_env=False) as http:
        answers = await asyncio.gather(
            *(http.get("/snapshot", params={"subject": name}) for name in names)
        )
    missing = [
        name for name, answer in zip(names, answers, strict=True) if answer.status_code != 200
    ]
    assert missing == []
    assert [answer.text for answer in answers] == [str(i) for i in range(50)]


def test_a_ping_after_a_request_is_answered_after_it(srv: ServerProcess, subject: Any) -> None:
    raw = RawWs(srv.host, srv.port)
    try:
        raw.read_frames(1)
        name = subject()
        raw.sock.sendall(_publish(name, "v", 1) + encode_client_frame(OP_PING, b"after"))
        frames = raw.read_frames(3)
        assert [opcode for opcode, _ in frames[1:3]] == [OP_TEXT, OP_PONG], frames
        assert json.loads(frames[1][1])["type"] == "publish_result"
        assert frames[2][1] == b"after"
    finally:
        raw.close()


def test_a_ping_and_a_close_behind_requests_come_in_order(srv: ServerProcess, subject: Any) -> None:
    raw = RawWs(srv.host, srv.port)
    try:
        raw.read_frames(1)
        data = b"".join(_publish(subject(f"o{i}"), "v", i) for i in range(5))
        raw.sock.sendall(data + encode_client_frame(OP_PING, b"p") + _close(1001))
        assert raw.read_until_closed() == "eof"
        frames = raw.frames[1:]
        assert [opcode for opcode, _ in frames] == [OP_TEXT] * 5 + [OP_PONG, OP_CLOSE]
        assert [json.loads(payload)["id"] for _, payload in frames[:5]] == list(range(5))
        assert raw.close_code == 1001
    finally:
        raw.close()


# --- the opening handshake -------------------------------------------------------------------


def test_another_websocket_version_is_426_upgrade_required(srv: ServerProcess) -> None:
    request = (
        f"GET /ws HTTP/1.1\r\nHost: {srv.address}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 8\r\n\r\n"
    ).encode()
    with socket.create_connection((srv.host, srv.port), timeout=DEFAULT_TIMEOUT) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0].startswith("HTTP/1.1 426 "), head
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["sec-websocket-version"] == "13"
    assert json.loads(body)["code"] == "bad_handshake"


# --- the hard frame limit -----------------------------------------------------------------------


def _declared(opcode: int, length: int) -> bytes:
    """A final masked frame header declaring ``length`` bytes (the payload is not sent)."""
    return struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length) + b"\x00\x00\x00\x00"


@pytest.mark.parametrize(
    ("opcode", "mib"), [(OP_BINARY, 4), (OP_BINARY, 16), (OP_TEXT, 4)], ids=["bin4", "bin16", "t4"]
)
def test_a_message_above_the_limit_is_closed_1009_before_its_payload(
    srv: ServerProcess, opcode: int, mib: int
) -> None:
    """Refused by the declared length: the client sends the header and 64 KiB of the payload,
    never the rest, and still gets 1009 (the server reads no further)."""
    raw = RawWs(srv.host, srv.port)
    try:
        raw.read_frames(1)
        raw.sock.sendall(_declared(opcode, mib << 20) + b"\x00" * 65536)
        raw.read_until_closed()
        assert raw.close_code == 1009, raw.frames
        assert [op for op, _ in raw.frames[1:]] == [OP_CLOSE]  # no binary_not_supported
    finally:
        raw.close()


def test_a_client_still_sending_after_the_1009_is_not_reset(srv: ServerProcess) -> None:
    """The refused client goes on sending its payload (as any library does: it learns of the
    refusal only when it reads). The server drains it and ends with a clean close, never a
    reset, which can destroy the 1009 before the client reads it (test_malformed saw a
    ConnectionResetError once in a full run; the race is too rare to reproduce on demand, so
    this checks the outcome the lingering close guarantees)."""
    raw = RawWs(srv.host, srv.port)
    try:
        raw.read_frames(1)
        raw.sock.sendall(_declared(OP_BINARY, 16 << 20) + b"\x00" * 65536)
        time.sleep(0.05)  # the refusal has happened: the rest arrives after it
        chunk = b"\x00" * (1 << 20)
        for _ in range(15):  # the rest of the declared payload, more than socket buffers hold
            raw.sock.sendall(chunk)
        ending = raw.read_until_closed()
        assert raw.close_code == 1009, raw.frames
        assert ending == "eof"  # a reset can destroy the close frame before it is read
    finally:
        raw.close()


@pytest.mark.parametrize("mib", [4, 16])
async def test_the_websockets_library_sees_1009_for_a_big_binary_message(
    srv: ServerProcess, mib: int
) -> None:
    """The finding: such a message was read whole and answered binary_not_supported."""
    async with ws_connect(
        srv.ws_url, open_timeout=DEFAULT_TIMEOUT, compression=None, max_size=None
    ) as ws:
        await ws.recv()  # welcome
        with pytest.raises(ConnectionClosedError) as info:
            await _send_then_read(ws, b"\x00" * (mib << 20))
    assert info.value.rcvd is not None
    assert info.value.rcvd.code == 1009


async def _send_then_read(ws: Any, message: bytes) -> None:
    await ws.send(message)
    await asyncio.wait_for(ws.recv(), DEFAULT_TIMEOUT)
