"""The write path under a large fan-out (ADR 012, ADR 064): deliveries coalesced over a rest
that lasts while clients still send keep their order and lose nothing, also for subscribers
that stop reading for a while (their bytes wait in the server's write buffer), and a client
that never stops sending does not hold anyone's deliveries back.

Nothing here measures time: the tests count messages and check their order and content. The
rest's own rules (when it lasts, that it ends) are held by tests/unit/test_flusher.py; this
holds what a subscriber sees through the whole write path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from .pgtest import OP_TEXT, RawWs, ServerProcess, WsClient, publish_burst

SUBSCRIBERS = 200  # a fan-out whose flushes cost real time (many writes per tick)
MESSAGES = 200


async def _chatter(client: WsClient, stop: asyncio.Event) -> None:
    """Ping every millisecond without waiting for the pongs until ``stop``: input that keeps
    arriving during every rest (a client waiting for its answers would pause it)."""
    while not stop.is_set():
        await client.send({"op": "ping", "id": client.next_id()})
        await asyncio.sleep(0.001)


def _messages(raw: RawWs, count: int) -> list[dict[str, Any]]:
    """Read until ``count`` message frames arrived (after the welcome and the answer)."""
    while True:
        frames = [json.loads(p) for op, p in raw.frames if op == OP_TEXT]
        messages = [f for f in frames if f.get("type") == "message"]
        if len(messages) >= count:
            return messages
        raw.read_frames(len(raw.frames) + 1)


async def test_coalesced_deliveries_keep_order_with_readers_paused_and_chatter(
    server_factory: Callable[..., ServerProcess], connect, subject
) -> None:
    srv = server_factory(FlushTick=2, ServerName="it-flush-rest")
    topic = subject("rest")
    readers = []
    for n in range(SUBSCRIBERS):
        # Every other reader with a small window: its bytes soon wait in the server's write
        # buffer (backpressure); the others' take every write to the kernel (costly flushes).
        raw = RawWs("127.0.0.1", srv.port, rcvbuf=4096 if n % 2 else None)
        raw.send_json({"op": "subscribe", "id": 1, "subjects": [{"subject": topic}]})
        readers.append(raw)
    for raw in readers:  # every subscription in place before the first publish
        while not any(b'"subscribed"' in p for _, p in raw.frames):
            raw.read_frames(len(raw.frames) + 1)

    chatty, publisher = await connect(srv), await connect(srv)
    stop = asyncio.Event()
    chatter = asyncio.create_task(_chatter(chatty, stop))
    try:
        # Pipelined: many publishes per read, the readers not reading meanwhile.
        await publish_burst(publisher, topic, [(f"m{i}", {"i": str(i)}) for i in range(MESSAGES)])
        # The chatter still runs: a message published now must still arrive.
        await publisher.publish_ok(topic, "last")
        got = await asyncio.to_thread(_messages, readers[0], MESSAGES + 1)
        assert got[-1]["content"] == "last", "held back while a client kept sending"
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await chatter
    for n, raw in enumerate(readers):
        got = await asyncio.to_thread(_messages, raw, MESSAGES + 1)
        contents = [m["content"] for m in got]
        assert contents == [f"m{i}" for i in range(MESSAGES)] + ["last"], f"reader {n}"
        seqs = [m["seq"] for m in got]
        assert seqs == list(range(seqs[0], seqs[0] + MESSAGES + 1)), f"reader {n}: a gap"
        raw.close()
