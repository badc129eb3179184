# ruff: noqa: ASYNC109
"""The Python client SDK (client/) against a real server: reconnect, recovery, resync."""

from __future__ import annotations

import asyncio
import signal

import pytest

from pushgrid.client import BackoffPolicy, Message, MessageType, PushgridClient, Status, StatusEvent

from .pgtest import DEFAULT_TIMEOUT, eventually

FAST_RETRY = BackoffPolicy(base=0.05, quick_retries=20, jitter=0.0, cap=0.5, stable_after=0.0)
N = 50


class Recorder:
    """Collects a client's messages and status events."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Message] = asyncio.Queue()
        self.events: list[StatusEvent] = []

    def on_message(self, message: Message) -> None:
        self.queue.put_nowait(message)

    def on_status(self, event: StatusEvent) -> None:
        self.events.append(event)

    async def take(self, count: int, timeout: float = DEFAULT_TIMEOUT) -> list[Message]:
        return [await asyncio.wait_for(self.queue.get(), timeout) for _ in range(count)]

    def statuses(self, status: Status) -> list[StatusEvent]:
        return [e for e in self.events if e.status is status]

    async def wait_status(self, status: Status, count: int = 1, detail: str | None = None) -> None:
        def seen() -> bool:
            found = [e for e in self.statuses(status) if detail is None or e.detail == detail]
            return len(found) >= count

        await eventually(seen, what=f"{count} x {status} {detail or ''}: {self.events}")


@pytest.fixture
async def sdk():
    clients: list[PushgridClient] = []

    def make(servers, recorder: Recorder, **kwargs) -> PushgridClient:
        client = PushgridClient(
            servers,
            on_message=recorder.on_message,
            on_status=recorder.on_status,
            backoff=FAST_RETRY,
            proxy=None,
            **kwargs,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await asyncio.wait_for(client.close(), 10)


async def test_sdk_recovers_exactly_the_missed_messages_after_a_drop(
    server, connect, subject, proxy_factory, sdk
):
    s = subject("IBM")
    proxy = await proxy_factory(server)
    rec = Recorder()
    client = sdk([proxy.address], rec)
    await client.subscribe(s)
    await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
    await rec.wait_status(Status.SUBSCRIBE_ALLOW)
    publisher = await connect(server)
    for i in range(1, 6):
        result = await publisher.publish_ok(s, f"m{i}")
    epoch = result["epoch"]
    first = await rec.take(5)
    assert [(m.type, m.seq) for m in first] == [(MessageType.UPDATE, i) for i in range(1, 6)]
    position = client.position(s)
    assert position is not None
    assert (position.epoch, position.seq) == (epoch, 5)

    # The server-side connection drops; the client cannot get back in for a while.
    proxy.accepting = False
    assert proxy.drop_all() == 1
    await rec.wait_status(Status.SERVER_DOWN)
    for i in range(6, 6 + N):
        await publisher.publish_ok(s, f"m{i}")
    proxy.accepting = True

    await rec.wait_status(Status.DATA_SYNC, detail="recovered")
    assert len(rec.statuses(Status.SERVER_UP)) == 2
    recovered = await rec.take(N)
    assert [m.type for m in recovered] == [MessageType.RECOVERED] * N
    assert [m.seq for m in recovered] == list(range(6, 6 + N))
    assert [m.content for m in recovered] == [f"m{i}" for i in range(6, 6 + N)]
    assert {m.epoch for m in recovered} == {epoch}

    for i in range(6 + N, 11 + N):
        await publisher.publish_ok(s, f"m{i}")
    live = await rec.take(5)
    assert [(m.type, m.seq) for m in live] == [
        (MessageType.UPDATE, i) for i in range(6 + N, 11 + N)
    ]
    # nothing else: the next message is the next publish (no duplicates in between)
    await publisher.publish_ok(s, "sentinel")
    (sentinel,) = await rec.take(1)
    assert (sentinel.content, sentinel.seq) == ("sentinel", 11 + N)
    assert rec.queue.empty()
    assert not rec.statuses(Status.DATA_RESYNC)


async def test_sdk_resyncs_from_the_snapshot_after_a_server_restart(
    server_factory, connect, proxy_factory, sdk
):
    srv = server_factory()
    s = "/sdk/restart/IBM"
    proxy = await proxy_factory(srv)
    rec = Recorder()
    client = sdk([proxy.address], rec)
    await client.subscribe(s)
    await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
    await rec.wait_status(Status.SUBSCRIBE_ALLOW)
    publisher = await connect(srv)
    old = await publisher.publish_ok(s, "193", {"volume": "6.62M"})
    (message,) = await rec.take(1)
    assert (message.epoch, message.seq) == (old["epoch"], 1)

    proxy.accepting = False  # hold the client off until the message is re-published
    await srv.arestart(signal.SIGKILL)
    await rec.wait_status(Status.SERVER_DOWN)
    publisher = await connect(srv)
    new = await publisher.publish_ok(s, "194", {"bid": "1"})
    assert new["epoch"] != old["epoch"]
    proxy.accepting = True

    await rec.wait_status(Status.DATA_RESYNC, detail="new_epoch")
    (snapshot,) = await rec.take(1)
    assert snapshot.type is MessageType.SNAPSHOT
    assert (snapshot.content, snapshot.fields) == ("194", {"bid": "1"})
    assert (snapshot.epoch, snapshot.seq) == (new["epoch"], 1)
    # live messages of the new epoch are accepted
    await publisher.publish_ok(s, "195")
    (update,) = await rec.take(1)
    assert (update.type, update.epoch, update.seq) == (MessageType.UPDATE, new["epoch"], 2)


async def test_sdk_sees_1001_on_shutdown_and_reconnects_at_once(server_factory, sdk):
    srv = server_factory(ShutdownTimeout=2)
    rec = Recorder()
    client = sdk([srv.address], rec)
    await client.subscribe("/sdk/shutdown/a")
    await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
    await srv.astop(signal.SIGTERM)
    await rec.wait_status(Status.SERVER_DOWN)
    down = rec.statuses(Status.SERVER_DOWN)[0]
    assert down.close_code == 1001
    assert down.retry_in == 0.0, "1001: reconnect at once"
    await srv.astart()
    await rec.wait_status(Status.SERVER_UP, count=2)
    result = await client.publish("/sdk/shutdown/a", "back", timeout=DEFAULT_TIMEOUT)
    assert result.ok, result
    (message,) = await rec.take(1)
    assert message.content == "back"


async def test_sdk_publish_results_and_iterator(server, subject):
    s = subject()
    async with PushgridClient([server.address], backoff=FAST_RETRY, proxy=None) as client:
        await client.subscribe(s)
        ok = await client.publish(s, "hello", {"k": "v"})
        assert ok.ok
        assert ok.seq == 1
        assert ok.epoch
        assert client.welcome is not None
        too_large = await client.publish(s, "x" * (client.welcome.max_message_size + 1))
        assert too_large.result.value == "too_large"
        iterator = client.messages()
        message = await asyncio.wait_for(anext(iterator), DEFAULT_TIMEOUT)
        assert (message.subject, message.content, message.fields) == (s, "hello", {"k": "v"})
        # subscribe went out before publish on the same connection: no snapshot, one update
        assert message.type is MessageType.UPDATE
