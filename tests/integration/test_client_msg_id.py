"""The Python client's idempotency key against a scripted WebSocket server: a publish whose
connection is lost before the answer is resent on the next connection with the same msg_id
(the server stores it at most once: docs/protocol.md 5.3)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from pushgrid.client import PushgridClient
from pushgrid.client.backoff import BackoffPolicy
from pushgrid.client.models import PublishStatus

WELCOME = {
    "type": "welcome",
    "server": "fake",
    "version": "0.1.0",
    "session": "s1",
    "keepalive": 30.0,
    "max_message_size": 65536,
    "max_subscriptions": 10000,
}
FAST = BackoffPolicy(base=0.05, quick_retries=20, jitter=0.0, cap=0.5, stable_after=0.0)


async def test_a_publish_lost_with_its_connection_is_resent_with_the_same_msg_id() -> None:
    publishes: list[dict[str, Any]] = []

    async def handle(ws: ServerConnection) -> None:
        await ws.send(json.dumps(WELCOME))
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("op") == "publish":
                break
        publishes.append(frame)
        if len(publishes) == 1:  # perhaps stored; the answer never leaves
            await ws.close(1011, "crashed")
            return
        answer = {"type": "publish_result", "result": "ok", "subject": frame["subject"]}
        answer |= {"id": frame["id"], "epoch": "e1", "seq": 5, "duplicate": True}
        await ws.send(json.dumps(answer))
        await ws.wait_closed()

    async with serve(handle, "127.0.0.1", 0, compression=None, ping_interval=None) as server:
        port = server.sockets[0].getsockname()[1]
        client = PushgridClient([f"127.0.0.1:{port}"], backoff=FAST, proxy=None)
        await client.connect()
        try:
            result = await client.publish("/a/b", "x", timeout=20)
        finally:
            await asyncio.wait_for(client.close(), 10)
    assert (result.result, result.seq, result.duplicate) == (PublishStatus.OK, 5, True)
    first, second = publishes
    assert first["msg_id"] == second["msg_id"] == result.msg_id
    assert first["id"] != second["id"]


async def test_an_invalid_msg_id_is_refused_before_sending() -> None:
    client = PushgridClient(["127.0.0.1:9"], proxy=None)
    try:
        with pytest.raises(ValueError, match="visible ASCII"):
            await client.publish("/a/b", "x", msg_id="a b", timeout=0.1)
    finally:
        await client.close()
