"""Batching (docs/protocol.md 4.1, spec 5.6): BatchingTime / BatchingMaxSize against a real server.

A batch is one WebSocket text frame holding a JSON array of server frames; a lone frame is a
plain object; batching never reorders. Nothing here measures time: the tests count frames and
messages and check their order and content (``BatchWsClient.raw`` keeps every frame as sent).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from pushgrid.client import Message, PublishStatus, PushgridClient, Status, StatusEvent

from .pgtest import (
    DEFAULT_TIMEOUT,
    BatchWsClient,
    ServerProcess,
    SseStream,
    eventually,
    jolokia_exec,
    publish_burst,
    subscribe_with,
)

MAX_SIZE = 2000


@pytest.fixture(scope="module")
def timed(module_server_factory) -> ServerProcess:
    return module_server_factory(BatchingTime=100, ServerName="it-batch-time")


@pytest.fixture(scope="module")
def sized(module_server_factory) -> ServerProcess:
    return module_server_factory(
        BatchingMaxSize=MAX_SIZE, BatchingTime=5000, ServerName="it-batch-size"
    )


@pytest.fixture(scope="module")
def size_only(module_server_factory) -> ServerProcess:
    return module_server_factory(BatchingMaxSize=1_000_000, ServerName="it-batch-size-only")


@pytest.fixture
async def bconnect() -> AsyncIterator[Callable[..., Awaitable[BatchWsClient]]]:
    clients: list[BatchWsClient] = []

    async def open_client(target: ServerProcess, welcome: bool = True) -> BatchWsClient:
        client = await BatchWsClient.open(target)
        clients.append(client)
        if welcome:
            client.welcome = await client.expect("welcome")
        return client

    yield open_client
    for client in clients:
        await client.close()


def elements(frame: Any) -> list[dict[str, Any]]:
    return frame if isinstance(frame, list) else [frame]


def compact_size(frame: dict[str, Any]) -> int:
    return len(json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode())


async def test_a_burst_arrives_in_arrays_in_order(timed, bconnect, subject):
    s = subject("burst")
    sub = await bconnect(timed)
    assert (await subscribe_with(sub, s))["status"] == "allow"
    assert await sub.sync() == []
    publisher = await bconnect(timed)

    mark = len(sub.raw)
    items = [(f"m{i}", {"i": str(i)}) for i in range(1, 51)]
    results = await publish_burst(publisher, s, items)
    got = await sub.messages(50, s)
    assert [m["content"] for m in got] == [c for c, _ in items], "in publish order"
    assert [m["seq"] for m in got] == [r["seq"] for r in results]
    seqs = [m["seq"] for m in got]
    assert seqs == sorted(set(seqs)), "strictly increasing"

    frames = sub.raw[mark:]
    in_frames = [e for f in frames for e in elements(f) if e.get("type") == "message"]
    assert len(in_frames) == 50, "every message exactly once across the frames"
    assert [e["seq"] for e in in_frames] == [m["seq"] for m in got]
    assert len(frames) < 50, f"{len(frames)} frames for 50 messages: not batched"
    assert any(isinstance(f, list) for f in frames), "at least one JSON array"
    for frame in frames:
        if isinstance(frame, list):
            assert len(frame) >= 2, f"a single frame must be sent as a plain object: {frame}"
    # the publisher's answers were batched too, still in request order
    answers = [
        e
        for f in publisher.raw
        for e in elements(f)
        if e.get("type") == "publish_result" and e.get("subject") == s
    ]
    assert [a["id"] for a in answers] == [r["id"] for r in results]
    assert any(isinstance(f, list) for f in publisher.raw)

    # a single message alone is a plain object
    mark = len(sub.raw)
    alone = await publisher.publish_ok(s, "alone", {"i": "51"})
    (message,) = await sub.messages(1, s)
    assert message["content"] == "alone"
    assert message["seq"] == alone["seq"]
    assert sub.raw[mark:] == [message], "one frame, a plain JSON object"
    assert await sub.sync() == []


async def test_batching_keeps_the_order_of_different_frames(timed, bconnect, subject):
    """subscribed, snapshot, updates and answers of one connection come in protocol order."""
    s = subject("order")
    client = await bconnect(timed)
    await client.publish_ok(s, "first", {"a": "1"})
    request_id = client.next_id()
    # one burst of requests: subscribe, three publishes, ping
    await client.send({"op": "subscribe", "id": request_id, "subjects": [{"subject": s}]})
    results = await publish_burst(client, s, [(f"u{i}", {}) for i in range(1, 4)])
    before = await client.sync()
    kinds = [
        (f["type"], f.get("kind"), f.get("content"))
        for f in before
        if f["type"] in ("subscribed", "message")
    ]
    assert kinds[0] == ("subscribed", None, None)
    assert kinds[1] == ("message", "snapshot", "first")
    assert kinds[2:] == [("message", "update", f"u{i}") for i in range(1, 4)]
    assert [r["seq"] for r in results] == [2, 3, 4]


async def test_max_size_cuts_batches_of_bounded_size(sized, bconnect, subject):
    s = subject("size")
    # BatchingTime is 5 s: the welcome waits in the batch, so do not wait for it
    sub = await bconnect(sized, welcome=False)
    request_id = sub.next_id()
    await sub.send({"op": "subscribe", "id": request_id, "subjects": [{"subject": s}]})

    async def subscribers() -> int:
        answer = await jolokia_exec(sized, "pushgrid:type=Subjects", "subscriberCount", [s])
        return int(answer["value"])

    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEFAULT_TIMEOUT
    while await subscribers() < 1:
        assert loop.time() < deadline, "the subscription never reached the server"
        await asyncio.sleep(0.02)

    # 1 KB messages; the last one alone is above the maximum, so it ends the burst's last batch
    contents = [f"{i:04d}" + "x" * 1020 for i in range(1, 21)] + ["last" + "y" * 2500]
    async with sized.http() as http:
        for content in contents:
            response = await http.post("/publish", json={"subject": s, "content": content})
            assert response.status_code == 200, response.text

    got = await sub.messages(len(contents), s)
    assert [m["content"] for m in got] == contents, "every message, in order"
    assert [m["seq"] for m in got] == list(range(1, len(contents) + 1))
    welcome = await sub.expect("welcome")
    subscribed = await sub.expect("subscribed", id=request_id)
    assert subscribed["status"] == "allow"

    frames = sub.raw
    flat = [e for f in frames for e in elements(f)]
    assert [e["type"] for e in flat[:2]] == ["welcome", "subscribed"], "never reordered"
    assert flat[0] == welcome
    assert [e["content"] for e in flat[2:]] == contents
    assert len(frames) > 1, "the size bound cut the burst into several frames"
    for frame, size in zip(frames, sub.raw_sizes, strict=True):
        parts = elements(frame)
        # the server sends a batch as soon as its total size reaches the maximum: everything
        # before a batch's last frame was below it (payload bytes are less than frame bytes)
        assert sum(compact_size(p) for p in parts[:-1]) < MAX_SIZE, [
            (p["type"], compact_size(p)) for p in parts
        ]
        assert size <= MAX_SIZE + compact_size(parts[-1]) + len(parts) + 1
        if isinstance(frame, list):
            assert len(frame) >= 2


async def test_max_size_alone_bounds_a_batch_by_the_loop_iteration(size_only, bconnect, subject):
    """Only BatchingMaxSize (far above the traffic): a batch ends with the event-loop iteration,
    so nothing waits for the size to be reached."""
    s = subject("loop")
    sub = await bconnect(size_only)
    assert (await subscribe_with(sub, s))["status"] == "allow"
    assert await sub.sync() == []
    publisher = await bconnect(size_only)
    mark = len(sub.raw)
    results = await publish_burst(publisher, s, [(f"q{i}", {}) for i in range(1, 31)])
    got = await sub.messages(30, s)
    assert [m["seq"] for m in got] == [r["seq"] for r in results]
    frames = sub.raw[mark:]
    assert sum(len(elements(f)) for f in frames) == 30
    assert all(len(f) >= 2 for f in frames if isinstance(f, list))
    # a lone message is not held back either
    mark = len(sub.raw)
    await publisher.publish_ok(s, "lone")
    (lone,) = await sub.messages(1, s)
    assert sub.raw[mark:] == [lone]


async def test_python_client_reads_batches(timed, subject):
    s = subject("sdk")
    received: asyncio.Queue[Message] = asyncio.Queue()
    events: list[StatusEvent] = []
    client = PushgridClient(
        [timed.address], on_message=received.put_nowait, on_status=events.append, proxy=None
    )
    try:
        await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
        await client.subscribe(s)
        await eventually(
            lambda: any(e.status is Status.SUBSCRIBE_ALLOW for e in events),
            what=f"SUBSCRIBE_ALLOW in {events}",
        )
        # 50 publishes in flight at once: their answers come back batched too
        results = await asyncio.wait_for(
            asyncio.gather(*(client.publish(s, f"p{i}", {"i": str(i)}) for i in range(1, 51))),
            DEFAULT_TIMEOUT * 2,
        )
        assert [r.result for r in results] == [PublishStatus.OK] * 50, results
        seq_of = {f"p{i}": r.seq or 0 for i, r in zip(range(1, 51), results, strict=True)}
        got = [await asyncio.wait_for(received.get(), DEFAULT_TIMEOUT) for _ in range(50)]
        assert sorted(m.content for m in got) == sorted(seq_of)
        assert [m.seq for m in got] == sorted(seq_of.values()), "every message, in seq order"
        assert all(m.seq == seq_of[m.content] for m in got)
        assert all(not m.conflated for m in got)
        await asyncio.sleep(0.3)
        assert received.empty(), "no duplicates"
        assert [e for e in events if e.status in (Status.DATA_SYNC, Status.DATA_RESYNC)] == []
    finally:
        await asyncio.wait_for(client.close(), DEFAULT_TIMEOUT)


async def test_event_streams_are_never_batched(timed, bconnect, subject):
    s = subject("sse")
    async with SseStream(timed, [s]) as stream:
        assert stream.status == 200
        await stream.expect("subscribed", subject=s)
        publisher = await bconnect(timed)
        await publish_burst(publisher, s, [(f"e{i}", {}) for i in range(1, 21)])
        got = await stream.messages(20, s)
        assert [e.data["content"] for e in got] == [f"e{i}" for i in range(1, 21)]
        for event in stream.events:
            assert isinstance(event.data, dict), f"one JSON frame per event: {event.raw[:200]}"
