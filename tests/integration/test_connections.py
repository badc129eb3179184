"""Connection handling: WebSocket framing details, connection limit, session cleanup, HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket
import struct
import subprocess

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from .pgtest import (
    DEFAULT_TIMEOUT,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    RawWs,
    encode_client_frame,
    parse_server_frames,
)


def _fragments(text: str, parts: int, ping_between: bool) -> bytes:
    """``text`` as ``parts`` masked fragments (text + continuations), a ping after the first."""
    data = text.encode("utf-8")
    size = len(data) // parts + 1
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    out = b""
    for index, chunk in enumerate(chunks):
        opcode = OP_TEXT if index == 0 else 0x0
        fin = 0x80 if index == len(chunks) - 1 else 0
        mask = os.urandom(4)
        if len(chunk) < 126:
            header = struct.pack("!BB", fin | opcode, 0x80 | len(chunk))
        else:
            header = struct.pack("!BBH", fin | opcode, 0x80 | 126, len(chunk))
        out += header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(chunk))
        if index == 0 and ping_between:
            out += encode_client_frame(OP_PING, b"between")
    return out


async def _sessions(srv) -> int:
    async with srv.http() as http:
        return (await http.get("/health")).json()["sessions"]


async def test_fragmented_message_with_a_ping_in_between(server, connect, subject):
    s = subject()
    watcher = await connect(server)
    await watcher.subscribe(s)
    raw = await asyncio.to_thread(RawWs, server.host, server.port)
    frame = json.dumps({"op": "publish", "id": 5, "subject": s, "content": "é" * 300})
    raw.sock.sendall(_fragments(frame, 3, ping_between=True))
    frames = await asyncio.to_thread(raw.read_frames, 3)
    raw.close()
    assert (frames[1][0], frames[1][1]) == (OP_PONG, b"between")
    result = json.loads(frames[2][1])
    assert (result["type"], result["result"], result["id"]) == ("publish_result", "ok", 5)
    (message,) = await watcher.messages(1, s)
    assert message["content"] == "é" * 300


async def test_frames_sent_together_with_the_handshake(server):
    """A client may send its first frames right behind the upgrade request."""

    def run() -> list[tuple[int, bytes]]:
        with socket.create_connection((server.host, server.port), timeout=DEFAULT_TIMEOUT) as sock:
            key = base64.b64encode(os.urandom(16)).decode()
            request = (
                f"GET /ws HTTP/1.1\r\nHost: {server.address}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
            sock.sendall(request + encode_client_frame(OP_TEXT, b'{"op":"ping","id":77}'))
            data = b""
            while True:
                if b"\r\n\r\n" in data:
                    frames, _ = parse_server_frames(data.partition(b"\r\n\r\n")[2])
                    if len(frames) >= 2:
                        return frames
                chunk = sock.recv(65536)
                assert chunk, data
                data += chunk

    frames = await asyncio.to_thread(run)
    texts = [json.loads(p) for op, p in frames if op == OP_TEXT]
    assert [t["type"] for t in texts[:2]] == ["welcome", "pong"]
    assert texts[1]["id"] == 77


async def test_root_path_is_also_a_websocket_endpoint(server):
    async with websockets.connect(
        f"ws://{server.address}/", proxy=None, compression=None, open_timeout=DEFAULT_TIMEOUT
    ) as ws:
        welcome = json.loads(await asyncio.wait_for(ws.recv(), DEFAULT_TIMEOUT))
        assert welcome["type"] == "welcome"


async def test_connection_limit_closes_with_4004(server_factory, connect):
    srv = server_factory(MaxConnections=2)
    first = await connect(srv)
    await connect(srv)
    async with websockets.connect(srv.ws_url, proxy=None, compression=None) as ws:
        try:
            frame = await asyncio.wait_for(ws.recv(), DEFAULT_TIMEOUT)
        except ConnectionClosed:
            frame = None
        assert frame is None, f"got {frame!r} instead of a 4004 close"
        assert ws.close_code == 4004
    # a slot frees up when a client leaves (the server notices asynchronously: retry, bounded)
    await first.close()
    for _ in range(200):
        try:
            third = await connect(srv)
        except AssertionError:  # closed with 4004 again: not released yet
            await asyncio.sleep(0.05)
            continue
        assert third.welcome["type"] == "welcome"
        break
    else:
        raise AssertionError("no slot after a client left")


async def test_sessions_are_released_when_clients_leave(server_factory, connect):
    srv = server_factory()
    clean = await connect(srv)
    await clean.subscribe("/release/a/b")
    aborted = await connect(srv)
    await aborted.subscribe("/release/a/b")
    raw = await asyncio.to_thread(RawWs, srv.host, srv.port)
    assert await _sessions(srv) == 3

    await clean.close()  # close handshake
    aborted.ws.transport.abort()  # TCP reset, no close frame
    raw.close()  # FIN without a close frame
    for _ in range(200):
        if await _sessions(srv) == 0:
            break
        await asyncio.sleep(0.05)
    assert await _sessions(srv) == 0

    # publishing to the subject of the vanished subscribers still works
    publisher = await connect(srv)
    assert (await publisher.publish_ok("/release/a/b", "x"))["seq"] == 1


async def test_http_options_preflight(server):
    async with server.http() as http:
        options = await http.options("/publish")
        assert options.status_code == 204
        assert options.headers["access-control-allow-origin"] == "*"
        assert "POST" in options.headers["access-control-allow-methods"]


async def test_http_head_health(server):
    """HEAD is served like GET without a body (http.handle routes HEAD to the GET handlers)."""
    async with server.http() as http:
        head = await http.head("/health")
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["content-type"].startswith("application/json")
        # and the connection stays usable
        assert (await http.get("/health")).status_code == 200


async def test_http_keep_alive_serves_several_requests_on_one_connection(server, subject):
    s = subject()
    async with server.http(limits=httpx.Limits(max_connections=1)) as http:
        for n in range(1, 6):
            response = await http.post("/publish", json={"subject": s, "content": str(n)})
            assert response.json()["seq"] == n
            assert (await http.get("/snapshot", params={"subject": s})).text == str(n)


async def test_http_body_too_large_is_413(server):
    """A body above the limit (8 x MaxMessageSize, min 1 MiB) is answered 413 problem+json."""
    async with server.http() as http:
        response = await http.post("/publish", content=b"x" * ((1 << 20) + 100))
        assert response.status_code == 413
        assert response.headers["content-type"].startswith("application/problem+json")
        assert (await http.get("/health")).status_code == 200


def test_client_listener_queues_listen_backlog_connections(server_factory):
    """ListenBacklog reaches the kernel: for a listener, ``ss`` shows the backlog as Send-Q."""
    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("ss is not installed (Debian package iproute2: `make system-deps`)")
    srv = server_factory(ListenBacklog=777)
    shown = subprocess.run(
        [ss, "-ltnH", f"sport = :{srv.port}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    rows = [line.split() for line in shown.splitlines() if line.strip()]
    assert rows, shown
    assert [(row[0], int(row[2])) for row in rows] == [("LISTEN", 777)] * len(rows)
