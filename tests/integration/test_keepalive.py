"""Keepalive frames for idle clients, pings, and the keepalive timeout for dead peers."""

from __future__ import annotations

import asyncio
import json

from .pgtest import OP_PING, OP_TEXT, RawWs, eventually

INTERVAL = 0.5
TIMEOUT = 1.5


async def test_idle_client_gets_keepalives_and_dead_peer_is_closed(server_factory, connect):
    srv = server_factory(KeepaliveInterval=INTERVAL, KeepaliveTimeout=TIMEOUT, ShutdownTimeout=1)

    # A live but idle client (the websockets library answers pings by itself).
    idle = await connect(srv)
    assert idle.welcome["keepalive"] == INTERVAL

    # A dead peer: completes the handshake, then never sends anything (no pong, no close).
    dead = await asyncio.to_thread(RawWs, srv.host, srv.port)

    await eventually(lambda: idle.keepalives >= 3, timeout=15, what="3 keepalive frames")
    assert idle.buffer == [], "an idle client gets nothing but keepalives"

    # The server ends the dead connection: a 4002 close frame, then the end of the connection.
    ended = await asyncio.to_thread(dead.read_until_closed, 20)
    assert ended in ("eof", "reset")
    opcodes = {op for op, _ in dead.frames}
    texts = [json.loads(p) for op, p in dead.frames if op == OP_TEXT]
    assert texts[0]["type"] == "welcome"
    assert OP_PING in opcodes, "the server pings a silent client"
    assert any(t["type"] == "keepalive" for t in texts)
    if ended == "eof":
        assert dead.close_code == 4002
    dead.close()

    # The idle client (connected before the dead one, and answering pings) is still connected
    # after the dead one was timed out, and a while longer.
    await asyncio.sleep(TIMEOUT)
    assert not idle.closed.is_set(), f"idle client closed with {idle.close_code}"
    assert await idle.sync() == []
    async with srv.http() as http:
        assert (await http.get("/health")).json()["sessions"] == 1
