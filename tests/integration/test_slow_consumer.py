"""A subscriber that stops reading is closed with 4001 without slowing anyone else down."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .pgtest import OP_TEXT, RawWs

COUNT = 5000
BATCH = 100
CONTENT_SIZE = 1024


async def test_slow_consumer_is_disconnected_fast_one_gets_everything(server_factory, connect):
    srv = server_factory(MaxOutboundBufferSize=65536, SlowConsumerCloseTimeout=1)
    s = "/slow/consumer/IBM"

    # The slow one: a plain socket with a small receive buffer that subscribes and stops reading.
    slow = await asyncio.to_thread(RawWs, srv.host, srv.port, rcvbuf=4096)
    slow.send_json({"op": "subscribe", "id": 1, "subjects": [{"subject": s}]})
    await asyncio.to_thread(slow.read_frames, 2)  # welcome + subscribed; then it stops reading
    assert [json.loads(p)["type"] for _, p in slow.frames[:2]] == ["welcome", "subscribed"]

    fast = await connect(srv)
    assert (await fast.subscribe(s))["status"] == "allow"
    publisher = await connect(srv)

    received: list[dict[str, Any]] = []

    async def drain_fast(until: int) -> None:
        while len(received) < until:
            received.extend(await fast.messages(until - len(received), s, timeout=20))

    # Publish in batches, pipelined; the fast subscriber keeps up, the slow one reads nothing.
    payload = "x" * (CONTENT_SIZE - 8)
    for start in range(1, COUNT + 1, BATCH):
        ids = []
        for i in range(start, start + BATCH):
            request_id = publisher.next_id()
            ids.append(request_id)
            await publisher.send(
                {"op": "publish", "id": request_id, "subject": s, "content": f"{i:07d} {payload}"}
            )
        for request_id in ids:
            result = await publisher.expect("publish_result", id=request_id, timeout=20)
            assert result["result"] == "ok", result
        await drain_fast(start + BATCH - 1)

    # The fast subscriber got every message, in order, exactly once.
    assert len(received) == COUNT
    assert [m["seq"] for m in received] == list(range(1, COUNT + 1))
    assert [int(m["content"][:7]) for m in received] == list(range(1, COUNT + 1))
    assert not fast.closed.is_set()

    # The slow one was disconnected: reading now, it finds the end of the connection (4001
    # close frame, or a reset once the server gave up waiting) well before all the messages.
    ended = await asyncio.to_thread(slow.read_until_closed, 30)
    messages = [json.loads(p) for op, p in slow.frames if op == OP_TEXT]
    seqs = [m["seq"] for m in messages if m.get("type") == "message"]
    assert len(seqs) < COUNT, "the slow consumer was not disconnected"
    assert seqs == list(range(1, len(seqs) + 1)), "what it got is an in-order prefix"
    assert ended == "reset" or slow.close_code == 4001, (ended, slow.close_code)
    slow.close()

    # The server is healthy and serves new clients.
    async with srv.http() as http:
        assert (await http.get("/health")).status_code == 200
    late = await connect(srv)
    subscribed = await late.subscribe(s)
    assert subscribed["seq"] == COUNT
    (snapshot,) = await late.messages(1, s)
    assert int(snapshot["content"][:7]) == COUNT
    await publisher.publish_ok(s, "after")
    (update,) = await fast.messages(1, s)
    assert update["content"] == "after"
    assert "slow consumer" in srv.log()
